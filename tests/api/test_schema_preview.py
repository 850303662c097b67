"""A graph schema given with an extraction preview, over REST and MCP: the LLM extractor
(real OpenAI-compatible client, local chat server) answers with the recorded Vicuna-13B
reply of Text2KGBench's ``ont_3_sport_test_2`` (CC BY-SA 4.0, eval-data text2kgbench),
held to the benchmark's sports ontology."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from chat_server import ChatServer, chat_reply, start_chat_server
from eval_data import EVAL_DATA
from mcp import Client

from kgsearch import Engine, connect
from kgsearch.config import ExtractSettings, LLMSettings
from kgsearch.mcp.server import create_server, tool_payload
from kgsearch.testing import FakeEmbedder

TEKGEN = EVAL_DATA / "text2kgbench" / "wikidata_tekgen"
ONTOLOGY = json.loads((TEKGEN / "ontologies" / "3_sport_ontology.json").read_text("utf-8"))
SENTENCE = json.loads(
    (TEKGEN / "ground_truth" / "ont_3_sport_ground_truth.jsonl").read_text("utf-8").splitlines()[1]
)["sent"]
REPLY = json.loads(
    (TEKGEN / "baselines" / "Vicuna-13B" / "llm_responses" / "ont_3_sport_llm_responses.jsonl")
    .read_text("utf-8")
    .splitlines()[1]
)["response"]


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    stopping = threading.Event()
    server, httpd = start_chat_server(lambda n, body: (200, chat_reply(REPLY)), stopping)
    yield server
    stopping.set()
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def api_engine(tmp_path: Path, chat: ChatServer) -> Iterator[Engine]:
    engine = Engine(
        connect(str(tmp_path / "api.db")),
        embedder=FakeEmbedder(16),
        extract_settings=ExtractSettings(extractor="llm"),
        llm_settings=LLMSettings(model="openai:gpt-4o", base_url=chat.url, api_key="test-key"),
    )
    yield engine
    engine.close()


def relations(body: dict[str, Any]) -> list[str]:
    return sorted(r["relation"] for r in body["graph"]["relationships"])


def test_rest_preview_with_a_schema_holds_the_reply_to_it(
    base_url: str, http: Callable[..., httpx.Client], api_engine: Engine, chat: ChatServer
) -> None:
    key, _ = api_engine.create_api_key("alpha", "read,llm")
    api = http(base_url, key)
    open_ = api.post("/api/extraction/preview", json={"text": SENTENCE})
    assert open_.status_code == 200, open_.text
    held = api.post("/api/extraction/preview", json={"text": SENTENCE, "schema": ONTOLOGY})
    assert held.status_code == 200, held.text
    body = held.json()
    assert "+schema." in body["prompt_version"] and "+schema." not in open_.json()["prompt_version"]
    assert "membership" in relations(open_.json())  # open extraction keeps any label
    assert "membership" not in relations(body)
    assert "home venue" in relations(body)
    off = {r["item"]["relation"] for r in body["rejected"] if r["reason"] == "off_schema"}
    assert off == {"membership", "physical_activity", "sports_club", "sports_team_season"}
    assert "# Graph schema" in chat.bodies[-1]["messages"][0]["content"]
    assert api_engine.stats(project="alpha").counts.get("chunks", 0) == 0


def test_rest_preview_refuses_a_malformed_schema(
    base_url: str, http: Callable[..., httpx.Client], api_engine: Engine, chat: ChatServer
) -> None:
    key, _ = api_engine.create_api_key("alpha", "read,llm")
    api = http(base_url, key)
    bad = {"relation_types": [{"name": "x", "source": ["nobody"]}], "entity_types": [{"name": "a"}]}
    response = api.post("/api/extraction/preview", json={"text": SENTENCE, "schema": bad})
    assert response.status_code == 400
    assert "relation_types[0].source[0]" in response.json()["error"]["message"]
    assert chat.requests == []


def test_mcp_preview_takes_a_schema(api_engine: Engine) -> None:
    server = create_server(api_engine, project="alpha", scopes=("read", "llm"))

    async def run() -> tuple[bool, Any]:
        with anyio.fail_after(30):
            async with Client(server) as client:
                result = await client.call_tool(
                    "extract_preview", {"text": SENTENCE, "schema": ONTOLOGY}
                )
                return result.is_error, tool_payload(result)

    error, body = anyio.run(run)
    assert error is False
    assert "membership" not in relations(body) and "home venue" in relations(body)
