"""Legs in worker threads (BM25 always; vector legs where the store asks for it): the
same response as one leg after another, on every store."""

from __future__ import annotations

import itertools
import threading
from typing import Any

import pytest

from kgsearch.engine import Engine
from kgsearch.model import ObjectIn, RelationshipIn
from kgsearch.search import legs
from kgsearch.search.request import SearchRequest
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


def filled(store: Store) -> Engine:
    engine = Engine(store, embedder=FakeEmbedder(16))
    objects = engine.add_objects(
        [
            ObjectIn(type="Thing", key=f"k{i}", properties={"name": f"{w} {WORDS[i % 3]}"})
            for i, w in enumerate(WORDS)
        ]
    )
    engine.add_relationships(
        [
            RelationshipIn(type="near", source=a.id, target=b.id)
            for a, b in itertools.pairwise(objects)
        ]
    )
    engine.embed_pending()
    return engine


def untimed(debug: dict[str, Any] | None) -> dict[str, Any]:
    """A response's debug without the legs' times (which differ run to run), checking
    that each leg has one."""
    assert debug is not None
    details = dict(debug["fusion_details"])
    assert details.pop("leg_ms").keys() == details["legs"].keys()
    return {**debug, "fusion_details": details}


def test_parallel_and_serial_legs_give_the_same_response(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = filled(store)
    for query in ("alpha bravo", "charlie near delta", "golf"):
        request = SearchRequest(query=query, limit=5, include_debug=True)
        monkeypatch.setattr(legs, "_PARALLEL_LEGS", True)
        parallel = engine.search(request)
        monkeypatch.setattr(legs, "_PARALLEL_LEGS", False)
        serial = engine.search(request)
        assert parallel.results == serial.results
        assert parallel.metadata["legs"] == serial.metadata["legs"]
        assert untimed(parallel.debug) == untimed(serial.debug)


def test_vector_legs_leave_the_calling_thread_only_where_the_store_asks(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = filled(store)
    threads: list[str] = []
    search = store.vector_search

    def recording(*args: Any, **kwargs: Any) -> list[tuple[str, float]]:
        threads.append(threading.current_thread().name)
        return search(*args, **kwargs)

    monkeypatch.setattr(store, "vector_search", recording)
    engine.search(SearchRequest(query="alpha bravo", limit=5))
    assert len(threads) == 3  # objects, relationships, chunks
    caller = threading.current_thread().name
    if store.parallel_vector_legs:
        assert all(name.startswith("kgsearch-legs") for name in threads)
    else:
        assert threads == [caller] * 3


def test_a_search_inside_a_write_transaction_sees_its_rows_and_never_hangs(
    store: Store,
) -> None:
    # Legs in worker threads would neither see the uncommitted row nor, on an in-memory
    # SQLite store (one connection, held by the transaction), get a connection at all.
    engine = filled(store)
    found: list[list[str]] = []

    def search_in_transaction() -> None:
        with store.transaction():
            engine.add_objects([ObjectIn(type="Thing", key="new", properties={"name": "zulu"})])
            response = engine.search(SearchRequest(query="zulu", limit=10))
            found.append([getattr(r, "key", "") for r in response.results])

    worker = threading.Thread(target=search_in_transaction, daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "the search deadlocked inside the transaction"
    assert found and "new" in found[0]
