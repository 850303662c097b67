"""``keywords: "llm"`` on every surface: the CLI (``--keywords llm``), REST (real uvicorn)
and MCP (the SDK's client in process), each with the real OpenAI client asking a real
local HTTP chat server; the second identical search is answered by the store's cache."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from chat_server import ChatServer, chat_reply, start_chat_server
from click.testing import CliRunner
from live_server import LiveServer
from mcp import Client

from kgsearch import Engine, connect
from kgsearch.api.app import create_app
from kgsearch.cli import cli
from kgsearch.config import LLMSettings
from kgsearch.mcp.server import create_server, tool_payload
from kgsearch.model import ChunkIn, ObjectIn, RelationshipIn, SourceIn
from kgsearch.testing import FakeEmbedder

REPLY = '{"high_level_keywords": ["employment"], "low_level_keywords": ["Ada Lovelace"]}'
QUERY = "where is she employed?"


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    stopping = threading.Event()
    server, httpd = start_chat_server(lambda n, body: (200, chat_reply(REPLY)), stopping)
    yield server
    stopping.set()
    httpd.shutdown()
    httpd.server_close()


def fill(engine: Engine) -> None:
    ada, acme = engine.add_objects(
        [
            ObjectIn(type="Person", key="ada", properties={"name": "Ada Lovelace"}),
            ObjectIn(type="Org", key="acme", properties={"name": "Acme Corp"}),
        ]
    )
    engine.add_relationships([RelationshipIn(type="WORKS_FOR", source=ada.id, target=acme.id)])
    engine.add_sources([SourceIn(id="doc", title="Notes")])
    engine.add_chunks([ChunkIn(id="c1", text="Ada works for Acme Corp.", source_id="doc")])
    engine.embed_pending()


@pytest.fixture
def engine(tmp_path: Path, chat: ChatServer) -> Iterator[Engine]:
    llm = LLMSettings(model="openai:local-model", base_url=chat.url)
    with Engine(
        connect(str(tmp_path / "kw.db")), embedder=FakeEmbedder(32), llm_settings=llm
    ) as engine:
        fill(engine)
        yield engine


def test_rest_search_takes_keywords(engine: Engine, chat: ChatServer) -> None:
    server = LiveServer(create_app(engine, keys=False))
    base = server.start()
    try:
        bodies = [
            httpx.post(
                f"{base}/api/search/unified",
                json={"query": QUERY, "recipe": "mix", "keywords": "llm"},
                timeout=30,
            )
            for _ in range(2)
        ]
        bad = httpx.post(
            f"{base}/api/search/unified", json={"query": QUERY, "keywords": "yes"}, timeout=30
        )
    finally:
        server.stop()

    assert [b.status_code for b in bodies] == [200, 200], bodies[0].text
    sources = [b.json()["metadata"]["keywords"]["source"] for b in bodies]
    assert sources == ["llm", "cache"] and len(chat.requests) == 1
    assert bodies[0].json()["metadata"]["keywords"]["lowLevel"] == ["Ada Lovelace"]
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_request"


def test_mcp_search_and_explain_take_keywords(engine: Engine, chat: ChatServer) -> None:
    server = create_server(engine, project=engine.project, scopes=["read", "debug", "llm"])

    async def run() -> list[object]:
        with anyio.fail_after(30):
            async with Client(server) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert "keywords" in tools["search"].input_schema["properties"]
                found = await client.call_tool(
                    "search", {"query": QUERY, "recipe": "hybrid", "keywords": "llm"}
                )
                explained = await client.call_tool(
                    "explain", {"query": QUERY, "recipe": "hybrid", "keywords": "llm"}
                )
                answered = await client.call_tool(
                    "ask", {"question": QUERY, "keywords": "llm", "no_llm": True}
                )
                return [tool_payload(found), tool_payload(explained), tool_payload(answered)]

    found, explained, answered = anyio.run(run)

    assert found["metadata"]["keywords"]["source"] == "llm"  # type: ignore[index]
    assert explained["metadata"]["keywords"]["source"] == "cache"  # type: ignore[index]
    assert "keywords" in explained["notes"]  # type: ignore[index]
    assert answered["metadata"]["keywords"]["source"] == "cache"  # type: ignore[index]
    assert len(chat.requests) == 1  # keywords depend on the question alone


def test_cli_search_takes_keywords(
    tmp_path: Path, chat: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "cli.db"
    with Engine(connect(str(db)), embedder=FakeEmbedder(32)) as engine:
        fill(engine)
    monkeypatch.setenv("KGSEARCH_EMBED__MODEL", "fake:32")
    monkeypatch.setenv("KGSEARCH_LLM__MODEL", "openai:local-model")
    monkeypatch.setenv("KGSEARCH_LLM__BASE_URL", chat.url)
    runner = CliRunner()
    args = ["--db", str(db), "search", QUERY, "--recipe", "mix", "--keywords", "llm"]

    table = runner.invoke(cli, [*args, "--in-process"], catch_exceptions=False)
    as_json = runner.invoke(cli, ["--json", *args, "--in-process"], catch_exceptions=False)

    assert table.exit_code == 0, table.output
    assert "keywords (llm): entities Ada Lovelace; themes employment" in table.stdout
    assert json.loads(as_json.stdout)["metadata"]["keywords"]["source"] == "cache"
    assert chat.bodies[0]["messages"][-1]["content"] == f"Question: {QUERY}"
