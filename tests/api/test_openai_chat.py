"""Chat clients plug in (issue 35): the official ``openai`` Python client against a real
kgsearch server's OpenAI-compatible endpoint, answering with ``ask``.

The chat model behind ``ask`` is the real OpenAI-compatible client pointed at a real
loopback chat server (tests/chat_server.py); without one configured, the endpoint
answers offline. Keys are real kgsearch keys sent as the client's API key.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from chat_server import ChatServer, chat_reply, sse_reply, start_chat_server

from kgsearch import Engine, ObjectIn, RelationshipIn, connect
from kgsearch.api.app import create_app
from kgsearch.config import LLMSettings
from kgsearch.testing import FakeEmbedder

ANSWER = "Ada works for Acme [R1]."


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    stopping = threading.Event()

    def answer(number: int, body: dict[str, Any]) -> tuple[Any, ...]:
        if body.get("stream"):
            return sse_reply(["Ada works ", "for Acme [R1]."])
        return (200, chat_reply(ANSWER))

    server, httpd = start_chat_server(answer, stopping)
    yield server
    stopping.set()
    httpd.shutdown()
    httpd.server_close()


def _engine(path: Path, llm: LLMSettings | None) -> Engine:
    engine = Engine(connect(str(path)), embedder=FakeEmbedder(32), llm_settings=llm)
    ada, acme = engine.add_objects(
        [
            ObjectIn(type="Person", key="ada", properties={"name": "Ada Lovelace"}),
            ObjectIn(type="Org", key="acme", properties={"name": "Acme"}),
        ]
    )
    engine.add_relationships([RelationshipIn(type="WORKS_FOR", source=ada.id, target=acme.id)])
    engine.embed_pending()
    return engine


@pytest.fixture
def engine(tmp_path: Path, chat: ChatServer) -> Iterator[Engine]:
    llm = LLMSettings(model="openai:chat-model", base_url=chat.url, cache=False, max_retries=0)
    with _engine(tmp_path / "chat.db", llm) as engine:
        yield engine


def _client(base: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0, timeout=30)


def test_the_official_client_gets_a_cited_answer_and_its_sources(
    serve: Any, engine: Engine, chat: ChatServer
) -> None:
    key, _ = engine.create_api_key("default", "read,llm", name="chat")
    client = _client(serve(create_app(engine, keys=True)), key)

    reply = client.chat.completions.create(
        model="kgsearch",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Who is Ada?"},
            {"role": "assistant", "content": "A person."},
            {"role": "user", "content": "Who does Ada work for?"},
        ],
    )

    content = reply.choices[0].message.content or ""
    assert content.startswith(ANSWER)
    assert "Sources:\n[R1] Ada Lovelace" in content and "Acme" in content
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None and reply.usage.total_tokens > 0
    extra = reply.model_extra or {}
    assert extra["kgsearch"]["offline"] is False
    assert any(r["cite"] == "R1" and r["cited"] for r in extra["kgsearch"]["references"])
    # the last user message is the question the model was given
    sent = chat.bodies[-1]["messages"][-1]["content"]
    assert sent.endswith("Question: Who does Ada work for?")


def test_a_streamed_answer_arrives_in_chunks_then_its_sources(serve: Any, engine: Engine) -> None:
    key, _ = engine.create_api_key("default", "read,llm", name="chat")
    client = _client(serve(create_app(engine, keys=True)), key)

    stream = client.chat.completions.create(
        model="kgsearch/mix",
        messages=[{"role": "user", "content": "Who does Ada work for?"}],
        stream=True,
    )
    chunks = list(stream)

    pieces = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert pieces[:2] == ["Ada works ", "for Acme [R1]."]
    assert pieces[2].startswith("\n\nSources:\n[R1]")
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_without_a_chat_model_the_answer_is_the_offline_one_and_says_so(
    serve: Any, tmp_path: Path
) -> None:
    no_model = LLMSettings(model="openai:gpt-4o-mini", api_key=None)
    with _engine(tmp_path / "offline.db", no_model) as engine:
        client = _client(serve(create_app(engine, keys=False)), "unused")
        reply = client.chat.completions.create(
            model="default", messages=[{"role": "user", "content": "Who does Ada work for?"}]
        )
    content = reply.choices[0].message.content or ""
    assert "no model asked" in content and "Acme" in content
    assert (reply.model_extra or {})["kgsearch"]["offline"] is True


def test_a_key_that_may_not_spend_gets_the_offline_answer(
    serve: Any, engine: Engine, chat: ChatServer
) -> None:
    key, _ = engine.create_api_key("default", "read", name="no-spend")
    client = _client(serve(create_app(engine, keys=True)), key)
    reply = client.chat.completions.create(
        model="kgsearch", messages=[{"role": "user", "content": "Who does Ada work for?"}]
    )
    content = reply.choices[0].message.content or ""
    assert "no model asked" in content and "Acme" in content
    assert (reply.model_extra or {})["kgsearch"]["offline"] is True
    assert chat.requests == []  # the model was never called


def test_models_list_the_keys_project_with_each_recipe(serve: Any, engine: Engine) -> None:
    key, _ = engine.create_api_key("default", "read", name="chat")
    client = _client(serve(create_app(engine, keys=True)), key)

    names = [m.id for m in client.models.list()]

    assert names[:1] == ["kgsearch"]
    assert {"kgsearch/mix", "default", "default/multi_hop", "default/naive"} <= set(names)


def test_bad_models_keys_and_conversations_get_clear_errors(serve: Any, engine: Engine) -> None:
    key, _ = engine.create_api_key("default", "read", name="chat")
    base = serve(create_app(engine, keys=True))
    client = _client(base, key)
    ask = [{"role": "user", "content": "Who does Ada work for?"}]

    with pytest.raises(openai.PermissionDeniedError):
        client.chat.completions.create(model="other-project", messages=ask)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError, match="unknown recipe 'fastest'"):
        client.chat.completions.create(model="kgsearch/fastest", messages=ask)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError, match="no user message"):
        client.chat.completions.create(
            model="kgsearch", messages=[{"role": "system", "content": "Hello"}]
        )
    with pytest.raises(openai.AuthenticationError):
        _client(base, "kgs_nope_nope").chat.completions.create(model="kgsearch", messages=ask)  # type: ignore[arg-type]
