"""Community reports written by real models: the 82 GraphRAG-style report replies that
gpt-4o (50) and gpt-3.5-turbo (32) wrote for *A Christmas Carol* in nano-graphrag's
response caches (shared/eval-data/christmas-carol-graphrag: github.com/hhy-huang/
nano-graphrag @ e3a575f4, MIT License, Copyright (c) 2024 Gustavo Ye; the book is
Project Gutenberg eBook #24022, public domain in the US).

Each reply is read by the report parser, and a whole LLM build runs over HTTP against
a local chat server that answers with those real replies (only the chat-completion
envelope around them is made up).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer, chat_reply, start_chat_server
from eval_data import EVAL_DATA

from kgsearch import Engine, connect
from kgsearch.communities.reports import (
    MAX_REPORT_CHARS,
    TRUNCATED,
    Material,
    Member,
    parse_report,
)
from kgsearch.community_values import CommunityRecord
from kgsearch.config import LLMSettings
from kgsearch.errors import ProviderError
from kgsearch.model import ObjectIn, ObjectRef, RelationshipIn
from kgsearch.testing import FakeEmbedder

CAROL = EVAL_DATA / "christmas-carol-graphrag"
CACHES = {
    "gpt-4o": CAROL / "nano-graphrag-test-fixture" / "mock_cache.json",
    "gpt-3.5-turbo": CAROL / "nano-graphrag-fork-dickens" / "kv_store_llm_response_cache.json",
}


def _recorded() -> list[tuple[str, str]]:
    """(model, reply) of every community report in the two caches, in file order."""
    found = []
    for path in CACHES.values():
        for entry in json.loads(path.read_text("utf-8")).values():
            if '"findings"' in entry["return"]:
                found.append((entry["model"], entry["return"]))
    return found


RECORDED = _recorded()


def _material(members: int = 3) -> Material:
    community = CommunityRecord(
        id="c0-test",
        level=0,
        parent=None,
        members=tuple(f"o{i}" for i in range(members)),
        size=members,
        rank=1.0,
        build_id="b",
    )
    return Material(
        community=community,
        members=[Member(id=f"o{i}", name=f"Member {i}", type="person") for i in range(members)],
        edges=[],
    )


def test_the_caches_hold_the_documented_number_of_reports() -> None:
    models = [model for model, _ in RECORDED]
    assert models.count("gpt-4o") == 50 and models.count("gpt-3.5-turbo") == 32


@pytest.mark.parametrize("index", range(len(RECORDED)))
def test_every_real_report_reply_is_read_whole(index: int) -> None:
    _, reply = RECORDED[index]
    recorded = json.loads(reply)

    report = parse_report(reply, _material(), {}, {})

    assert report.title == " ".join(recorded["title"].split())
    assert report.summary == " ".join(recorded["summary"].split())
    assert report.rating == pytest.approx(float(recorded["rating"]))
    assert [f.summary for f in report.findings] == [
        " ".join(f["summary"].split()) for f in recorded["findings"]
    ][: len(report.findings)]
    assert report.findings, "every recorded reply has findings"
    assert all(f.explanation for f in report.findings)
    assert report.method == "llm"


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    replies = itertools.cycle(reply for _, reply in RECORDED)
    lock = threading.Lock()

    def respond(number: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with lock:
            return 200, chat_reply(next(replies), model="gpt-4o")

    stopping = threading.Event()
    server, httpd = start_chat_server(respond, stopping)
    yield server
    stopping.set()
    httpd.shutdown()
    httpd.server_close()


def test_an_llm_build_over_http_stores_the_real_replies_and_caches_them(
    tmp_path: Path, chat: ChatServer
) -> None:
    llm = LLMSettings(model="openai:gpt-4o", base_url=chat.url)
    with Engine(
        connect(str(tmp_path / "carol.db")), embedder=FakeEmbedder(16), llm_settings=llm
    ) as engine:
        groups = [["Scrooge", "Marley", "Cratchit"], ["Fezziwig", "Belle", "Fan"]]
        engine.add_objects(
            [ObjectIn(type="Person", key=name) for group in groups for name in group]
        )
        engine.add_relationships(
            [
                RelationshipIn(
                    type="KNOWS",
                    source=ObjectRef(type="Person", key=a),
                    target=ObjectRef(type="Person", key=b),
                )
                for group in groups
                for a, b in itertools.combinations(group, 2)
            ]
        )

        built = engine.build_communities(method="llm")
        titles = {json.loads(reply)["title"] for _, reply in RECORDED}
        listed = engine.list_communities()
        asked = len(chat.requests)

        again = engine.build_communities(method="llm", force=True)

    assert built.failed == 0 and built.reports == len(listed.items) >= 2
    assert asked == built.calls == built.reports, "one request per community report"
    assert {item["title"] for item in listed.items} <= {" ".join(t.split()) for t in titles}
    assert all(r["path"] == "/v1/chat/completions" for r in chat.requests)
    # forced again over the same material: every report comes from the response cache
    assert again.reports == built.reports and again.calls == 0
    assert len(chat.requests) == asked


def test_a_runaway_report_is_stored_cut_with_a_note() -> None:
    huge = "word " * 6_000  # 30,000 characters a field: a model that does not stop
    reply = json.dumps(
        {
            "title": huge,
            "summary": huge,
            "rating": 5,
            "rating_explanation": huge,
            "findings": [{"summary": huge, "explanation": huge}, huge],
        }
    )

    report = parse_report(reply, _material(), {}, {})

    sizes = {
        "title": len(report.title),
        "summary": len(report.summary),
        "rating_explanation": len(report.rating_explanation),
        "finding": max(len(f.summary) for f in report.findings),
        "explanation": len(report.findings[0].explanation),
    }
    assert sizes == MAX_REPORT_CHARS
    assert report.summary.endswith(TRUNCATED) and report.title.endswith(TRUNCATED)
    assert len(report.model_dump_json()) < 25_000


def test_a_reply_past_the_read_limit_is_not_a_report() -> None:
    reply = json.dumps({"title": "t", "summary": "word " * 2_000_000})  # 10 MB

    with pytest.raises(ProviderError) as caught:
        parse_report(reply, _material(), {}, {})

    assert "no report is stored" in caught.value.message
