"""Replay of each bad-reply failure mode through the real OpenAI-compatible client,
a real local HTTP server (tests/chat_server.py) and real SQLite: the other chunks are
extracted, the bad one is cleaned or fails with its reason (the raw reply kept), a
later run after recovery completes, and nothing stays leased."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer, chat_reply, start_chat_server

from kgsearch import Engine
from kgsearch.config import ExtractSettings, LLMSettings
from kgsearch.store import connect
from kgsearch.testing import FakeEmbedder

PEOPLE = [
    ("Ada Lovelace", "Charles Babbage"),
    ("Grace Hopper", "Howard Aiken"),
    ("Alan Turing", "Alonzo Church"),
]
BAD = ("Edsger Dijkstra", "Tony Hoare")
TEXTS = [f"{a} worked with {b} for many years in the same laboratory." for a, b in PEOPLE]
BAD_TEXT = f"{BAD[0]} worked with {BAD[1]} for many years in the same laboratory."


def good_reply(a: str, b: str, description: str = "") -> str:
    return json.dumps(
        {
            "entities": [
                {"name": a, "type": "person", "description": description or f"{a} is a person."},
                {"name": b, "type": "person", "description": f"{b} is a person."},
            ],
            "relationships": [
                {
                    "source": a,
                    "target": b,
                    "relation": "worked with",
                    "description": f"{a} and {b} worked together for many years in one lab.",
                }
            ],
        }
    )


@dataclass
class Script:
    """What the server answers for the bad chunk (the others always get a good reply)."""

    bad: tuple[Any, ...] = (200, chat_reply(good_reply(*BAD)))

    def answer(self, number: int, body: dict[str, Any]) -> tuple[Any, ...]:
        prompt = body["messages"][-1]["content"]
        if BAD[0] in prompt:
            return self.bad
        for a, b in PEOPLE:
            if a in prompt:
                return 200, chat_reply(good_reply(a, b))
        return 200, chat_reply("{}")


@pytest.fixture
def script() -> Iterator[tuple[Script, ChatServer]]:
    stopping = threading.Event()
    scripted = Script()
    server, httpd = start_chat_server(scripted.answer, stopping)
    yield scripted, server
    stopping.set()
    httpd.shutdown()
    httpd.server_close()


def engine_for(server: ChatServer, path: Path) -> Engine:
    return Engine(
        connect(f"sqlite:///{path}"),
        embedder=FakeEmbedder(16),
        extract_settings=ExtractSettings(extractor="llm", max_attempts=2, backoff_seconds=0.0),
        llm_settings=LLMSettings(
            model="openai:gpt-4o", base_url=server.url, api_key="k", max_retries=0
        ),
    )


def ingest_all(engine: Engine) -> Any:
    return engine.ingest(texts=[*TEXTS, BAD_TEXT], title="people")


def bad_record(engine: Engine) -> Any:
    (chunk,) = [c for c in engine.list_rows("chunk", limit=100).items if BAD[0] in c.text]
    return engine.extraction_record(chunk.id)


def assert_others_extracted_and_nothing_leased(engine: Engine) -> None:
    keys = {o.key for o in engine.list_rows("object", limit=100).items}
    assert {a.lower() for a, _ in PEOPLE} <= keys
    assert engine.extraction_status().counts["running"] == 0


def recover(engine: Engine, scripted: Script, server: ChatServer) -> None:
    """The model answers well again: a retry asks it (no cached bad reply) and
    completes."""
    scripted.bad = (200, chat_reply(good_reply(*BAD)))
    calls = len(server.requests)
    engine.retry_extraction(dead=True)
    report = engine.extract()
    assert (report.extracted, report.left, len(server.requests)) == (1, 0, calls + 1)
    status = engine.extraction_status()
    assert status.counts["done"] == 4 and status.counts["running"] == 0
    assert "edsger dijkstra" in {o.key for o in engine.list_rows("object", limit=100).items}


def describe(reply: str) -> tuple[int, dict[str, Any]]:
    return 200, chat_reply(reply)


def test_a_lone_surrogate_is_cleaned_and_the_project_goes_on(
    script: tuple[Script, ChatServer], tmp_path: Path
) -> None:
    scripted, server = script
    reply = good_reply(*BAD, description="Dijkstra \ud83d wrote about semaphores.")
    scripted.bad = describe(reply)
    engine = engine_for(server, tmp_path / "kg.db")
    report = ingest_all(engine)
    assert report.extraction is not None and report.extraction.extracted == 4
    assert_others_extracted_and_nothing_leased(engine)
    record = bad_record(engine)
    assert record.status == "done"
    assert {
        "kind": "record",
        "reason": "cleaned",
        "item": "1 lone surrogate(s) replaced by U+FFFD",
    } in (record.result["rejected"])
    dijkstra = engine.get_object_by_key("person", "edsger dijkstra")
    assert "Dijkstra \ufffd wrote" in dijkstra.properties["description"]
    # a later spaCy ingest of the same project is not blocked
    later = engine.ingest(texts=["Barbara Liskov taught at MIT."], extractor="spacy")
    assert later.ok and later.extraction is not None and later.extraction.extracted == 1


def test_nul_characters_are_removed(script: tuple[Script, ChatServer], tmp_path: Path) -> None:
    scripted, server = script
    scripted.bad = describe(good_reply(*BAD, description="Dijkstra\x00 wrote about semaphores."))
    engine = engine_for(server, tmp_path / "kg.db")
    assert ingest_all(engine).ok
    assert_others_extracted_and_nothing_leased(engine)
    dijkstra = engine.get_object_by_key("person", "edsger dijkstra")
    assert "Dijkstra wrote about semaphores." in dijkstra.properties["description"]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (
            (200, chat_reply(good_reply(*BAD)[:150], finish_reason="length")),
            "truncated_reply: the model stopped at its token limit",
        ),
        ((200, chat_reply("{" * 1_000_000)), "unparseable: the model's reply holds no entity"),
        (
            (200, chat_reply(good_reply(*BAD) + " " * 30_000_000)),
            "reply_too_long: the reply has 30,000,",
        ),
    ],
    ids=["truncated", "1 MB of braces", "30 MB reply"],
)
def test_a_reply_that_cannot_be_used_fails_its_chunk_only_and_recovers(
    script: tuple[Script, ChatServer], tmp_path: Path, bad: tuple[Any, ...], reason: str
) -> None:
    scripted, server = script
    scripted.bad = bad
    engine = engine_for(server, tmp_path / "kg.db")
    report = ingest_all(engine)
    assert report.extraction is not None
    assert (report.extraction.extracted, report.extraction.dead) == (3, 1)
    assert not report.ok
    assert_others_extracted_and_nothing_leased(engine)
    record = bad_record(engine)
    assert (record.status, record.attempts) == ("dead", 2)
    assert (record.last_error or "").startswith(reason)
    assert "raw reply:" in (record.last_error or "")
    recover(engine, scripted, server)


def test_unknown_and_unusable_endpoints_are_rejected_not_written(
    script: tuple[Script, ChatServer], tmp_path: Path
) -> None:
    scripted, server = script
    long_name = "Tony " * 2000
    reply = {
        "entities": [{"name": BAD[0], "type": "person"}, {"name": long_name, "type": "person"}],
        "relationships": [
            {"source": BAD[0], "target": "Nobody In The Text", "relation": "knew"},
            {"source": BAD[0], "target": "...", "relation": "knew"},
            {"source": BAD[0], "target": long_name, "relation": "knew"},
            {"source": BAD[0], "target": BAD[1], "relation": "workedWith"},
        ],
    }
    scripted.bad = describe(json.dumps(reply))
    engine = engine_for(server, tmp_path / "kg.db")
    assert ingest_all(engine).ok
    assert_others_extracted_and_nothing_leased(engine)
    record = bad_record(engine)
    assert [r["reason"] for r in record.result["rejected"]] == [
        "long_name",
        "unknown_entity",
        "empty_name",
        "long_name",
    ]
    (relation,) = [
        r for r in engine.list_rows("relationship", limit=100).items if "Dijkstra" in r.description
    ]
    assert relation.description.startswith("Edsger Dijkstra worked with Tony Hoare")


def test_a_malformed_piece_with_a_lone_surrogate_is_kept_escaped(
    script: tuple[Script, ChatServer], tmp_path: Path
) -> None:
    scripted, server = script
    reply = json.loads(good_reply(*BAD))
    reply["entities"].append({"type": "\ud83d", "note": "nul \x00 here"})
    scripted.bad = describe(json.dumps(reply))
    engine = engine_for(server, tmp_path / "kg.db")
    assert ingest_all(engine).ok
    assert_others_extracted_and_nothing_leased(engine)
    (malformed,) = [r for r in bad_record(engine).result["rejected"] if r["reason"] == "malformed"]
    assert malformed["item"] == {"type": "\\ud83d", "note": "nul \\u0000 here"}
