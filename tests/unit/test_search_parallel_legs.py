"""Legs in worker threads (BM25 always; vector legs where the store asks for it): the
same response as one leg after another, on every store."""

from __future__ import annotations

import itertools
import threading
from typing import Any

import pytest

from kgsearch.engine import Engine
from kgsearch.errors import StoreError
from kgsearch.model import Kind, ObjectIn, RelationshipIn
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


def scan_threads(
    store: Store, monkeypatch: pytest.MonkeyPatch, fail: Kind | None = None
) -> dict[Kind, str]:
    """The thread each vector leg of the next search runs in, by kind; the leg of
    ``fail`` raises instead of searching."""
    threads: dict[Kind, str] = {}
    search = store.vector_search

    def recording(project: str, kind: Kind, *args: Any, **kwargs: Any) -> list[tuple[str, float]]:
        threads[kind] = threading.current_thread().name
        if kind is fail:
            raise StoreError(f"the {kind.value} scan failed")
        return search(project, kind, *args, **kwargs)

    monkeypatch.setattr(store, "vector_search", recording)
    return threads


def test_vector_legs_leave_the_calling_thread_only_where_the_store_asks(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = filled(store)
    threads = scan_threads(store, monkeypatch)
    engine.search(SearchRequest(query="alpha bravo", limit=5))
    assert threads.keys() == {Kind.OBJECT, Kind.RELATIONSHIP, Kind.CHUNK}
    caller = threading.current_thread().name
    if store.parallel_vector_legs:
        assert all(name.startswith("kgsearch-legs") for name in threads.values())
    else:  # alone in the process: the scans but the relationships' go to a leg worker
        assert threads[Kind.RELATIONSHIP] == caller
        assert threads[Kind.OBJECT].startswith("kgsearch-legs")
        assert threads[Kind.CHUNK].startswith("kgsearch-legs")


def test_in_process_scans_stay_in_the_calling_thread_beside_another_search(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # under load a hand-off buys no time and costs CPU: with another search in flight
    # (as in a server's worker) every in-process scan runs in the calling thread; a
    # server store's vector legs are queries and still go to workers
    engine = filled(store)
    threads = scan_threads(store, monkeypatch)
    with legs.searching():  # the other search
        engine.search(SearchRequest(query="alpha bravo", limit=5))
    if store.parallel_vector_legs:
        assert all(name.startswith("kgsearch-legs") for name in threads.values())
    else:
        assert set(threads.values()) == {threading.current_thread().name}
    assert legs.searches_in_flight() == 0


@pytest.mark.parametrize("fail", [Kind.OBJECT, Kind.RELATIONSHIP])
def test_a_failing_scan_reaches_the_caller_from_either_thread(
    store: Store, monkeypatch: pytest.MonkeyPatch, fail: Kind
) -> None:
    engine = filled(store)
    threads = scan_threads(store, monkeypatch, fail)
    with pytest.raises(StoreError, match=f"the {fail.value} scan failed"):
        engine.search(SearchRequest(query="alpha bravo", limit=5))
    if not store.parallel_vector_legs and fail is Kind.OBJECT:
        assert threads[fail].startswith("kgsearch-legs")  # raised in a leg worker
    assert legs.searches_in_flight() == 0


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


def test_beside_another_search_legs_are_handed_off_only_to_a_database_server(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # beside another search the cores are busy with it: a store that scans in process
    # runs every leg in the calling thread; one whose legs are server queries sends its
    # BM25 legs to a leg worker in one job (alone: one job each)
    engine = filled(store)
    pool = legs._leg_pool()
    jobs: list[list[str]] = []

    def submit(fn: Any, *args: Any) -> Any:
        jobs.append([name for name, _, _ in args[0]] if fn is legs._run else ["work"])
        return pool.submit(fn, *args)

    monkeypatch.setattr(
        legs, "_leg_pool", lambda: type("Pool", (), {"submit": staticmethod(submit)})
    )
    request = SearchRequest(query="alpha bravo", limit=5, include_debug=True)
    alone = engine.search(request)
    lexical = [job for job in jobs if any(name.endswith(":bm25") for name in job)]
    assert sorted(lexical) == [["chunks:bm25"], ["objects:bm25"], ["relationships:bm25"]]
    jobs.clear()
    with legs.searching():  # the other search
        beside = engine.search(request)
    lexical = [job for job in jobs if any(name.endswith(":bm25") for name in job)]
    if store.parallel_vector_legs:
        assert lexical == [["objects:bm25", "relationships:bm25", "chunks:bm25"]]
    else:
        assert jobs == []
    assert beside.results == alone.results
    assert untimed(beside.debug) == untimed(alone.debug)
