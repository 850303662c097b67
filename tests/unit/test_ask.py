"""Engine.ask with a scripted chat model (FakeLLM): the cited context it is sent, the
references its citations resolve to, and the offline answer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kgsearch import ChunkIn, Engine, ObjectIn, RelationshipIn, SourceIn, connect
from kgsearch.errors import InvalidRequest
from kgsearch.llm.fake import FakeLLM
from kgsearch.search.answer import SYSTEM_PROMPT
from kgsearch.testing import FakeEmbedder


@pytest.fixture
def engine() -> Iterator[Engine]:
    with Engine(connect(":memory:"), embedder=FakeEmbedder(32)) as engine:
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


def test_the_model_gets_the_cited_context_and_its_citations_resolve(engine: Engine) -> None:
    llm = FakeLLM(["Ada works for Acme Corp [R1][S1]. [X9]"])
    pieces: list[str] = []

    answer = engine.ask("who does Ada work for", llm=llm, on_text=pieces.append)

    [call] = llm.calls
    assert call.messages[0].content == SYSTEM_PROMPT
    assert "[R1] Ada Lovelace works for Acme Corp" in call.messages[1].content
    # a graph built from documents: the passages lead, with their source's title
    assert call.messages[1].content.startswith("Context:\n\n## Sources\n[S1] (Notes) Ada works")
    assert pieces == ["Ada works for Acme Corp [R1][S1]. [X9]"]  # not streaming: whole
    cited = {r.cite: (r.kind, r.id) for r in answer.references if r.cited}
    rel = engine.list_rows("relationship").items[0].id
    assert cited == {"R1": ("relationship", rel), "S1": ("chunk", "c1")}
    assert {r.cite for r in answer.references} >= {"E1", "R1", "S1"}
    assert (answer.offline, answer.model) == (False, "fake:scripted")


def test_offline_answers_quote_the_passages_of_documents(engine: Engine) -> None:
    answer = engine.ask("who does Ada work for", llm=False)

    assert answer.answer.splitlines()[1:] == [
        "- Ada works for Acme Corp. [S1]",
        "- Ada Lovelace works for Acme Corp [R1]",
        "",
        "Sources:",
        "[S1] Notes",
    ]
    assert {r.cite for r in answer.references if r.cited} == {"S1", "R1"}
    assert answer.offline and answer.model is None


def test_offline_answers_list_the_top_facts_relationships_first() -> None:
    with Engine(connect(":memory:"), embedder=FakeEmbedder(32)) as engine:
        ada, acme = engine.add_objects(
            [
                ObjectIn(type="Person", key="ada", properties={"name": "Ada Lovelace"}),
                ObjectIn(type="Org", key="acme", properties={"name": "Acme Corp"}),
            ]
        )
        engine.add_relationships([RelationshipIn(type="WORKS_FOR", source=ada.id, target=acme.id)])
        engine.embed_pending()
        answer = engine.ask("who does Ada work for", llm=False)

    lines = answer.answer.splitlines()
    assert lines[0] == "Top facts from the graph (no model asked):"
    assert lines[1] == "- Ada Lovelace works for Acme Corp [R1]"
    assert answer.offline and answer.model is None
    assert all(r.cited for r in answer.references)


def test_a_question_nothing_matches_asks_no_model() -> None:
    llm = FakeLLM()

    with Engine(connect(":memory:"), embedder=FakeEmbedder(32)) as empty:
        answer = empty.ask("who does Ada work for", llm=llm)

    assert llm.calls == []
    assert answer.answer == "Nothing in the graph matches the question."
    assert answer.references == []


def test_an_empty_question_is_refused(engine: Engine) -> None:
    with pytest.raises(InvalidRequest, match="empty"):
        engine.ask("  ", llm=False)


def test_no_configured_model_says_how_to_set_one(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(InvalidRequest, match="--no-llm"):
        engine.ask("who does Ada work for")
