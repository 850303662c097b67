"""The Ask page's global recipe in Chromium: a map-reduce answer over *A Christmas
Carol*'s community reports (the real gpt-3.5-turbo reports, and nano-graphrag's real map
and reduce replies replayed from tests/unit/communities/carol_global.jsonl; see
tests/carol_global.py for the attribution), its communities listed and cited, each
[C1] a link to its community's page; offline, the reports' own points, each cited."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from carol_global import QUESTION, REDUCE_REPLY, load_carol
from live_server import LiveServer
from playwright.sync_api import Page, expect
from ui_browser import Watched

from kgsearch import Engine, connect
from kgsearch.api.app import create_app
from kgsearch.config import LLMSettings
from kgsearch.embed import create_embedder
from kgsearch.model import Kind

CASSETTE = Path(__file__).parent.parent / "unit" / "communities" / "carol_global.jsonl"


@pytest.fixture(scope="module")
def carol_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("carol-ui") / "carol.db"
    engine = Engine(
        connect(str(path)),
        embedder=create_embedder("bundled"),
        project="carol",
        llm_settings=LLMSettings(replay=CASSETTE),
    )
    load_carol(engine)
    engine.embed_pending(kinds=[Kind.COMMUNITY])
    server = LiveServer(create_app(engine, keys=False))
    url = server.start()
    yield url
    server.stop()
    engine.close()


def ask_global(page: Page, url: str, model: bool) -> None:
    page.goto(url + "/ui/#/ask")
    page.wait_for_selector("#question")
    page.select_option("#ask-recipe", "global")
    if not model:
        page.uncheck("#use-model")
    page.fill("#question", QUESTION)
    page.press("#question", "Enter")
    expect(page.locator("#answer-how")).to_be_visible(timeout=60_000)


def test_a_global_answer_lists_the_communities_its_points_came_from(
    tab: Watched, carol_server: str
) -> None:
    page = tab.page
    ask_global(page, carol_server, model=True)
    # the reply's markdown headings and bold runs are shown as such, not as "####"
    shown = re.sub(r"(?m)^\s{0,3}#{1,6}\s+(.*?)[\s#]*$", r"\1", REDUCE_REPLY)
    expect(page.locator("#answer-text")).to_have_text(shown.replace("**", ""))
    headings = re.findall(r"(?m)^#{1,6}\s+(.*?)\s*$", REDUCE_REPLY)
    assert headings, "the recorded reply has markdown headings"
    expect(page.locator("#answer-text .answer-heading")).to_have_text(headings)
    expect(page.locator("#answer-text")).not_to_contain_text("##")
    expect(page.locator("#answer-how")).to_contain_text(
        "Global search over 10 community reports: 1 map call, 5 key points, one reduce."
    )
    expect(page.locator("#answer-how")).to_contain_text("openai:gpt-3.5-turbo (from the cache)")
    cited = page.locator("#references li.cited")
    expect(cited).to_have_count(3)
    expect(cited.first).to_contain_text("Scrooge and Various Characters in A Christmas Carol")
    expect(page.locator("#references .kind-community").first).to_have_text("community")
    expect(page.locator("#answer-rest .warning", has_text="cited no report")).to_have_count(1)
    page.locator("#context summary").click()
    expect(page.locator("#context pre")).to_contain_text("(importance 90)")
    tab.shot("ask-global", doc=True)
    page.locator("#references li.cited a.cite").first.click()
    expect(page.locator("body")).to_contain_text("Scrooge and Various Characters")
    assert [e for e in tab.errors if "404" not in e] == []


def test_offline_the_global_answer_cites_each_point_with_a_link_to_its_community(
    tab: Watched, carol_server: str
) -> None:
    page = tab.page
    ask_global(page, carol_server, model=False)
    expect(page.locator("#answer-how")).to_contain_text(
        "Global search over 10 community reports: their most important points, no model asked."
    )
    links = page.locator("#answer-text a.cite-community")
    expect(links.first).to_be_visible()
    assert links.count() >= 5
    tab.shot("ask-global-offline")
    title = links.first.get_attribute("title") or ""
    links.first.click()
    expect(page.locator("body")).to_contain_text(title.split(" (level")[0])
