"""The Communities page in Chromium: the build's levels and sizes, the communities of
a level with their reports, one community's report, members and subgraph, and
building communities from the page. The graph is two triangles joined by one edge
(two communities), on a keyless server over a fresh SQLite store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from live_server import LiveServer
from playwright.sync_api import Page, expect
from ui_browser import Watched

from kgsearch import Engine, ObjectIn, RelationshipIn, connect
from kgsearch.api.app import create_app
from kgsearch.testing import FakeEmbedder

PEOPLE = {
    "a1": "Ada Lovelace",
    "a2": "Charles Babbage",
    "a3": "Mary Somerville",
    "b1": "Alan Turing",
    "b2": "Joan Clarke",
    "b3": "Dilly Knox",
}
PAIRS = [("a1", "a2"), ("a2", "a3"), ("a3", "a1"), ("b1", "b2"), ("b2", "b3"), ("b3", "b1")]
PAIRS += [("a1", "b1")]
TRIANGLES = [{PEOPLE["a1"], PEOPLE["a2"], PEOPLE["a3"]}, {PEOPLE["b1"], PEOPLE["b2"], PEOPLE["b3"]}]


def two_triangles(engine: Engine) -> None:
    engine.add_objects(
        [ObjectIn(type="Person", key=k, properties={"name": n}) for k, n in PEOPLE.items()]
    )
    engine.add_relationships(
        [
            RelationshipIn.model_validate(
                {
                    "type": "KNEW",
                    "source": {"type": "Person", "key": s},
                    "target": {"type": "Person", "key": t},
                }
            )
            for s, t in PAIRS
        ]
    )
    engine.embed_pending()


def server(path: str, *, build: bool) -> tuple[LiveServer, Engine, str]:
    engine = Engine(connect(path), embedder=FakeEmbedder(32))
    two_triangles(engine)
    if build:
        engine.build_communities(max_cluster_size=3)
    live = LiveServer(create_app(engine, keys=False))
    return live, engine, live.start()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    live, engine, url = server(str(tmp_path_factory.mktemp("c") / "c.db"), build=True)
    yield url
    live.stop()
    engine.close()


@pytest.fixture
def unbuilt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    live, engine, url = server(str(tmp_path_factory.mktemp("c") / "u.db"), build=False)
    yield url
    live.stop()
    engine.close()


def open_communities(page: Page, url: str) -> None:
    page.goto(url + "/ui/#/communities")
    expect(page.locator("#community-table tbody tr").first).to_be_visible()


def test_the_communities_of_a_level_are_listed_with_their_reports(tab: Watched, built: str) -> None:
    page = tab.page
    open_communities(page, built)
    expect(page.locator("#build-summary")).to_contain_text("modularity")
    expect(page.locator("#levels a")).to_have_text(["level 0 · 2 (coarsest)"])
    rows = page.locator("#community-table tbody tr")
    expect(rows).to_have_count(2)
    titles = [set(t.split(", ")) for t in rows.locator(".community-title").all_inner_texts()]
    assert sorted(titles, key=sorted) == sorted(TRIANGLES, key=sorted)
    expect(rows.first.locator("td").nth(1)).to_have_text("3")
    tab.shot("communities", doc=True)


def test_a_community_shows_its_report_members_and_subgraph(tab: Watched, built: str) -> None:
    page = tab.page
    open_communities(page, built)
    page.locator("#community-table .community-title").first.click()
    expect(page.locator("#community-title")).not_to_be_empty()
    expect(page.locator("#report-summary")).to_contain_text("A community of 3 objects")
    members = page.locator("#members .member-list a")
    expect(members).to_have_count(3)
    expect(page.locator(".findings li").first).to_be_visible()
    names = set(members.all_inner_texts())
    assert names in TRIANGLES
    tab.shot("community", doc=True)
    page.click("#community-graph")
    page.wait_for_selector("#graph[data-ready='1']", timeout=20_000)
    expect(page.locator("#graph")).to_have_attribute("data-nodes", "3")
    expect(page.locator("#graph")).to_have_attribute("data-edges", "3")
    expect(page.locator("#graph-community")).to_contain_text("Subgraph of the community")
    tab.shot("community-graph", doc=True)
    labels = page.evaluate("() => window.KG.graphView.graph.mapNodes((id, a) => a.label)")
    assert set(labels) == names


def test_communities_are_built_from_the_page(tab: Watched, unbuilt: str) -> None:
    page = tab.page
    page.goto(unbuilt + "/ui/#/communities")
    expect(page.locator("#no-communities")).to_be_visible()
    page.click("#build")
    expect(page.locator("#community-table tbody tr")).to_have_count(2, timeout=30_000)
    expect(page.locator("#toast")).to_contain_text("Built 2 communities")
