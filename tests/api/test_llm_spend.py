"""LLM spend is a permission and has a budget (issue 32, item 2), over real HTTP.

A real uvicorn server per test; the chat model is the real OpenAI-compatible client
pointed at a loopback chat server whose every reply reports 1873 prompt and 231
completion tokens (:func:`chat_server.chat_reply`). The response cache is off, so each
answer is one model call. Keys are real keys of the engine's store.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from chat_server import ChatServer, chat_reply, start_chat_server

from kgsearch import Engine, ObjectIn, connect
from kgsearch.api.app import create_app
from kgsearch.config import LLMSettings
from kgsearch.keys import KeyLimits
from kgsearch.lifecycle.budget import BudgetLimits, Limits
from kgsearch.testing import FakeEmbedder

Serve = Callable[..., str]
TOKENS = 1873 + 231  # what each reply reports
ASK = {"query": "who is Ada"}
SECRET = "upstream says: quota of org-9f3a exhausted"
EXTRACTION = json.dumps(
    {
        "entities": [{"name": "Ada Lovelace", "type": "person", "description": "A writer."}],
        "relationships": [],
    }
)


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    stopping = threading.Event()

    def answer(number: int, body: dict[str, Any]) -> tuple[Any, ...]:
        if "PLEASE-FAIL" in body["messages"][-1]["content"]:
            return (500, {"error": {"message": SECRET}})
        if "response_format" in body:  # an extraction
            return (200, chat_reply(EXTRACTION))
        return (200, chat_reply("Ada is a person [E1]."))

    server, httpd = start_chat_server(answer, stopping)
    yield server
    stopping.set()
    httpd.shutdown()
    httpd.server_close()


def make_engine(path: Path, chat: ChatServer) -> Engine:
    """An engine over ``path`` holding Ada (an empty graph is answered without a model)."""
    llm = LLMSettings(model="openai:test-model", base_url=chat.url, cache=False, max_retries=0)
    engine = Engine(connect(str(path)), embedder=FakeEmbedder(32), llm_settings=llm)
    engine.add_objects([ObjectIn(type="Person", key="ada", properties={"name": "Ada"})])
    engine.embed_pending()
    return engine


@pytest.fixture
def engine(tmp_path: Path, chat: ChatServer) -> Iterator[Engine]:
    with make_engine(tmp_path / "spend.db", chat) as engine:
        yield engine


def key(engine: Engine, scopes: str) -> dict[str, str]:
    made, _ = engine.create_api_key("default", scopes)
    return {"Authorization": f"Bearer {made}"}


def limits(**key: int) -> BudgetLimits:
    return BudgetLimits(key=Limits(**key), project=Limits())


def test_a_read_key_cannot_spend_and_a_key_with_llm_can(
    serve: Serve, engine: Engine, chat: ChatServer
) -> None:
    base = serve(create_app(engine))
    reader, spender = key(engine, "read"), key(engine, "read,llm")

    refused = httpx.post(f"{base}/api/ask", json=ASK, headers=reader)
    keywords = httpx.post(
        f"{base}/api/search/unified", json={"query": "Ada", "keywords": "llm"}, headers=reader
    )
    offline = httpx.post(f"{base}/api/ask", json={**ASK, "llm": False}, headers=reader)
    streamed = httpx.post(f"{base}/api/ask", json={**ASK, "stream": True}, headers=reader)
    answered = httpx.post(f"{base}/api/ask", json=ASK, headers=spender)

    assert [refused.status_code, keywords.status_code, streamed.status_code] == [403] * 3
    assert refused.json()["error"]["details"]["required_scope"] == "llm"
    assert "--scopes read,llm" in refused.json()["error"]["message"]
    assert offline.status_code == 200  # the context's top facts: no model, no llm scope
    assert answered.status_code == 200, answered.text
    assert answered.json()["answer"] == "Ada is a person [E1]."
    assert len(chat.requests) == 1  # the refused calls never reached the model


def test_admin_implies_every_scope(serve: Serve, engine: Engine) -> None:
    base = serve(create_app(engine))
    admin = key(engine, "admin")

    answered = httpx.post(f"{base}/api/ask", json=ASK, headers=admin)
    written = httpx.post(
        f"{base}/api/graph/objects", json={"type": "Person", "key": "bob"}, headers=admin
    )

    assert (answered.status_code, written.status_code) == (200, 201), written.text


def test_a_key_over_its_requests_per_minute_gets_429_with_retry_after(
    serve: Serve, engine: Engine, chat: ChatServer
) -> None:
    base = serve(create_app(engine, budget=limits(requests_per_minute=2)))
    spender, other = key(engine, "read,llm"), key(engine, "read,llm")

    codes = [httpx.post(f"{base}/api/ask", json=ASK, headers=spender).status_code for _ in "12"]
    refused = httpx.post(f"{base}/api/ask", json=ASK, headers=spender)
    streamed = httpx.post(f"{base}/api/ask", json={**ASK, "stream": True}, headers=spender)
    another = httpx.post(f"{base}/api/ask", json=ASK, headers=other)

    assert codes == [200, 200]
    assert (refused.status_code, streamed.status_code) == (429, 429)
    error = refused.json()["error"]
    assert error["code"] == "budget_exceeded"
    assert error["details"]["limit"] == "key_requests_per_minute"
    assert (error["details"]["used"], error["details"]["allowed"]) == (2, 2)
    assert 1 <= int(refused.headers["Retry-After"]) <= 61
    assert another.status_code == 200  # the limit is the key's, not the project's
    assert len(chat.requests) == 3


def test_a_keys_own_limit_replaces_the_servers(serve: Serve, engine: Engine) -> None:
    base = serve(create_app(engine, budget=limits(requests_per_minute=1)))
    generous, by_tokens = key(engine, "read,llm"), key(engine, "read,llm")
    engine.set_key_limits(generous["Authorization"].split("_")[1], KeyLimits(requests_per_minute=3))
    engine.set_key_limits(  # 0: no request limit for this key, but a token one
        by_tokens["Authorization"].split("_")[1],
        KeyLimits(requests_per_minute=0, tokens_per_day=TOKENS + 1),
    )

    more = [httpx.post(f"{base}/api/ask", json=ASK, headers=generous).status_code for _ in "1234"]
    tokens = [httpx.post(f"{base}/api/ask", json=ASK, headers=by_tokens) for _ in "123"]

    assert more == [200, 200, 200, 429]
    assert [r.status_code for r in tokens] == [200, 200, 429]
    assert tokens[2].json()["error"]["details"]["limit"] == "key_tokens_per_day"


def test_a_project_limit_holds_across_its_keys(serve: Serve, engine: Engine) -> None:
    budget = BudgetLimits(key=Limits(), project=Limits(requests_per_minute=2))
    base = serve(create_app(engine, budget=budget))
    first, second, third = (key(engine, "read,llm") for _ in "123")

    codes = [
        httpx.post(f"{base}/api/ask", json=ASK, headers=k).status_code for k in (first, second)
    ]
    refused = httpx.post(f"{base}/api/ask", json=ASK, headers=third)

    assert codes == [200, 200]
    assert refused.status_code == 429
    assert refused.json()["error"]["details"]["limit"] == "project_requests_per_minute"


def test_usage_counts_match_the_calls_and_survive_a_reopen(
    serve: Serve, tmp_path: Path, chat: ChatServer
) -> None:
    path = tmp_path / "usage.db"
    budget = limits(tokens_per_day=2 * TOKENS)
    with make_engine(path, chat) as engine:
        spender = key(engine, "read,llm")
        admin = key(engine, "admin")
        base = serve(create_app(engine, budget=budget))
        codes = [httpx.post(f"{base}/api/ask", json=ASK, headers=spender).status_code]
        codes.append(
            httpx.post(f"{base}/api/ask", json={**ASK, "stream": True}, headers=spender).status_code
        )
        usage = httpx.get(f"{base}/api/usage", headers=admin).json()
        refused_usage = httpx.get(f"{base}/api/usage", headers=spender)

    assert codes == [200, 200]
    spender_id = spender["Authorization"].split("_")[1]
    mine = next(row for row in usage["keys"] if row["key_id"] == spender_id)
    assert (mine["today"]["requests"], mine["today"]["tokens"]) == (2, 2 * TOKENS)
    assert mine["this_minute"]["requests"] in (0, 2)  # 0 only if the minute turned
    assert [p["today"]["tokens"] for p in usage["projects"]] == [2 * TOKENS]
    assert refused_usage.status_code == 403  # usage needs admin

    with make_engine(path, chat) as engine:  # a restart: the day's tokens are still counted
        base = serve(create_app(engine, budget=budget))
        refused = httpx.post(f"{base}/api/ask", json=ASK, headers=spender)
        report = engine.llm_usage(project="default")

    assert refused.status_code == 429
    assert refused.json()["error"]["details"]["limit"] == "key_tokens_per_day"
    assert int(refused.headers["Retry-After"]) > 0
    assert [(r.key_id, r.today.requests, r.today.tokens) for r in report.keys] == [
        (spender_id, 2, 2 * TOKENS)  # the refused request is not counted
    ]


def test_keywords_llm_searches_are_metered(serve: Serve, engine: Engine) -> None:
    base = serve(create_app(engine))
    spender = key(engine, "read,llm")

    body = {"query": "Ada", "keywords": "llm", "recipe": "hybrid"}
    found = httpx.post(f"{base}/api/search/unified", json=body, headers=spender)

    assert found.status_code == 200, found.text
    assert found.json()["metadata"]["keywords"]["source"] == "fallback"  # not keyword JSON
    [row] = engine.llm_usage().keys
    assert (row.today.requests, row.today.tokens) == (1, TOKENS)


def test_a_keywords_fallback_reason_hides_the_url_and_the_reply(
    serve: Serve, engine: Engine, chat: ChatServer
) -> None:
    base = serve(create_app(engine))
    spender = key(engine, "read,llm")
    body = {"query": "PLEASE-FAIL", "keywords": "llm", "recipe": "hybrid"}

    found = httpx.post(f"{base}/api/search/unified", json=body, headers=spender)

    reason = found.json()["metadata"]["keywords"]["reason"]
    assert found.status_code == 200 and "HTTP 500" in reason
    assert "127.0.0.1" not in found.text and "org-9f3a" not in found.text


def test_a_model_failure_names_the_provider_but_not_its_url_or_error(
    serve: Serve, engine: Engine, chat: ChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    base = serve(create_app(engine))
    spender = key(engine, "read,llm")

    failed = httpx.post(f"{base}/api/ask", json={"query": "PLEASE-FAIL"}, headers=spender)
    streamed = httpx.post(
        f"{base}/api/ask", json={"query": "PLEASE-FAIL", "stream": True}, headers=spender
    )

    assert failed.status_code == 502
    error = failed.json()["error"]
    assert error["details"]["provider"] == "openai"
    assert "HTTP 500" in error["message"]
    for text in (failed.text, streamed.text):
        assert "127.0.0.1" not in text and "org-9f3a" not in text and chat.url not in text
    assert "event: error" in streamed.text and '"provider": "openai"' in streamed.text
    assert any("org-9f3a" in r.getMessage() for r in caplog.records)  # logged server-side


def test_an_llm_ingest_is_metered_to_the_key_that_started_it(
    serve: Serve, engine: Engine, chat: ChatServer
) -> None:
    base = serve(create_app(engine))
    writer = key(engine, "read,write")  # no llm scope: an ingest needs none
    texts = ["Ada Lovelace wrote programs.", "Ada Lovelace met Babbage in London."]
    started = httpx.post(
        f"{base}/api/documents",
        json={"documents": [{"text": t} for t in texts], "extractor": "llm"},
        headers=writer,
    )
    assert started.status_code == 202, started.text
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        job = httpx.get(f"{base}{started.headers['Location']}", headers=writer).json()
        if job["state"] != "running":
            break
        time.sleep(0.1)

    assert job["state"] == "done", job
    assert job["result"]["extraction"]["calls"] == len(chat.requests) == 2
    writer_id = writer["Authorization"].split("_")[1]
    [row] = engine.llm_usage().keys
    assert (row.key_id, row.today.tokens) == (writer_id, 2 * TOKENS)
