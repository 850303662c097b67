"""``POST /api/ask`` on a real uvicorn server, its chat model a real local HTTP server
that streams (server-sent events)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from chat_server import ChatServer, sse_reply, start_chat_server

from kgsearch import ChunkIn, Engine, ObjectIn, RelationshipIn, SourceIn, connect
from kgsearch.api.app import create_app
from kgsearch.config import LLMSettings
from kgsearch.testing import FakeEmbedder

Serve = Callable[..., str]


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    stopping = threading.Event()
    server, httpd = start_chat_server(
        lambda n, body: sse_reply(["Ada works ", "for Acme Corp [R1]."]), stopping
    )
    yield server
    stopping.set()
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def engine(tmp_path: Path, chat: ChatServer) -> Iterator[Engine]:
    llm = LLMSettings(model="openai:local-model", base_url=chat.url)
    with Engine(
        connect(str(tmp_path / "ask.db")), embedder=FakeEmbedder(32), llm_settings=llm
    ) as engine:
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
        yield engine


def test_ask_answers_with_citations_that_resolve(
    serve: Serve, engine: Engine, chat: ChatServer
) -> None:
    base = serve(create_app(engine, keys=False))

    response = httpx.post(f"{base}/api/ask", json={"query": "who does Ada work for"}, timeout=30)

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["answer"] == "Ada works for Acme Corp [R1]."
    assert body["model"] == "openai:local-model"
    cited = {r["cite"]: r for r in body["references"] if r["cited"]}
    rel = engine.list_rows("relationship").items[0].id
    assert cited["R1"]["id"] == rel and cited["R1"]["kind"] == "relationship"
    assert "[R1] Ada Lovelace works for Acme Corp" in chat.bodies[0]["messages"][1]["content"]


def test_ask_without_the_model_answers_offline(
    serve: Serve, engine: Engine, chat: ChatServer
) -> None:
    base = serve(create_app(engine, keys=False))

    response = httpx.post(
        f"{base}/api/ask", json={"query": "who does Ada work for", "llm": False}, timeout=30
    )

    assert response.status_code == 200, response.text
    assert response.json()["offline"] is True
    # the graph holds a passage: the answer quotes it
    assert "- Ada works for Acme Corp. [S1]" in response.json()["answer"]
    assert chat.requests == []


def test_an_empty_question_is_400(serve: Serve, engine: Engine) -> None:
    base = serve(create_app(engine, keys=False))

    response = httpx.post(f"{base}/api/ask", json={"query": "   "}, timeout=30)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"


def test_ask_streams_server_sent_events(serve: Serve, engine: Engine, chat: ChatServer) -> None:
    base = serve(create_app(engine, keys=False))
    body = {"query": "who does Ada work for", "stream": True}

    with httpx.stream("POST", f"{base}/api/ask", json=body, timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [
            (block.split("\n")[0].removeprefix("event: "), block.split("\n")[1][6:])
            for block in response.read().decode().strip().split("\n\n")
        ]

    texts = [json.loads(data) for event, data in events if event == "text"]
    assert texts == ["Ada works ", "for Acme Corp [R1]."]
    assert events[-1][0] == "answer"
    assert json.loads(events[-1][1])["answer"] == "".join(texts)
