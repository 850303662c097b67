"""The README's screenshot, made on real data: the MetaQA movie sample
(data/sample/metaqa-movies.jsonl) on a real server, searched in Chromium.

The picture lands in tests/ui/artifacts/readme-search.png; docs/img/ui-search.png is
a committed copy of it. The objects are embedded with the real bundled model (the
7,155 of them take seconds; relationships stay pending, so they are found by BM25),
so the scores and legs in the picture are the ones a user sees.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from live_server import LiveServer
from playwright.sync_api import Browser, expect
from ui_browser import Watched, open_page

from kgsearch import Engine, Kind, connect
from kgsearch.api.app import create_app

pytestmark = pytest.mark.slow

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "metaqa-movies.jsonl"


@pytest.fixture(scope="module")
def movies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    engine = Engine(connect(str(tmp_path_factory.mktemp("movies") / "m.db")))
    engine.import_files([SAMPLE])
    engine.embed_pending(kinds=[Kind.OBJECT])
    key = engine.create_api_key("default", ["read", "write", "debug"])[0]
    server = LiveServer(create_app(engine))
    yield server.start(), key
    server.stop()
    engine.close()


def test_search_on_the_movie_sample(browser: Browser, movies: tuple[str, str]) -> None:
    url, key = movies
    tab: Watched = open_page(browser)
    try:
        page = tab.page
        page.goto(url + "/ui/")
        page.fill("#login-key", key)
        page.press("#login-key", "Enter")
        page.wait_for_selector("#q")
        page.fill("#q", "Jesse James")
        page.select_option("#result-types", "graph")
        page.press("#q", "Enter")
        expect(page.locator("#results .card h3", has_text="Jesse James").first).to_be_visible()
        expect(page.locator("#explain .leg-table").first).to_be_visible()
        # once more, warm: the picture shows a typical latency, not the first query's
        page.evaluate("() => document.getElementById('explain').remove()")
        page.press("#q", "Enter")
        expect(page.locator("#explain .leg-table").first).to_be_visible()
        tab.shot("readme-search")
    finally:
        tab.page.context.close()
