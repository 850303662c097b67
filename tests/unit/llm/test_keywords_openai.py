"""Query keywords through the real OpenAI-compatible client and a real HTTP server on
127.0.0.1 (the reply is an OpenAI-shaped chat completion written here: no recorded
real keyword reply exists in the eval data)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from chat_server import ChatServer, Hang, Responder, chat_reply

from kgsearch import Engine, connect
from kgsearch.config import LLMSettings
from kgsearch.model import ChunkIn, ObjectIn, RelationshipIn, SourceIn
from kgsearch.testing import FakeEmbedder

Serve = Callable[[Responder], ChatServer]

REPLY = """```json
{"high_level_keywords": ["employment"], "low_level_keywords": ["Ada Lovelace", "Acme Corp"]}
```"""


def _engine(tmp_path: Path, server: ChatServer, **settings: float) -> Engine:
    llm = LLMSettings(model="openai:gpt-4o-mini", base_url=server.url, **settings)
    engine = Engine(connect(str(tmp_path / "kw.db")), embedder=FakeEmbedder(32), llm_settings=llm)
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
    return engine


def test_keywords_from_a_chat_completion_steer_the_legs_and_are_cached(
    serve: Serve, tmp_path: Path
) -> None:
    server = serve(lambda n, body: (200, chat_reply(REPLY, model="gpt-4o-mini")))
    with _engine(tmp_path, server) as engine:
        first = engine.explain("where is she employed?", recipe="mix", keywords="llm")
        second = engine.search("where is she employed?", recipe="mix", keywords="llm")

    assert len(server.requests) == 1  # the second search was answered by the store's cache
    body = server.bodies[0]
    assert body["model"] == "gpt-4o-mini" and body["temperature"] == 0.0
    assert body["response_format"]["type"] == "json_schema"
    assert body["messages"][-1]["content"] == "Question: where is she employed?"
    words = first.metadata["keywords"]
    assert (words["source"], words["model"]) == ("llm", "openai:gpt-4o-mini")
    assert words["lowLevel"] == ["Ada Lovelace", "Acme Corp"]
    assert words["highLevel"] == ["employment"]
    objects = json.dumps([s.params for s in first.statements["objects:bm25"]]).lower()
    assert "lovelace" in objects and "employed" not in objects
    assert second.metadata["keywords"]["source"] == "cache"
    assert second.results


def test_a_server_that_never_answers_falls_back_at_the_deadline(
    serve: Serve, tmp_path: Path
) -> None:
    server = serve(lambda n, body: (200, Hang(30)))
    with _engine(tmp_path, server, keywords_deadline_seconds=0.5) as engine:
        response = engine.search("where is she employed?", recipe="mix", keywords="llm")

    words = response.metadata["keywords"]
    assert words["source"] == "fallback" and "llm_unavailable" in words["reason"]
    assert response.results
