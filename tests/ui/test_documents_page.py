"""The Documents page in Chromium: the list with each document's chunks per
extraction status, one document's sections and chunks with their failures,
re-extracting, and deleting (which takes what only it supported out of the graph).

The server is keyless over a fresh SQLite store whose extractor is the fake one
(capitalised words become entities; a chunk with ``UNPARSEABLE`` fails), so a
failure can be made and then fixed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from live_server import LiveServer
from playwright.sync_api import Page, expect
from ui_browser import Watched

from kgsearch import Engine, connect
from kgsearch.api.app import create_app
from kgsearch.config import ExtractSettings
from kgsearch.io.documents import document_from_bytes
from kgsearch.testing import FakeEmbedder, FakeExtractor

NOTES = (
    b"# Pioneers\n\nAda Lovelace wrote programs for Charles Babbage.\n\n"
    b"# Later\n\nUNPARSEABLE Grace Hopper built compilers at Remington Rand.\n"
)
PAPER = b"Alan Turing worked at Bletchley Park with Joan Clarke."
PAIR = b"Mary met Percy."  # two entities, one relationship: counts in the singular


@dataclass
class DocSite:
    url: str
    engine: Engine
    fake: FakeExtractor


@pytest.fixture(scope="module")
def docsite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocSite]:
    fake = FakeExtractor()
    engine = Engine(
        connect(str(tmp_path_factory.mktemp("docs") / "d.db")),
        embedder=FakeEmbedder(32),
        extractors=lambda name, domain: fake,
        extract_settings=ExtractSettings(backoff_seconds=0, max_attempts=1),
    )
    engine.ingest(
        documents=[
            document_from_bytes("notes.md", NOTES),
            document_from_bytes("paper.txt", PAPER),
            document_from_bytes("pair.txt", PAIR),
        ],
        chunk_chars=100,
    )
    server = LiveServer(create_app(engine, keys=False))
    yield DocSite(server.start(), engine, fake)
    server.stop()
    engine.close()


def open_documents(page: Page, site: DocSite) -> None:
    page.goto(site.url + "/ui/#/documents")
    expect(page.locator("#documents tbody tr").first).to_be_visible()


def test_the_list_shows_each_document_with_its_extraction(tab: Watched, docsite: DocSite) -> None:
    page = tab.page
    open_documents(page, docsite)
    notes = page.locator("tr[data-id='doc:notes.md']")
    expect(notes.locator(".doc-title")).to_have_text("notes.md")
    expect(notes.locator(".badge.st-done")).to_have_text("done 1")
    expect(notes.locator(".badge.st-dead")).to_have_text("dead 1")
    expect(page.locator("tr[data-id='doc:paper.txt'] .badge.st-done")).to_have_text("done 1")
    tab.shot("documents", doc=True)


def test_a_document_shows_its_sections_chunks_and_failures(tab: Watched, docsite: DocSite) -> None:
    page = tab.page
    open_documents(page, docsite)
    page.locator("tr[data-id='doc:notes.md'] .doc-title").click()
    expect(page.locator("#doc-name")).to_have_text("notes.md")
    expect(page.locator("#sections li")).to_have_text(["Pioneers", "Later"])
    chunks = page.locator("#chunks .chunk-item")
    expect(chunks).to_have_count(2)
    done = page.locator(".chunk-item[data-status='done']")
    expect(done).to_contain_text("entities")
    expect(done.locator(".chunk")).to_contain_text("Ada Lovelace wrote programs")
    dead = page.locator(".chunk-item[data-status='dead']")
    expect(dead.locator(".chunk-error summary")).to_contain_text("Error: reply could not be parsed")
    tab.shot("document", doc=True)


def noun(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def test_chunk_counts_read_in_the_right_number(tab: Watched, docsite: DocSite) -> None:
    page = tab.page
    page.goto(docsite.url + "/ui/#/document/" + "doc%3Apair.txt")
    done = page.locator(".chunk-item[data-status='done']")
    expect(done).to_have_count(1)
    view = page.request.get(docsite.url + "/api/documents/doc%3Apair.txt").json()
    x = view["chunks"][0]["extraction"]
    expected = (
        noun(x["entities"], "entity", "entities")
        + " · "
        + noun(x["relationships"], "relationship", "relationships")
    )
    assert x["relationships"] == 1
    expect(done.locator(".chunk-head")).to_contain_text(expected)
    expect(done.locator(".chunk-head")).not_to_contain_text("1 relationships")


def test_re_extracting_retries_the_failed_chunk(tab: Watched, docsite: DocSite) -> None:
    page = tab.page
    page.goto(docsite.url + "/ui/#/document/" + "doc%3Anotes.md")
    expect(page.locator(".chunk-item[data-status='dead']")).to_have_count(1)
    docsite.fake.fail_marker = "NEVER-IN-THE-TEXT"
    try:
        page.click("#reextract")
        expect(page.locator("#reextract-status")).to_contain_text(
            "Extracted 1 of 1 chunk", timeout=20_000
        )
        expect(page.locator(".chunk-item[data-status='done']")).to_have_count(2)
        expect(page.locator("#doc-extraction .badge")).to_have_text(["done 2"])
    finally:
        docsite.fake.fail_marker = "UNPARSEABLE"


def test_deleting_a_document_takes_it_out_of_the_list_and_the_graph(
    tab: Watched, docsite: DocSite
) -> None:
    engine = docsite.engine
    assert engine.store.objects_named_many("default", ["Joan Clarke"], limit=5)
    page = tab.page
    open_documents(page, docsite)
    row = page.locator("tr[data-id='doc:paper.txt']")
    button = row.locator("button.danger")
    button.click()
    expect(button).to_have_text("Confirm delete")
    button.click()
    expect(row).to_have_count(0)
    expect(page.locator("#toast")).to_contain_text("Deleted paper.txt")
    page.reload()
    expect(page.locator("tr[data-id='doc:notes.md']")).to_be_visible()
    expect(page.locator("tr[data-id='doc:paper.txt']")).to_have_count(0)
    assert engine.store.objects_named_many("default", ["Joan Clarke"], limit=5) == {}
