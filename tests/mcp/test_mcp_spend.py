"""MCP tools that call the chat model need the ``llm`` scope and are held to the
project's LLM budget; a model failure names the provider, not its URL or error.

In-memory MCP client sessions over a real SQLite store; the chat model is the real
OpenAI-compatible client pointed at a loopback chat server.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from chat_server import ChatServer, chat_reply, start_chat_server
from mcp import Client

from kgsearch import Engine, ObjectIn, connect
from kgsearch.config import ExtractSettings, LLMSettings
from kgsearch.keys import Scope
from kgsearch.lifecycle.budget import BudgetLimits, Limits
from kgsearch.mcp.server import create_server, tool_payload
from kgsearch.testing import FakeEmbedder

SECRET = "upstream says: key sk-live-123 is over quota"


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    stopping = threading.Event()

    def answer(number: int, body: dict[str, Any]) -> tuple[Any, ...]:
        if "PLEASE-FAIL" in body["messages"][-1]["content"]:
            return (500, {"error": {"message": SECRET}})
        return (200, chat_reply("Ada is a person [E1]."))

    server, httpd = start_chat_server(answer, stopping)
    yield server
    stopping.set()
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def engine(tmp_path: Path, chat: ChatServer) -> Iterator[Engine]:
    llm = LLMSettings(model="openai:test-model", base_url=chat.url, cache=False, max_retries=0)
    with Engine(
        connect(str(tmp_path / "mcp.db")), embedder=FakeEmbedder(32), llm_settings=llm
    ) as engine:
        engine.add_objects([ObjectIn(type="Person", key="ada", properties={"name": "Ada"})])
        engine.embed_pending()
        yield engine


def calls(
    engine: Engine,
    *steps: tuple[str, dict[str, Any]],
    scopes: tuple[Scope, ...],
    budget: BudgetLimits | None = None,
) -> list[tuple[bool, Any]]:
    server = create_server(engine, project="default", scopes=scopes, budget=budget)

    async def run() -> list[tuple[bool, Any]]:
        out = []
        with anyio.fail_after(30):
            async with Client(server) as client:
                for tool, args in steps:
                    result = await client.call_tool(tool, args)
                    out.append((result.is_error, tool_payload(result)))
        return out

    return anyio.run(run)


def test_a_server_without_llm_answers_offline_only(engine: Engine, chat: ChatServer) -> None:
    refused, keywords, offline = calls(
        engine,
        ("ask", {"question": "who is Ada"}),
        ("search", {"query": "Ada", "keywords": "llm"}),
        ("ask", {"question": "who is Ada", "no_llm": True}),
        scopes=("read",),
    )

    assert refused[0] and refused[1]["error"]["details"]["required_scope"] == "llm"
    assert keywords[0] and keywords[1]["error"]["code"] == "forbidden"
    assert not offline[0]
    assert chat.requests == []


def test_the_project_budget_refuses_with_a_tool_error(engine: Engine) -> None:
    budget = BudgetLimits(project=Limits(requests_per_minute=1))
    first, second = calls(
        engine,
        ("ask", {"question": "who is Ada"}),
        ("ask", {"question": "who is Ada"}),
        scopes=("read", "llm"),
        budget=budget,
    )

    assert not first[0] and first[1]["answer"] == "Ada is a person [E1]."
    assert second[0] and second[1]["error"]["code"] == "budget_exceeded"
    assert second[1]["error"]["details"]["retry_after"] >= 1
    [row] = engine.llm_usage().keys
    assert (row.key_id, row.today.requests, row.today.tokens) == ("", 1, 1873 + 231)


def test_a_model_failure_hides_the_url_and_the_error_text(engine: Engine, chat: ChatServer) -> None:
    [(failed, payload)] = calls(
        engine, ("ask", {"question": "PLEASE-FAIL"}), scopes=("read", "llm")
    )

    assert failed and payload["error"]["details"]["provider"] == "openai"
    assert "sk-live-123" not in str(payload) and chat.url not in str(payload)


def test_add_text_with_the_llm_extractor_is_metered(tmp_path: Path, chat: ChatServer) -> None:
    llm = LLMSettings(model="openai:test-model", base_url=chat.url, cache=False, max_retries=0)
    with Engine(
        connect(str(tmp_path / "add.db")),
        embedder=FakeEmbedder(32),
        llm_settings=llm,
        extract_settings=ExtractSettings(extractor="llm", max_attempts=1),
    ) as engine:
        [(failed, added)] = calls(
            engine,
            ("add_text", {"text": "Ada Lovelace wrote programs.", "extract": True}),
            scopes=("read", "write"),  # an ingest needs no llm scope: it is counted only
        )
        usage = engine.llm_usage(project="default")

    assert not failed, added
    assert len(chat.requests) == 1
    [row] = usage.keys
    assert (row.key_id, row.today.tokens) == ("", 1873 + 231)
