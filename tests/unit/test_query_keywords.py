"""Query keywords (``keywords="llm"``): the parser, and the object legs searching the
low-level keywords, the relationship legs the high-level ones, the chunk legs the query."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgsearch import Engine
from kgsearch.config import LLMSettings
from kgsearch.errors import InvalidRequest, ProviderError
from kgsearch.llm import CachedLLM, DictCache, FakeLLM, Message
from kgsearch.model import ChunkIn, Kind, MentionIn, ObjectIn, ObjectRef, RelationshipIn, SourceIn
from kgsearch.search.keywords import (
    KEYWORDS_SCHEMA,
    MAX_KEYWORDS,
    KeywordReplyError,
    QueryKeywords,
    extract_keywords,
    parse_keywords,
)
from kgsearch.search.plan import embed_query, make_plan
from kgsearch.search.request import SearchRequest
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder

QUERY = "Who was the first computer programmer?"
REPLY = json.dumps(
    {
        "high_level_keywords": ["correspondence", "difference engine"],
        "low_level_keywords": ["Ada Lovelace", "programmer"],
    }
)


# the parser --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "reply",
    [
        REPLY,
        f"```json\n{REPLY}\n```",
        f"```\n{REPLY}\n```\nThese keywords cover the question.",
        f"Sure! Here are the keywords:\n{REPLY}\nLet me know if you need more.",
        f"Thinking {{about it}} first.\n{REPLY}",
    ],
)
def test_parser_finds_the_object_in_fences_and_prose(reply: str) -> None:
    assert parse_keywords(reply) == (
        ("correspondence", "difference engine"),
        ("Ada Lovelace", "programmer"),
    )


def test_parser_cleans_the_lists() -> None:
    reply = json.dumps(
        {
            "high_level": "careers,  science , ,careers",
            "low_level_keywords": ["  Ada\nLovelace ", "ada lovelace", "", 1843, None, True],
        }
    )

    assert parse_keywords(reply) == (("careers", "science"), ("Ada Lovelace", "1843"))


def test_parser_cuts_long_keywords_at_a_hundred_characters() -> None:
    long = "a" * 99 + " tail"

    assert parse_keywords(json.dumps({"low_level_keywords": [long]})) == ((), ("a" * 99,))


def test_parser_keeps_at_most_ten_of_each() -> None:
    reply = json.dumps({"high_level_keywords": [f"t{i}" for i in range(30)]})

    high, low = parse_keywords(reply)

    assert high == tuple(f"t{i}" for i in range(10)) and low == ()


def test_parser_accepts_empty_lists() -> None:
    assert parse_keywords('{"high_level_keywords": [], "low_level_keywords": []}') == ((), ())


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "I cannot help with that.",
        '{"high_level_keywords": ["a", "b"',  # cut off
        '{"keywords": ["a"]}',  # the wrong object
        '```json\n["a", "b"]\n```',  # a list, no object
    ],
)
def test_parser_rejects_replies_without_keywords(reply: str) -> None:
    with pytest.raises(KeywordReplyError):
        parse_keywords(reply)


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=15) | st.dictionaries(st.text(max_size=25), inner),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(
    before=st.text(max_size=40),
    value=st.dictionaries(
        st.sampled_from(["high_level_keywords", "low_level_keywords", "high_level", "x"]),
        _JSONISH,
    ),
    after=st.text(max_size=40),
)
def test_parser_never_fails_otherwise_and_bounds_what_it_returns(
    before: str, value: dict[str, object], after: str
) -> None:
    reply = f"{before}{json.dumps(value)}{after}"
    try:
        lists = parse_keywords(reply)
    except KeywordReplyError:
        return
    for words in lists:
        assert len(words) <= MAX_KEYWORDS
        assert all(0 < len(w) <= 100 and w == w.strip() for w in words)
        assert len({w.casefold() for w in words}) == len(words)


# extract_keywords ----------------------------------------------------------------------
def test_extract_asks_for_json_and_reports_the_source() -> None:
    llm = FakeLLM([REPLY])

    words = extract_keywords(llm, QUERY)

    assert (words.source, words.model) == ("llm", "fake:scripted")
    assert words.low_level == ("Ada Lovelace", "programmer")
    (call,) = llm.calls
    assert call.json_schema == KEYWORDS_SCHEMA and call.temperature == 0.0
    assert call.messages[-1] == Message("user", f"Question: {QUERY}")


def test_extract_falls_back_on_a_provider_error() -> None:
    words = extract_keywords(FakeLLM([ProviderError("connection refused")]), QUERY)

    assert words.source == "fallback" and (words.high_level, words.low_level) == ((), ())
    assert "connection refused" in (words.reason or "")
    assert "connection refused" in (words.warning() or "")


def test_extract_falls_back_when_the_model_cannot_be_made() -> None:
    def no_model() -> FakeLLM:
        raise ProviderError("no key")

    words = extract_keywords(no_model, QUERY)

    assert words.source == "fallback" and "no key" in (words.reason or "")


def test_an_unparsable_reply_is_not_replayed_from_the_cache() -> None:
    inner = FakeLLM(["no JSON here", REPLY])
    llm = CachedLLM(inner, DictCache())

    first = extract_keywords(llm, QUERY)
    second = extract_keywords(llm, QUERY)
    third = extract_keywords(llm, QUERY)

    assert first.source == "fallback" and "no keyword JSON" in (first.reason or "")
    assert second.source == "llm" and third.source == "cache"
    assert len(inner.calls) == 2


def test_two_empty_lists_fall_back() -> None:
    empty = '{"high_level_keywords": [], "low_level_keywords": []}'
    words = extract_keywords(FakeLLM([empty]), QUERY)

    assert words.source == "fallback" and words.reason == "the model gave no keywords"


# through the engine ---------------------------------------------------------------------
class RecordingEmbedder(FakeEmbedder):
    """The fake embedder, keeping every query text it embedded."""

    def __init__(self) -> None:
        super().__init__(32)
        self.queries: list[str] = []

    def embed_query(self, text: str):
        self.queries.append(text)
        return super().embed_query(text)


def build(engine: Engine) -> dict[str, str]:
    ada, babbage = engine.add_objects(
        [
            ObjectIn(type="person", key="ada", properties={"name": "Ada Lovelace"}),
            ObjectIn(type="person", key="babbage", properties={"name": "Charles Babbage"}),
        ]
    )
    (rel,) = engine.add_relationships(
        [
            RelationshipIn(
                type="corresponded_with",
                source=ada.id,
                target=babbage.id,
                description="Correspondence about the difference engine.",
                source_chunks=["c2"],
            )
        ]
    )
    engine.add_sources([SourceIn(id="s", title="Notes")])
    engine.add_chunks(
        [
            ChunkIn(id="c1", text="The first computer programmer wrote notes.", source_id="s"),
            ChunkIn(id="c2", text="Their letters ran for years.", source_id="s"),
        ]
    )
    engine.add_mentions(
        [MentionIn(chunk_id="c1", source_id="s", object=ObjectRef(type="person", key="ada"))]
    )
    engine.embed_pending()
    return {"ada": ada.id, "babbage": babbage.id, "rel": rel.id}


@pytest.fixture
def fake() -> FakeLLM:
    return FakeLLM([REPLY])


@pytest.fixture
def embedder() -> RecordingEmbedder:
    return RecordingEmbedder()


@pytest.fixture
def kw_engine(store: Store, fake: FakeLLM, embedder: RecordingEmbedder) -> Engine:
    engine = Engine(store, embedder=embedder, keywords_llm=fake)
    build(engine)
    return engine


def _params(explained: object, leg: str) -> str:
    statements = explained.statements[leg]  # type: ignore[attr-defined]
    return json.dumps([s.params for s in statements]).lower()


def test_object_legs_search_entities_relationship_legs_themes_chunks_the_query(
    kw_engine: Engine, embedder: RecordingEmbedder
) -> None:
    embedder.queries.clear()

    explained = kw_engine.explain(QUERY, recipe="mix", keywords="llm")

    words = explained.metadata["keywords"]
    assert words["source"] == "llm" and words["model"] == "fake:scripted"
    assert words["lowLevel"] == ["Ada Lovelace", "programmer"]
    assert words["highLevel"] == ["correspondence", "difference engine"]
    # each scope's vector leg embedded its own text, once
    assert sorted(embedder.queries) == sorted(
        ["Ada Lovelace, programmer", "correspondence, difference engine", QUERY]
    )
    objects, rels, chunks = (
        _params(explained, leg) for leg in ("objects:bm25", "relationships:bm25", "chunks:bm25")
    )
    assert "lovelace" in objects and "first" not in objects and "correspondence" not in objects
    assert "correspondence" in rels and "lovelace" not in rels and "first" not in rels
    assert "first" in chunks and "lovelace" not in chunks
    # the name leg looks up each entity the keywords name, besides the query
    assert "ada lovelace" in _params(explained, "objects:name")
    (note,) = explained.notes["keywords"]
    assert note.startswith("llm (fake:scripted): object legs search 'Ada Lovelace, programmer'")


def test_local_mode_finds_the_entity_only_the_keywords_name(store: Store) -> None:
    reply = json.dumps({"high_level_keywords": [], "low_level_keywords": ["Babbage"]})
    engine = Engine(store, embedder=FakeEmbedder(32), keywords_llm=FakeLLM([reply]))
    ids = build(engine)
    plain = engine.search("the engine's inventor", recipe="local")
    steered = engine.search("the engine's inventor", recipe="local", keywords="llm")

    def legs(response: object, row_id: str) -> set[str]:
        found = [r for r in response.results if r.id == row_id]  # type: ignore[attr-defined]
        return {h.leg for h in found[0].found_by} if found else set()

    # the query never says "Babbage": only the keyword reaches him lexically
    assert "objects:bm25" not in legs(plain, ids["babbage"])
    assert "objects:bm25" in legs(steered, ids["babbage"])
    # the graph holds chunks: its passages lead, the entities follow
    assert next(r for r in steered.results if r.type != "text").id == ids["babbage"]
    assert steered.metadata["keywords"]["highLevel"] == []


def test_a_repeated_query_is_answered_by_the_cache(kw_engine: Engine, fake: FakeLLM) -> None:
    first = kw_engine.search(QUERY, recipe="hybrid", keywords="llm")
    second = kw_engine.search(QUERY, recipe="hybrid", keywords="llm")

    assert len(fake.calls) == 1
    assert first.metadata["keywords"]["source"] == "llm"
    assert second.metadata["keywords"]["source"] == "cache"
    assert second.metadata["keywords"]["lowLevel"] == first.metadata["keywords"]["lowLevel"]
    assert [r.id for r in second.results] == [r.id for r in first.results]


def test_an_llm_error_falls_back_to_the_query(store: Store, embedder: RecordingEmbedder) -> None:
    llm = FakeLLM([ProviderError("the server said 503")])
    engine = Engine(store, embedder=embedder, keywords_llm=llm)
    build(engine)
    embedder.queries.clear()
    explained = engine.explain(QUERY, recipe="mix", keywords="llm")

    words = explained.metadata["keywords"]
    assert words["source"] == "fallback" and "503" in words["reason"]
    assert any("fell back to the query" in w for w in explained.metadata["warnings"])
    assert explained.fused  # the search still answered
    assert embedder.queries == [QUERY]
    assert "first" in _params(explained, "objects:bm25")


def test_a_hung_llm_falls_back_at_the_deadline(store: Store) -> None:
    release = threading.Event()

    def hang(messages: Sequence[Message]) -> str:
        release.wait(10)
        return REPLY

    settings = LLMSettings(keywords_deadline_seconds=0.2)
    engine = Engine(
        store, embedder=FakeEmbedder(32), llm_settings=settings, keywords_llm=FakeLLM([hang])
    )
    try:
        build(engine)
        response = engine.search(QUERY, recipe="mix", keywords="llm")
    finally:
        release.set()

    words = response.metadata["keywords"]
    assert words["source"] == "fallback" and "llm_unavailable" in words["reason"]
    assert response.results


def test_without_a_key_the_search_falls_back(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    engine = Engine(store, embedder=FakeEmbedder(32))
    build(engine)
    response = engine.search(QUERY, recipe="mix", keywords="llm")

    words = response.metadata["keywords"]
    assert words["source"] == "fallback" and "missing_credentials" in words["reason"]
    assert response.results


def test_naive_mode_asks_no_model(kw_engine: Engine, fake: FakeLLM) -> None:
    response = kw_engine.search(QUERY, recipe="naive", keywords="llm")

    assert not fake.calls
    assert response.metadata["keywords"]["source"] == "skipped"
    assert not response.metadata["warnings"]


def test_off_by_default(kw_engine: Engine, fake: FakeLLM) -> None:
    response = kw_engine.search(QUERY, recipe="mix")

    assert not fake.calls and "keywords" not in response.metadata


def test_an_unknown_keywords_value_is_a_clear_error(kw_engine: Engine) -> None:
    with pytest.raises(InvalidRequest, match="keywords"):
        kw_engine.search(QUERY, keywords="always")


def test_mmr_and_reports_measure_against_the_query_itself() -> None:
    embedder = RecordingEmbedder()
    words = QueryKeywords(high_level=("theme",), low_level=("Ada",), source="llm")
    request = SearchRequest(query=QUERY, recipe="mix", keywords="llm")
    plan = replace(make_plan(request), keywords=words)

    vectors = embed_query(plan, embedder.embed_query)

    assert embedder.queries == ["Ada", "theme", QUERY]  # scope order, each once
    assert vectors.first is not None
    assert np.array_equal(vectors.first, embedder.embed_query(QUERY))
    objects = vectors.by_kind[Kind.OBJECT]
    assert objects is not None
    assert np.array_equal(objects, embedder.embed_query("Ada"))
