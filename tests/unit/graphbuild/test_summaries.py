"""LLM summaries of long descriptions: map-reduce, kept while the descriptions are
unchanged, replayed from gpt-4o-mini's real summaries of *A Christmas Carol*
(nano-graphrag's description summaries, eval-data christmas-carol-graphrag)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from carol_extractions import recorded
from chat_server import ChatServer, chat_reply, start_chat_server
from eval_data import EVAL_DATA

from kgsearch import Engine, connect
from kgsearch.config import LLMSettings
from kgsearch.errors import ProviderError
from kgsearch.extract.schema import ExtractedEntity, ExtractedGraph, ExtractionResult
from kgsearch.extract.summarize import summarize
from kgsearch.lifecycle.ingest import delete_chunks
from kgsearch.lifecycle.summaries import summarize_descriptions
from kgsearch.llm.fake import FakeLLM
from kgsearch.model import ChunkIn, SourceIn
from kgsearch.testing import FakeEmbedder
from kgsearch.text.descriptions import DESCRIPTION_BUDGET, merge_descriptions
from kgsearch.writes.contributions import contributions, texts
from kgsearch.writes.extracted import ChunkExtraction, add_extractions

CACHE = EVAL_DATA / "christmas-carol-graphrag" / "nano-graphrag-fork-dickens"
SUMMARIES = [
    v["return"]
    for v in json.loads((CACHE / "kv_store_llm_response_cache.json").read_text("utf-8")).values()
    if v.get("model") == "gpt-4o-mini"
]
SCROOGE = next(s for s in SUMMARIES if s.startswith("Scrooge"))


def long_entity(engine: Engine, chunks: int = 12) -> None:
    """Ada described differently by each of ``chunks`` chunks, past the budget."""
    engine.add_sources([SourceIn(id="s")])
    engine.add_chunks([ChunkIn(id=f"c{i:02d}", text=f"t{i}", source_id="s") for i in range(chunks)])
    items = []
    for i in range(chunks):
        said = f"Ada wrote note {i} on the engine, " + " ".join(f"w{i}x{j}" for j in range(30))
        graph = ExtractedGraph(
            entities=[ExtractedEntity(name="Ada", type="person", description=said)]
        )
        items.append(
            ChunkExtraction(f"c{i:02d}", "s", ExtractionResult(chunk_id=f"c{i:02d}", graph=graph))
        )
    add_extractions(engine._writes(None), items)


def test_map_reduce_asks_per_group_then_joins_the_partials() -> None:
    llm = FakeLLM(default=lambda messages: "Part. " * 5)
    texts_ = [f"description {i} " + "x" * 1000 for i in range(20)]
    summary = summarize(llm, "Ada (person)", texts_, 200)
    maps = [c for c in llm.calls if "description 0 " in c.messages[-1].content]
    assert len(maps) == 1 and len(llm.calls) > 4  # several map calls, then reduces
    assert summary.calls == len(llm.calls) and len(summary.text) <= 200
    assert "Subject: Ada (person)" in llm.calls[0].messages[-1].content


def test_an_empty_reply_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="empty summary"):
        summarize(FakeLLM(default="  "), "Ada", ["a", "b"], 100)


def test_a_summary_is_used_while_its_descriptions_are_unchanged(engine: Engine) -> None:
    long_entity(engine)
    ada = engine.get_object_by_key("person", "ada")
    offline = ada.properties["description"]
    assert len(offline) <= DESCRIPTION_BUDGET
    assert offline == merge_descriptions(texts(contributions(ada.properties)))

    llm = FakeLLM(default="Ada wrote twelve notes on the engine.")
    report = summarize_descriptions(engine._writes(None), llm)
    assert (report.due, report.summarized, report.failed) == (1, 1, 0)
    ada = engine.get_object_by_key("person", "ada")
    assert ada.properties["description"] == "Ada wrote twelve notes on the engine."
    assert ada.properties["_summary"]["model"] == "fake:scripted"
    assert ada.embedding.status == "pending"
    again = summarize_descriptions(engine._writes(None), llm)
    assert again.due == 0 and len(llm.calls) == 1  # nothing left to do

    delete_chunks(engine._writes(None), ["c00"])  # the descriptions changed
    ada = engine.get_object_by_key("person", "ada")
    assert ada.properties["description"] == merge_descriptions(texts(contributions(ada.properties)))
    assert summarize_descriptions(engine._writes(None), llm).summarized == 1


def test_a_failing_model_keeps_the_offline_summary(engine: Engine) -> None:
    long_entity(engine)
    before = engine.get_object_by_key("person", "ada").properties["description"]
    report = summarize_descriptions(engine._writes(None), FakeLLM(default=ProviderError("down")))
    assert (report.due, report.summarized, report.failed) == (1, 0, 1)
    assert "down" in next(iter(report.errors.values()))
    assert engine.get_object_by_key("person", "ada").properties["description"] == before


@pytest.fixture
def server() -> Iterator[ChatServer]:
    def answer(_n: int, body: dict[str, Any]) -> tuple[Any, ...]:
        prompt = body["messages"][-1]["content"]
        if prompt.startswith("Subject: Scrooge (person)"):
            return 200, chat_reply(SCROOGE)
        return 200, chat_reply(SUMMARIES[len(prompt) % len(SUMMARIES)])

    stopping = threading.Event()
    chat, httpd = start_chat_server(answer, stopping)
    yield chat
    stopping.set()
    httpd.shutdown()
    httpd.server_close()


def test_real_gpt4o_mini_summary_over_the_gpt35_carol_graph(
    server: ChatServer, tmp_path: Path
) -> None:
    engine = Engine(
        connect(str(tmp_path / "kg.db")),
        embedder=FakeEmbedder(16),
        llm_settings=LLMSettings(model="openai:gpt-4o-mini", base_url=server.url, api_key="k"),
    )
    rows = recorded()
    engine.add_sources([SourceIn(id="carol")])
    engine.add_chunks([ChunkIn(id=c, text=t, source_id="carol") for c, t, _ in rows])
    add_extractions(engine._writes(None), [ChunkExtraction(c, "carol", r) for c, _, r in rows])

    report = engine.summarize_descriptions()

    assert report.due >= 1 and report.summarized == report.due and report.failed == 0
    scrooge = engine.get_object_by_key("person", "scrooge")
    assert scrooge.properties["description"] == SCROOGE.strip()
    assert scrooge.properties["_summary"]["model"].endswith("gpt-4o-mini")
    calls = len(server.requests)
    rerun = engine.summarize_descriptions()  # every row summarised already
    assert rerun.due == 0 and len(server.requests) == calls
    # the same rows in another project: it pays for its own replies (the response
    # cache is kept per project, so it tells no tenant what another summarised)
    copy = recorded()
    engine.add_sources([SourceIn(id="carol")], project="copy")
    engine.add_chunks(
        [ChunkIn(id=c, text=t, source_id="carol") for c, t, _ in copy], project="copy"
    )
    add_extractions(engine._writes("copy"), [ChunkExtraction(c, "carol", r) for c, _, r in copy])
    other = engine.summarize_descriptions(project="copy")
    assert other.summarized == report.summarized and other.cached == 0
    assert len(server.requests) == calls + other.calls
    engine.close()


def test_a_runaway_reply_is_cut_before_the_next_round_and_to_the_budget() -> None:
    runaway = "A sentence that never ends " + "and on " * 2_000_000  # 14 MB
    llm = FakeLLM(default=lambda messages: runaway)
    texts_ = [f"description {i} " + "x" * 1000 for i in range(20)]

    summary = summarize(llm, "Ada (person)", texts_, 200)

    assert len(summary.text) <= 200 and summary.text.endswith("…")
    reduce_prompt = llm.calls[-1].messages[-1].content
    assert len(reduce_prompt) < 30_000  # each partial was cut to 6,000 characters
