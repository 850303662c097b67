"""Store calls per search, counted by a proxy over the store (issue 13's acceptance bound).

A search reads in a fixed number of batched calls whatever its pool size: default ≤ 11
(issue 13's bound of 10, plus the anchored relationship leg's edge read; its names are
looked up with the name leg's, in one call that gives their keys too), with chunks and
their mentions in the pool ≤ 12, with the ``mentions`` reranker ≤ 16, and the same
count at limit 5 and 50 or with 10 and 100 chunks. A graph that holds chunks is a graph
built from documents: its searches read one more batch, the mentions of the
``graph:evidence`` leg (:data:`EVIDENCE`). The engines' clocks are frozen, so the store
info's re-read once it is stale (and the check for documents) never lands inside a
counted search; one test moves the clock on to count that re-read."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from kgsearch.engine import Engine
from kgsearch.model import ChunkIn, MentionIn, ObjectIn, RelationshipIn, SourceIn
from kgsearch.search.service import INFO_TTL_SECONDS
from kgsearch.store import connect
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "metaqa-movies.jsonl"
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
# the anchored relationship leg adds one edge read; its names are looked up with the
# name leg's, in one call that gives their keys too (a name spelt exactly beats one
# matched ignoring case)
BASE_LEGS = {
    "vector_search": 3,
    "text_search": 3,
    "named_objects": 1,
    "typed_edges": 1,
}
ROWS = {"get_objects": 1, "get_relationships": 1, "get_chunks": 1}
# a graph with chunks (built from documents): the graph:evidence leg's mentions
EVIDENCE = Counter({"mentions": 1})


def calls_of(*parts: dict[str, int]) -> Counter[str]:
    """The sum of the parts' store calls."""
    return sum((Counter(p) for p in parts), Counter())


class CountingStore:
    """Passes every attribute through to ``inner`` and records each public method call."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self._lock = threading.Lock()  # legs call the store from worker threads
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if name.startswith("_") or not callable(value):
            return value

        def counted(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.calls.append(name)
            return value(*args, **kwargs)

        return counted

    def searched(self, engine: Engine, query: str, **options: Any) -> Counter[str]:
        """The store calls one ``engine.search``, by method name."""
        self.calls.clear()
        engine.search(query, **options)
        return Counter(self.calls)


def filled(store: Store, chunks: int) -> tuple[Engine, CountingStore, str]:
    """An engine over a counted store with objects, relationships, sources, ``chunks``
    chunks and mentions; returns it with the proxy and the id of a centre object."""
    counting = CountingStore(store)
    engine = Engine(cast(Store, counting), embedder=FakeEmbedder(16))
    engine._info.clock = lambda: 0.0  # the store info never goes stale in these tests
    engine._documents.clock = lambda: 0.0  # nor does the check for documents
    objects = engine.add_objects(
        [
            ObjectIn(type="Film", key=f"f{i}", properties={"name": f"{w} film {WORDS[i % 3]}"})
            for i, w in enumerate(WORDS * 3)
        ]
    )
    rels = engine.add_relationships(
        [
            RelationshipIn(type="sequel_of", source=a.id, target=b.id)
            for a, b in itertools.pairwise(objects)
        ]
    )
    engine.add_sources([SourceIn(id=f"s{i}", title=f"review site {i}") for i in range(5)])
    engine.add_chunks(
        [
            ChunkIn(
                id=f"c{i}",
                text=f"review: the {WORDS[i % 8]} film beats {WORDS[(i + 3) % 8]} film",
                source_id=f"s{i % 5}" if i % 4 else None,
            )
            for i in range(chunks)
        ]
    )
    mentions = [
        MentionIn(chunk_id=f"c{i}", object=objects[i % len(objects)].id) for i in range(chunks)
    ]
    mentions += [MentionIn(source_id=f"s{i % 5}", object=o.id) for i, o in enumerate(objects)]
    mentions += [
        MentionIn(chunk_id=f"c{i}", relationship_id=rels[i % len(rels)].id)
        for i in range(0, chunks, 3)
    ]
    engine.add_mentions(mentions)
    engine.embed_pending()
    engine.search("warm up")  # reads the store info once for this engine
    return engine, counting, objects[0].id


def test_store_info_is_read_once_per_engine(store: Store) -> None:
    engine, counting, _ = filled(store, chunks=10)
    counting.calls.clear()
    for query in ("alpha", "bravo", "golf"):
        engine.search(query)
    assert "info" not in counting.calls


def test_store_info_is_read_again_once_it_is_stale(store: Store) -> None:
    engine, counting, _ = filled(store, chunks=0)
    now = 0.0
    engine._info.clock = lambda: now

    now = INFO_TTL_SECONDS - 0.1
    fresh = counting.searched(engine, "alpha film")
    now = INFO_TTL_SECONDS
    stale = counting.searched(engine, "alpha film")
    again = counting.searched(engine, "alpha film")

    assert (fresh, stale, again) == (
        calls_of(BASE_LEGS, ROWS),
        calls_of(BASE_LEGS, ROWS, {"info": 1}),
        calls_of(BASE_LEGS, ROWS),
    )


def test_default_search_reads_the_legs_and_one_batch_of_rows(store: Store) -> None:
    engine, counting, _ = filled(store, chunks=0)
    calls = counting.searched(engine, "alpha film")
    assert calls == calls_of(BASE_LEGS, ROWS)
    assert calls.total() <= 11


def test_chunks_with_mentions_in_the_pool_cost_no_extra_call(store: Store) -> None:
    engine, counting, _ = filled(store, chunks=10)
    response = engine.search("alpha film review")
    assert {r.type for r in response.results} == {"graph", "relationship", "text"}
    calls = counting.searched(engine, "alpha film review")
    assert calls == calls_of(BASE_LEGS, ROWS, EVIDENCE)
    assert calls.total() <= 12


def test_mentions_reranker_reads_mentions_chunks_and_sources_once(store: Store) -> None:
    engine, counting, _ = filled(store, chunks=10)
    calls = counting.searched(engine, "alpha film review", reranker="mentions")
    assert calls == calls_of(BASE_LEGS, ROWS, EVIDENCE, {"mentions": 1, "get_sources": 1})
    assert calls.total() <= 16


def test_node_distance_reads_one_traversal(store: Store) -> None:
    engine, counting, center = filled(store, chunks=10)
    calls = counting.searched(
        engine, "alpha film review", reranker="node_distance", center_id=center
    )
    assert calls == calls_of(BASE_LEGS, ROWS, EVIDENCE, {"mentions": 1, "neighbors": 1})


def test_mmr_reads_vectors_once_per_kind(store: Store) -> None:
    engine, counting, _ = filled(store, chunks=10)
    calls = counting.searched(engine, "alpha film review", reranker="mmr")
    assert calls == calls_of(BASE_LEGS, ROWS, EVIDENCE, {"vectors": 3})


def test_agreement_reads_nothing_more(store: Store) -> None:
    engine, counting, _ = filled(store, chunks=10)
    calls = counting.searched(engine, "alpha film review", reranker="agreement")
    assert calls == calls_of(BASE_LEGS, ROWS, EVIDENCE)


def test_the_mentioned_leg_reads_the_chunks_mentions_once(store: Store) -> None:
    engine, counting, _ = filled(store, chunks=10)
    calls = counting.searched(engine, "alpha film review", weights={"graph:mentioned": 1.0})
    assert calls == calls_of(BASE_LEGS, ROWS, EVIDENCE, {"mentions": 1})


REQUESTS: dict[str, dict[str, Any]] = {
    "default": {},
    "mentions": {"reranker": "mentions"},
    "node_distance": {"reranker": "node_distance"},
    "mmr": {"reranker": "mmr"},
    "mentioned": {"weights": {"graph:mentioned": 1.0}},
    "bfs": {"graph": "bfs", "graph_depth": 2},
    "ppr-filtered": {"graph": "ppr", "filters": {"object_types": ["Film"]}},
    "type_hint": {"type_hint": "film"},
}


@pytest.mark.parametrize("options", list(REQUESTS.values()), ids=list(REQUESTS))
def test_store_calls_do_not_depend_on_the_pool_size(
    store_factory: Callable[[], Store], options: dict[str, Any]
) -> None:
    counts = []
    for chunks in (10, 100):
        engine, counting, center = filled(store_factory(), chunks=chunks)
        if options.get("reranker") == "node_distance":
            options = {**options, "center_id": center}
        for limit in (5, 50):
            request = {**options, "limit": limit}
            counts.append(counting.searched(engine, "alpha film review", **request))
    assert counts[1:] == counts[:1] * 3


@pytest.mark.slow
@pytest.mark.skipif(not SAMPLE.is_file(), reason="sample graph not present")
def test_store_calls_on_the_sample_graph() -> None:
    counting = CountingStore(connect(":memory:"))
    try:
        engine = Engine(cast(Store, counting), embedder=FakeEmbedder(16))
        engine.import_files([SAMPLE])
        movies = [o.id for o in engine.list_rows("object", limit=200).items if o.type == "Movie"]
        engine.add_chunks(
            [ChunkIn(id=f"c{i}", text=f"a review of movie number {i}") for i in range(100)]
        )
        engine.add_mentions(
            [MentionIn(chunk_id=f"c{i}", object=movies[i % len(movies)]) for i in range(100)]
        )
        engine.embed_pending()
        engine.search("warm up")
        engine._documents.clock = lambda: 0.0
        for options, bound in (({}, 13), ({"reranker": "mentions"}, 17)):
            counts = []
            for limit in (5, 50):
                request = {**options, "limit": limit}
                query = "who directed the movie review"
                counts.append(counting.searched(engine, query, **request))
            assert counts[0] == counts[1]
            assert counts[0].total() <= bound
    finally:
        counting._inner.close()
