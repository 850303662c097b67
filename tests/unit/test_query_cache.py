"""The query-vector cache: a repeated query skips the embedder; another model or text
does not share vectors; failures are never kept."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from kgsearch import Engine, ObjectIn, RelationshipIn, SearchRequest, connect
from kgsearch.embed.base import Vector
from kgsearch.search.query_cache import QueryCache
from kgsearch.testing import FakeEmbedder


class Counting(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__(16)
        self.queries: list[str] = []

    def embed_query(self, text: str) -> Vector:
        self.queries.append(text)
        return super().embed_query(text)


def test_a_repeated_search_embeds_its_query_once() -> None:
    embedder = Counting()
    with Engine(connect(":memory:"), embedder=embedder) as engine:
        engine.add_objects([ObjectIn(type="P", key="ada", properties={"name": "Ada"})])
        engine.embed_pending()
        first = engine.search("Ada")
        second = engine.search("Ada")
        engine.search("Grace")
    assert embedder.queries == ["Ada", "Grace"]
    assert [r.id for r in first.results] == [r.id for r in second.results]


def test_entries_are_per_model_and_text_and_bounded() -> None:
    cache = QueryCache(size=2)
    calls: list[str] = []

    def fn(text: str) -> Vector:
        calls.append(text)
        return np.zeros(2, dtype=np.float32)

    for model, text in [("m", "a"), ("m", "a"), ("n", "a"), ("m", "b"), ("m", "a")]:
        cache.embed(model, fn, text)
    # ("m","a") was evicted by the third distinct key, so it is embedded again
    assert calls == ["a", "a", "b", "a"] and (cache.hits, cache.misses) == (1, 4)


def test_a_failure_is_not_kept() -> None:
    cache = QueryCache()

    def failing(text: str) -> Vector:
        raise RuntimeError("down")

    with pytest.raises(RuntimeError):
        cache.embed("m", failing, "a")
    assert cache.embed("m", lambda t: np.ones(2, dtype=np.float32), "a")[0] == 1.0


class CountingDocuments(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__(16)
        self.documents: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.documents.extend(texts)
        return super().embed_documents(texts)


def test_relation_type_vectors_outlive_the_search_that_embedded_them() -> None:
    # each search builds its context afresh; the relation-type vectors are cached per
    # query embedder, so that embedder must compare equal from one search to the next
    embedder = CountingDocuments()
    with Engine(connect(":memory:"), embedder=embedder) as engine:
        movie, person = engine.add_objects(
            [
                ObjectIn(type="Movie", key="m", properties={"name": "Heat"}),
                ObjectIn(type="Person", key="p", properties={"name": "Michael Mann"}),
            ]
        )
        engine.add_relationships(
            [RelationshipIn(type="directed_by", source=movie.id, target=person.id)]
        )
        engine.embed_pending()
        embedder.documents.clear()
        for query in ["who directed Heat", "Heat director", "the director of Heat"]:
            engine.search(SearchRequest(query=query))  # the anchored leg embeds types
    assert embedder.documents.count("directed by") == 1, embedder.documents


def test_embed_many_takes_cached_vectors_and_embeds_the_others_in_one_call() -> None:
    cache = QueryCache(size=8)
    made: list[list[str]] = []

    def fn(texts: Sequence[str]) -> list[Vector]:
        made.append(list(texts))
        return [np.full(2, len(t), np.float32) for t in texts]

    cache.put("m", "ab", np.zeros(2, np.float32))
    vectors = cache.embed_many("m", fn, ["ab", "abc", "a", "abc"])
    assert made == [["abc", "a"]]
    assert [v.tolist() for v in vectors] == [[0, 0], [3, 3], [1, 1], [3, 3]]
    assert cache.get("m", "a") is not None
    assert (cache.hits, cache.misses) == (1, 2)
