"""The Ask page in Chromium: a streamed answer from a chat model (a real local HTTP
server that streams server-sent events), each citation a link that opens its object,
relationship or passage; the context on demand; offline answers when the key may not
call the model, and when the server has no model at all."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_server import ChatServer, sse_reply, start_chat_server
from live_server import LiveServer
from playwright.sync_api import Page, expect
from ui_browser import Site, Watched, sign_in

from kgsearch import ChunkIn, Engine, ObjectIn, RelationshipIn, SourceIn, connect
from kgsearch.api.app import create_app
from kgsearch.config import LLMSettings
from kgsearch.testing import FakeEmbedder

PIECES = ["Ada Lovelace [E1] ", "works for Acme Corp [R1], ", "as the notes say [S1]."]


def seed(engine: Engine) -> None:
    ada, acme = engine.add_objects(
        [
            ObjectIn(type="Person", key="ada", properties={"name": "Ada Lovelace"}),
            ObjectIn(type="Org", key="acme", properties={"name": "Acme Corp"}),
        ]
    )
    engine.add_relationships([RelationshipIn(type="WORKS_FOR", source=ada.id, target=acme.id)])
    engine.add_sources([SourceIn(id="doc:notes.md", title="notes.md")])
    engine.add_chunks(
        [
            ChunkIn(
                id="doc:notes.md#c1",
                text="Ada Lovelace works for Acme Corp in London.",
                source_id="doc:notes.md",
                metadata={"section": "People"},
            )
        ]
    )
    engine.embed_pending()


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatServer]:
    stopping = threading.Event()
    server, httpd = start_chat_server(lambda n, body: sse_reply(PIECES), stopping)
    yield server
    stopping.set()
    httpd.shutdown()
    httpd.server_close()


def keyless_server(path: Path, llm: LLMSettings | None) -> tuple[LiveServer, Engine, str]:
    engine = Engine(connect(str(path)), embedder=FakeEmbedder(32), llm_settings=llm)
    seed(engine)
    server = LiveServer(create_app(engine, keys=False))
    return server, engine, server.start()


@pytest.fixture(scope="module")
def with_model(tmp_path_factory: pytest.TempPathFactory, chat: ChatServer) -> Iterator[str]:
    llm = LLMSettings(model="openai:local-model", base_url=chat.url)
    server, engine, url = keyless_server(tmp_path_factory.mktemp("ask") / "a.db", llm)
    yield url
    server.stop()
    engine.close()


@pytest.fixture(scope="module")
def without_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server, engine, url = keyless_server(tmp_path_factory.mktemp("ask") / "b.db", None)
    yield url
    server.stop()
    engine.close()


def ask(page: Page, question: str) -> None:
    page.wait_for_selector("#question")
    page.fill("#question", question)
    page.press("#question", "Enter")
    expect(page.locator("#answer-how")).to_be_visible(timeout=30_000)


def test_a_streamed_answer_links_each_citation_to_what_it_cites(
    tab: Watched, with_model: str
) -> None:
    page = tab.page
    page.goto(with_model + "/ui/#/ask")
    expect(page.locator("#use-model")).to_be_checked()
    ask(page, "Who does Ada work for?")
    expect(page.locator("#answer-text")).to_have_text("".join(PIECES))
    expect(page.locator("#answer-how")).to_contain_text("openai:local-model")
    expect(page.locator("#answer-text a.cite")).to_have_count(3)
    expect(page.locator("#references li.cited")).to_have_count(3)
    page.locator("#context summary").click()
    expect(page.locator("#context pre")).to_contain_text("Ada Lovelace works for Acme Corp")
    tab.shot("ask", doc=True)
    # each citation opens what it cites
    page.locator("#answer-text a[data-cite='R1']").click()
    expect(page.locator("#triple")).to_contain_text("Ada Lovelace")
    expect(page.locator("#triple")).to_contain_text("WORKS_FOR")
    expect(page.locator("#triple")).to_contain_text("Acme Corp")
    page.go_back()
    page.locator("#answer-text a[data-cite='S1']").click()
    expect(page.locator("#passage-text")).to_have_text(
        "Ada Lovelace works for Acme Corp in London."
    )
    expect(page.locator("#passage")).to_contain_text("People")
    page.go_back()
    page.locator("#answer-text a[data-cite='E1']").click()
    expect(page.locator("#object-name")).to_be_visible()
    assert [e for e in tab.errors if "404" not in e] == []


def test_a_server_without_a_model_answers_offline_and_says_so(
    tab: Watched, without_model: str
) -> None:
    page = tab.page
    page.goto(without_model + "/ui/#/ask")
    ask(page, "Who does Ada work for?")
    expect(page.locator("#no-model")).to_contain_text("No chat model is configured")
    expect(page.locator("#answer-how")).to_contain_text("offline")
    expect(page.locator("#use-model")).not_to_be_checked()
    expect(page.locator("#answer-text a.cite").first).to_be_visible()


def test_a_key_without_the_llm_scope_asks_offline(tab: Watched, site: Site) -> None:
    page = sign_in(tab, site, hash="#/ask")
    expect(page.locator("#use-model")).to_be_disabled()
    ask(page, "Who does Ada Lovelace work for?")
    expect(page.locator("#answer-how")).to_contain_text("offline")
    expect(page.locator("#no-model")).to_have_count(0)
    cite = page.locator("#answer-text a.cite").first
    expect(cite).to_be_visible()
    tab.shot("ask-offline")
    cite.click()
    expect(page.locator("#object-name, #triple, #passage-text").first).to_be_visible()
