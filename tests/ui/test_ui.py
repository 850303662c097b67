"""The web UI in a real headless Chromium against a real server and SQLite store:
search with explain, object pages, the graph view, ingest with spaCy extraction,
sign-in errors, hostile data rendered as text, and project isolation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from live_server import LiveServer
from playwright.sync_api import Browser, Page, expect
from ui_browser import (
    HOSTILE_NAME,
    HOSTILE_TEXT,
    LEAVES,
    SUB_LEAVES,
    Site,
    Watched,
    open_page,
    sign_in,
)

from kgsearch import Engine, ObjectIn, ObjectRef, RelationshipIn, connect
from kgsearch.api.app import create_app
from kgsearch.testing import FakeEmbedder

NO_INJECTED = "() => document.querySelectorAll('#page script, #page img, #page iframe').length"


def unexpected_errors(tab: Watched) -> list[str]:
    """Console errors other than the expected 401 before sign-in and the 404 of an
    absent communities route."""
    return [e for e in tab.errors if "401" not in e and "404" not in e]


def search(page: Page, query: str) -> None:
    page.fill("#q", query)
    page.press("#q", "Enter")
    page.wait_for_selector("#results")


def test_search_shows_results_and_the_explain_panel(tab: Watched, site: Site) -> None:
    page = sign_in(tab, site)
    search(page, "Ada Lovelace")
    cards = page.locator("#results .card")
    expect(cards.first).to_be_visible()
    assert cards.count() >= 2
    ada = page.locator(f".card[data-id='{site.ids['ada']}']")
    expect(ada.locator("h3")).to_have_text("Ada Lovelace")
    expect(ada.locator(".leg").first).to_contain_text("objects:")
    expect(page.locator(".latency")).to_contain_text("ms on the server")
    explain = page.locator("#explain")
    expect(explain).to_be_visible()
    expect(explain.locator(".leg-table h4").first).to_be_visible()
    # each leg with its own time
    expect(explain.locator(".leg-table[data-leg='objects:vector'] h4")).to_contain_text(" ms")
    expect(explain.locator(".fused li").first).to_be_visible()
    expect(explain).to_contain_text("Time per stage")
    tab.shot("search")
    assert unexpected_errors(tab) == []


def test_a_click_opens_the_object(tab: Watched, site: Site) -> None:
    page = sign_in(tab, site)
    search(page, "Ada Lovelace")
    page.locator(f".card[data-id='{site.ids['ada']}'] h3 a").click()
    expect(page.locator("#object-name")).to_contain_text("Ada Lovelace")
    expect(page.locator("#props")).to_contain_text("analyst")
    rels = page.locator("#rels tbody tr")
    expect(rels).to_have_count(2)
    expect(page.locator("#rels")).to_contain_text("WORKS_FOR")
    expect(page.locator("#rels")).to_contain_text("Acme Corp")
    expect(page.locator("#embedding")).to_contain_text("embedded")
    expect(page.locator("#embedded-text")).to_contain_text("Ada Lovelace")
    tab.shot("object")
    page.locator("#rels a", has_text="Acme Corp").click()
    expect(page.locator("#object-name")).to_contain_text("Acme Corp")


def graph_ready(page: Page) -> dict[str, str]:
    page.wait_for_selector("#graph[data-ready='1']", timeout=20_000)
    data: dict[str, str] = page.eval_on_selector("#graph", "e => ({...e.dataset})")
    return data


def click_node(page: Page, node: str) -> None:
    """Click a node where sigma drew it."""
    x, y = page.evaluate(
        """id => { const v = window.KG.graphView;
                   const p = v.renderer.graphToViewport(v.graph.getNodeAttributes(id));
                   const box = v.container.getBoundingClientRect();
                   return [box.left + p.x, box.top + p.y]; }""",
        node,
    )
    page.mouse.click(x, y)


def test_the_graph_renders_and_expands_on_click(tab: Watched, site: Site) -> None:
    page = sign_in(tab, site, hash=f"#/graph/{site.ids['hub']}")
    data = graph_ready(page)
    assert data["nodes"] == str(1 + LEAVES)
    assert data["edges"] == str(LEAVES)
    expect(page.locator("#legend li")).to_have_count(2)
    tab.shot("graph")
    click_node(page, site.ids["leaf0"])
    expect(page.locator("#graph")).to_have_attribute("data-nodes", str(1 + LEAVES + SUB_LEAVES))
    expect(page.locator("#graph-info h2")).to_have_text("Leaf 0")
    expect(page.locator("#legend li")).to_have_count(3)
    # untick a type: its nodes are hidden
    page.locator("#legend input[data-type='Leaf']").uncheck()
    expect(page.locator("#graph")).to_have_attribute("data-visible", str(1 + SUB_LEAVES))
    tab.shot("graph-expanded")
    assert unexpected_errors(tab) == []


LABELS_FIT = """() => { const v = window.KG.graphView; const width = v.container.clientWidth;
    const ctx = document.createElement('canvas').getContext('2d'); ctx.font = '14px Arial';
    const out = [];
    v.graph.forEachNode((id, a) => { const p = v.renderer.graphToViewport(a);
      const right = p.x + v.renderer.getNodeDisplayData(id).size + ctx.measureText(a.label).width;
      out.push([a.label, Math.round(p.x), Math.round(right), width]); });
    return out; }"""


def test_a_two_node_graph_keeps_its_labels_inside_the_canvas(tab: Watched, site: Site) -> None:
    page = sign_in(tab, site, hash=f"#/graph/{site.ids['acme']}")
    data = graph_ready(page)
    assert data["nodes"] == "2"
    labels = page.evaluate(LABELS_FIT)
    assert sorted(label for label, *_ in labels) == ["Acme Corp", "Ada Lovelace"]
    for label, x, right, width in labels:
        assert x > 0 and right < width, (label, x, right, width)
    tab.shot("graph-two-nodes")


def test_the_graph_colours_by_community_when_the_project_has_communities(
    tab: Watched, site: Site
) -> None:
    engine = site.engine
    if "gamma" not in site.keys:
        # two triangles joined by one edge: two communities
        keys = ["a1", "a2", "a3", "b1", "b2", "b3"]
        engine.add_objects(
            [ObjectIn(type="Node", key=k, properties={"name": k.upper()}) for k in keys],
            project="gamma",
        )
        pairs = [("a1", "a2"), ("a2", "a3"), ("a3", "a1"), ("b1", "b2"), ("b2", "b3")]
        pairs += [("b3", "b1"), ("a1", "b1")]
        engine.add_relationships(
            [
                RelationshipIn.model_validate(
                    {
                        "type": "LINKS",
                        "source": {"type": "Node", "key": s},
                        "target": {"type": "Node", "key": t},
                    }
                )
                for s, t in pairs
            ],
            project="gamma",
        )
        engine.build_communities(project="gamma", max_cluster_size=3)
        site.keys["gamma"] = engine.create_api_key("gamma", ["read"])[0]
    seed = engine.store.resolve("gamma", [ObjectRef(type="Node", key="a1")])
    a1 = next(iter(seed.values())).id
    page = sign_in(tab, site, project="gamma", hash=f"#/graph/{a1}?depth=2")
    assert graph_ready(page)["nodes"] == "6"
    page.select_option("#colour-by", "community")
    expect(page.locator("#graph")).to_have_attribute("data-colour-by", "community")
    colours = page.evaluate(
        """() => { const out = {}; window.KG.graphView.graph.forEachNode(
                     (id, a) => { out[a.label] = [a.color, a.community]; }); return out; }"""
    )
    groups: dict[str, set[str]] = {}
    for colour, community in colours.values():
        assert community is not None
        groups.setdefault(community, set()).add(colour)
    # one colour per community, and the communities apart
    assert len(groups) >= 2 and all(len(c) == 1 for c in groups.values())
    assert len({next(iter(c)) for c in groups.values()}) == len(groups)
    tab.shot("graph-communities")
    page.select_option("#colour-by", "type")
    by_type = page.evaluate(
        "() => new Set(window.KG.graphView.graph.mapNodes((id, a) => a.color)).size"
    )
    assert by_type == 1
    assert unexpected_errors(tab) == []


def test_an_uploaded_document_is_extracted_and_becomes_searchable(
    tab: Watched, site: Site, tmp_path: Path
) -> None:
    doc = tmp_path / "curie.txt"
    doc.write_text(
        "Marie Curie worked at the University of Paris with Pierre Curie.\n\n"
        "Marie Curie was born in Warsaw and won the Nobel Prize in Physics."
    )
    page = sign_in(tab, site, hash="#/ingest")
    page.set_input_files("#ingest-files", str(doc))
    page.select_option("#extractor", "spacy")
    page.click("#ingest-form button[type=submit]")
    expect(page.locator("#job-state")).to_have_text("done", timeout=60_000)
    expect(page.locator("#extracted")).to_contain_text("Extracted 1 of 1 chunk")
    expect(page.locator("[data-counter='entities']")).not_to_have_text("0")
    tab.shot("ingest")
    page.goto(site.url + "/ui/#/search")
    page.wait_for_selector("#q")
    search(page, "Marie Curie")
    expect(page.locator("#results .card h3", has_text="Marie Curie").first).to_be_visible()


def test_a_bad_key_gets_a_clear_message(tab: Watched, site: Site) -> None:
    page = tab.page
    page.goto(site.url + "/ui/")
    expect(page.locator("#login")).to_be_visible()
    page.fill("#login-key", "kgs_000000000000_not-a-real-secret")
    page.press("#login-key", "Enter")
    message = page.locator("#login-error")
    expect(message).to_be_visible()
    expect(message).to_contain_text("The API key was not accepted")
    expect(page.locator("#page")).to_be_empty()
    tab.shot("bad-key")


def test_hostile_data_renders_as_text_and_no_script_runs(tab: Watched, site: Site) -> None:
    page = sign_in(tab, site)
    search(page, "Eve met Ada")
    eve = page.locator(f".card[data-id='{site.ids['eve']}']")
    expect(eve.locator("h3")).to_have_text(HOSTILE_NAME)
    expect(page.locator(".card[data-kind='text'] .snippet").first).to_have_text(HOSTILE_TEXT)
    assert page.evaluate(NO_INJECTED) == 0
    eve.locator("h3 a").click()
    expect(page.locator("#object-name")).to_contain_text(HOSTILE_NAME)
    expect(page.locator("#props")).to_contain_text("<script>window.__pwned=1</script>")
    expect(page.locator("#provenance .description")).to_contain_text("<iframe src=javascript:")
    expect(page.locator("#mentions .chunk")).to_have_text(HOSTILE_TEXT)
    expect(page.locator("#rels")).to_contain_text("<iframe")
    page.goto(site.url + f"/ui/#/graph/{site.ids['eve']}")
    graph_ready(page)
    expect(page.locator("#legend")).to_contain_text("Person")
    click_node(page, site.ids["eve"])
    expect(page.locator("#graph-info h2")).to_have_text(HOSTILE_NAME)
    tab.shot("hostile")
    assert page.evaluate(NO_INJECTED) == 0
    assert page.evaluate("() => window.__pwned") is None
    assert tab.dialogs == []


def test_one_projects_key_never_shows_another_projects_data(tab: Watched, site: Site) -> None:
    page = sign_in(tab, site, project="beta")
    search(page, "Ada")
    expect(page.locator("#results .card h3", has_text="Beta Vault Ada")).to_be_visible()
    assert page.locator("#results").inner_text().count("Lovelace") == 0
    page.goto(site.url + f"/ui/#/object/{site.ids['ada']}")
    expect(page.locator("#page .error")).to_contain_text("not found")
    page.goto(site.url + f"/ui/#/graph/{site.ids['hub']}")
    expect(page.locator("#page .error")).to_contain_text("404")
    page.goto(site.url + "/ui/#/status")
    expect(page.locator("#counts")).to_contain_text("Project beta")
    expect(page.locator("#counts")).not_to_contain_text("Leaf")
    # the alpha key, in a fresh tab, sees alpha and not beta's secret
    other = open_page(page.context.browser)  # type: ignore[arg-type]
    try:
        alpha = sign_in(other, site)
        search(alpha, "Beta Vault Ada")
        assert alpha.locator("#results").inner_text().count("Beta Vault") == 0
    finally:
        other.page.context.close()


def test_narrow_window_has_no_sideways_scroll(browser: Browser, site: Site) -> None:
    tab = open_page(browser)
    try:
        page = tab.page
        page.set_viewport_size({"width": 420, "height": 800})
        sign_in(tab, site)
        search(page, "Ada Lovelace")
        page.wait_for_selector("#explain")
        widths = {"search": page.evaluate("() => document.documentElement.scrollWidth")}
        tab.shot("search-narrow")
        page.goto(site.url + f"/ui/#/object/{site.ids['ada']}")
        page.wait_for_selector("#rels")
        widths["object"] = page.evaluate("() => document.documentElement.scrollWidth")
        page.goto(site.url + f"/ui/#/graph/{site.ids['hub']}")
        page.wait_for_selector("#graph[data-ready='1']")
        widths["graph"] = page.evaluate("() => document.documentElement.scrollWidth")
        tab.shot("graph-narrow")
        assert widths == {"search": 420, "object": 420, "graph": 420}
    finally:
        tab.page.context.close()


def test_keyboard_reaches_the_search_box_and_results(tab: Watched, site: Site) -> None:
    page = sign_in(tab, site)
    page.evaluate("() => document.activeElement.blur()")
    page.keyboard.press("/")
    assert page.evaluate("() => document.activeElement.id") == "q"
    page.keyboard.type("Acme")
    page.keyboard.press("Enter")
    page.wait_for_selector("#results .card")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    focused = page.evaluate("() => document.activeElement.tagName")
    assert focused in {"SELECT", "INPUT", "BUTTON", "A"}


@pytest.fixture
def keyless(tmp_path: Path) -> Iterator[str]:
    engine = Engine(connect(str(tmp_path / "keyless.db")), embedder=FakeEmbedder(32))
    server = LiveServer(create_app(engine, keys=False))
    yield server.start()
    server.stop()
    engine.close()


def test_keyless_mode_opens_directly(tab: Watched, keyless: str) -> None:
    page = tab.page
    page.goto(keyless + "/ui/")
    expect(page.locator("#who")).to_contain_text("keyless")
    expect(page.locator("#login")).to_be_hidden()
    expect(page.locator("#logout")).to_be_hidden()
    search(page, "anything")
    expect(page.locator("#results")).to_contain_text("No results.")
    assert unexpected_errors(tab) == []


def test_the_object_page_lists_communities_when_the_server_has_them(
    tab: Watched, site: Site
) -> None:
    page = tab.page
    membership = {
        "object_id": site.ids["ada"],
        "communities": [
            {"id": "c0-aa", "level": 0, "size": 12, "title": "<script>window.__pwned=1</script>"},
            {"id": "c1-bb", "level": 1, "size": 3, "title": "Analysts"},
        ],
    }
    page.route("**/api/graph/objects/*/communities", lambda route: route.fulfill(json=membership))
    sign_in(tab, site, hash=f"#/object/{site.ids['ada']}")
    panel = page.locator("#communities")
    expect(panel.locator("li")).to_have_count(2)
    expect(panel).to_contain_text("<script>window.__pwned=1</script>")
    expect(panel).to_contain_text("level 1 · 3 members")
    assert page.evaluate(NO_INJECTED) == 0


def test_the_communities_panel_is_hidden_without_the_route(tab: Watched, site: Site) -> None:
    page = sign_in(tab, site, hash=f"#/object/{site.ids['ada']}")
    expect(page.locator("#embedding")).to_be_visible()
    page.wait_for_load_state("networkidle")
    expect(page.locator("#communities")).to_have_count(0)
