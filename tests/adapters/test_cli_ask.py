"""``kgsearch ask``: offline (``--no-llm``), with no model configured, and against a
real local HTTP chat server that streams its answer (server-sent events)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer, chat_reply, sse_reply, start_chat_server
from click.testing import CliRunner, Result

from kgsearch.cli import cli

RECORDS: list[dict[str, Any]] = [
    {"kind": "object", "type": "Person", "key": "ada", "properties": {"name": "Ada Lovelace"}},
    {"kind": "object", "type": "Company", "key": "acme", "properties": {"name": "Acme"}},
    {
        "kind": "relationship",
        "type": "works_for",
        "source": {"type": "Person", "key": "ada"},
        "target": {"type": "Company", "key": "acme"},
    },
    {"kind": "source", "id": "s1", "title": "Memo"},
    {"kind": "chunk", "id": "c1", "source_id": "s1", "text": "Ada Lovelace works for Acme."},
]
ANSWER = ["Ada Lovelace ", "works for Acme ", "[R1]."]


class Kg:
    def __init__(self, directory: Path) -> None:
        self.db = directory / "graph.db"
        self.runner = CliRunner()
        path = directory / "graph.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n", encoding="utf-8")
        for args in (["import", str(path)], ["embed", "generate"]):
            assert self(*args).exit_code == 0

    def __call__(self, *args: str) -> Result:
        return self.runner.invoke(cli, ["--db", str(self.db), *args], catch_exceptions=False)


@pytest.fixture
def kg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Kg:
    monkeypatch.setenv("KGSEARCH_EMBED__MODEL", "fake:32")
    for name in ("KGSEARCH_LLM__API_KEY", "OPENAI_API_KEY", "KGSEARCH_LLM__BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return Kg(tmp_path)


@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    stopping = threading.Event()
    server, httpd = start_chat_server(lambda number, body: sse_reply(ANSWER), stopping)
    monkeypatch.setenv("KGSEARCH_LLM__MODEL", "openai:local-model")
    monkeypatch.setenv("KGSEARCH_LLM__BASE_URL", server.url)
    yield server
    stopping.set()
    httpd.shutdown()
    httpd.server_close()


def test_ask_no_llm_quotes_the_passages_with_the_context_and_references(kg: Kg) -> None:
    rel = json.loads(kg("--json", "relationships", "list").stdout)["items"][0]["id"]

    result = kg("ask", "who does Ada Lovelace work for", "--no-llm")

    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.index("Context") < out.index("Answer") < out.index("References")
    # the graph holds a document: its passage leads, the facts beside it
    assert out.index("## Sources") < out.index("## Relationships")
    assert "From the sources (no model asked; the best-matching sentences)" in out
    assert "- Ada Lovelace works for Acme. [S1]" in out
    assert f"[R1] Ada Lovelace works for Acme  relationship {rel}\n" in out


def test_ask_with_no_model_configured_suggests_no_llm(kg: Kg) -> None:
    result = kg("ask", "who does Ada work for")

    assert result.exit_code == 1
    assert "no chat model is configured for ask" in result.output
    assert "--no-llm" in result.output
    assert "KGSEARCH_LLM__API_KEY" in result.output
    assert "Traceback" not in result.output


def test_ask_streams_the_answer_from_a_chat_server_and_resolves_citations(
    kg: Kg, chat: ChatServer
) -> None:
    result = kg("ask", "who does Ada Lovelace work for")

    assert result.exit_code == 0, result.output
    assert "Ada Lovelace works for Acme [R1]." in result.stdout
    assert "answered by openai:local-model" in result.stdout
    [body] = chat.bodies
    assert body["stream"] is True
    prompt = body["messages"][1]["content"]
    assert "[R1] Ada Lovelace works for Acme" in prompt
    assert prompt.endswith("Question: who does Ada Lovelace work for")
    refs = result.stdout[result.stdout.index("References") :]
    assert "[R1] Ada Lovelace works for Acme" in refs
    assert "(not cited)" in refs  # the entities and passage the answer did not cite


def test_a_second_ask_is_answered_from_the_store_cache(kg: Kg, chat: ChatServer) -> None:
    first = json.loads(kg("--json", "ask", "who does Ada Lovelace work for").stdout)
    second = json.loads(kg("--json", "ask", "who does Ada Lovelace work for").stdout)

    assert len(chat.requests) == 1
    assert first["answer"] == second["answer"] == "".join(ANSWER)
    assert (first["cached"], second["cached"]) == (False, True)
    assert first["usage"] == {"prompt_tokens": 321, "completion_tokens": 12}
    cited = [r for r in second["references"] if r["cited"]]
    assert [(r["cite"], r["kind"]) for r in cited] == [("R1", "relationship")]


def test_a_server_that_does_not_stream_is_read_whole(
    kg: Kg, chat: ChatServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    stopping = threading.Event()
    server, httpd = start_chat_server(
        lambda n, body: (200, chat_reply("Acme [R1].", prompt_tokens=None)), stopping
    )
    monkeypatch.setenv("KGSEARCH_LLM__BASE_URL", server.url)
    record = tmp_path / "ask.jsonl"
    try:
        result = kg("ask", "who does Ada work for", "--record", str(record))
    finally:
        stopping.set()
        httpd.shutdown()
        httpd.server_close()

    assert result.exit_code == 0, result.output
    assert "Acme [R1]." in result.stdout
    replayed = kg("--json", "ask", "who does Ada work for", "--replay", str(record))
    assert json.loads(replayed.stdout)["answer"] == "Acme [R1]."


def test_a_failing_chat_server_is_a_clean_error(kg: Kg, monkeypatch: pytest.MonkeyPatch) -> None:
    stopping = threading.Event()
    server, httpd = start_chat_server(lambda n, body: (404, {"error": "no model"}), stopping)
    monkeypatch.setenv("KGSEARCH_LLM__MODEL", "openai:missing")
    monkeypatch.setenv("KGSEARCH_LLM__BASE_URL", server.url)
    monkeypatch.setenv("KGSEARCH_LLM__CACHE", "false")
    try:
        result = kg("ask", "who does Ada work for")
    finally:
        stopping.set()
        httpd.shutdown()
        httpd.server_close()

    assert result.exit_code == 1
    assert "404" in result.output
    assert "Traceback" not in result.output


def test_an_empty_question_is_refused(kg: Kg) -> None:
    result = kg("ask", " ", "--no-llm")

    assert result.exit_code == 1
    assert "empty" in result.output
