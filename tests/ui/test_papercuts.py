"""Papercuts of issue 35 in the search, explain and status pages, each checked where a
user sees it (Chromium, the seeded ``alpha`` and ``beta`` projects)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from live_server import LiveServer
from playwright.sync_api import Browser, expect
from ui_browser import Site, Watched, open_page, sign_in

from kgsearch import Engine, ObjectIn, connect
from kgsearch.api.app import create_app
from kgsearch.testing import FakeEmbedder

SCROLL_WIDTH = "() => document.documentElement.scrollWidth"


def test_relationship_cards_name_their_ends_and_scores_are_relative(
    tab: Watched, site: Site
) -> None:
    """#4: the ends by name, not "source"/"target"; relevance relative to the top hit."""
    page = sign_in(tab, site)
    page.fill("#q", "Ada Lovelace works for Acme Corp")
    page.press("#q", "Enter")
    card = page.locator(".card[data-kind='relationship']", has_text="works for Acme").first
    expect(card.locator(".triple a")).to_have_text(["Ada Lovelace", "Acme Corp"])
    scores = page.locator("#results .card .score").all_inner_texts()
    values = [float(s.removeprefix("relevance ")) for s in scores]
    assert max(values) == 1.0 and all(0 <= v <= 1 for v in values), scores
    expect(page.locator("#explain")).to_contain_text("of the explain run")
    # #11 where the UI shows it: an object is an "object", never "graph"
    kinds = page.locator("#search-out .kind").all_inner_texts()
    assert "object" in [k.lower() for k in kinds] and "graph" not in [k.lower() for k in kinds]


def test_explain_tables_name_their_hits_and_keep_numbers_on_one_line(
    tab: Watched, site: Site
) -> None:
    """#5: no raw ``object:<uuid>`` keys; the score column does not wrap."""
    page = sign_in(tab, site)
    page.fill("#q", "Leaf")
    page.fill("#limit", "3")
    page.press("#q", "Enter")
    tables = page.locator("#explain .leg-table")
    expect(tables.first).to_be_visible()
    text = page.locator("#explain .legs-grid").inner_text()
    assert "object:" not in text, text
    assert "Leaf" in text
    wraps = page.evaluate(
        """() => [...document.querySelectorAll('#explain .leg-table td.num, #explain th.num')]
                 .map(e => getComputedStyle(e).whiteSpace)"""
    )
    assert wraps and set(wraps) == {"nowrap"}


def test_the_status_page_has_no_empty_extractors_heading(tab: Watched, site: Site) -> None:
    """#6: a project that never extracted shows no "Extractors" heading."""
    page = sign_in(tab, site, project="beta", hash="#/status")
    expect(page.locator("#extraction-status")).to_be_visible()
    expect(page.locator("#extraction-status h3", has_text="Extractors")).to_have_count(0)


@pytest.fixture
def half_embedded(tmp_path: Path) -> Iterator[str]:
    """A keyless server whose project has 4 objects, 1 of them embedded."""
    engine = Engine(connect(str(tmp_path / "half.db")), embedder=FakeEmbedder(32))
    engine.add_objects([ObjectIn(type="Person", key="ada", properties={"name": "Ada"})])
    engine.embed_pending()
    engine.add_objects(
        [ObjectIn(type="Person", key=k, properties={"name": k.title()}) for k in "xyz"]
    )
    server = LiveServer(create_app(engine, keys=False))
    yield server.start()
    server.stop()
    engine.close()


def test_search_warns_when_rows_are_not_embedded(tab: Watched, half_embedded: str) -> None:
    """#17: a project with rows not embedded says so above the results."""
    page = tab.page
    page.goto(half_embedded + "/ui/#/search")
    page.fill("#q", "Ada")
    page.press("#q", "Enter")
    expect(page.locator("#not-embedded")).to_contain_text("75 % of this project's rows")


def test_search_does_not_warn_when_everything_is_embedded(tab: Watched, site: Site) -> None:
    page = sign_in(tab, site, project="beta")
    page.fill("#q", "Vault")
    page.press("#q", "Enter")
    expect(page.locator("#results .card").first).to_be_visible()
    expect(page.locator("#not-embedded")).to_have_count(0)


def test_the_new_pages_fit_a_narrow_window(browser: Browser, site: Site) -> None:
    tab = open_page(browser)
    try:
        page = tab.page
        page.set_viewport_size({"width": 420, "height": 800})
        sign_in(tab, site, hash="#/ask")
        page.fill("#question", "Who does Ada Lovelace work for?")
        page.press("#question", "Enter")
        expect(page.locator("#answer-how")).to_be_visible(timeout=30_000)
        widths = {"ask": page.evaluate(SCROLL_WIDTH)}
        tab.shot("ask-narrow")
        for name, ready in (
            ("documents", "#documents tbody tr"),
            ("document/doc1", "#chunks"),
            ("communities", "#communities"),
            ("graph", "#graph-hint"),
        ):
            page.goto(site.url + "/ui/#/" + name)
            expect(page.locator(ready).first).to_be_visible()
            widths[name] = page.evaluate(SCROLL_WIDTH)
        tab.shot("document-narrow")
        assert set(widths.values()) == {420}, widths
    finally:
        tab.page.context.close()
