"""SQLite searches read through per-thread connections and saved vector indexes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from kgsearch.engine import Engine
from kgsearch.model import Kind, ObjectIn
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.store.sqlite.connection import Connection
from kgsearch.testing import FakeEmbedder

T = TypeVar("T")


def _in_thread(fn: Callable[[], T]) -> T:
    out: list[T] = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join()
    return out[0]


def test_each_thread_reads_through_its_own_connection(tmp_path: Path) -> None:
    db = Connection(str(tmp_path / "a.db"))
    mine = db.reader()
    assert mine is not db
    assert db.reader() is mine
    other = _in_thread(db.reader)
    assert other is not mine and other is not db
    db.close()


def test_an_in_memory_database_reads_through_its_one_connection() -> None:
    db = Connection(":memory:")
    assert db.reader() is db
    assert _in_thread(db.reader) is db


def test_inside_a_transaction_the_thread_reads_its_own_writes(tmp_path: Path) -> None:
    db = Connection(str(tmp_path / "a.db"))
    db.execute("CREATE TABLE t (x INTEGER)")
    with db.transaction():
        db.execute("INSERT INTO t VALUES (1)")
        assert db.reader() is db
        assert db.reader().one("SELECT count(*) FROM t")[0] == 1  # type: ignore[index]
    assert db.reader() is not db
    assert db.reader().one("SELECT count(*) FROM t")[0] == 1  # type: ignore[index]
    db.close()


def test_a_reader_sees_writes_committed_after_it_opened(tmp_path: Path) -> None:
    db = Connection(str(tmp_path / "a.db"))
    db.execute("CREATE TABLE t (x INTEGER)")
    reader = db.reader()
    assert reader.one("SELECT count(*) FROM t")[0] == 0  # type: ignore[index]
    db.execute("INSERT INTO t VALUES (1)")
    assert reader.one("SELECT count(*) FROM t")[0] == 1  # type: ignore[index]
    db.close()


def test_readers_of_finished_threads_are_closed(tmp_path: Path) -> None:
    db = Connection(str(tmp_path / "a.db"))
    first = _in_thread(db.reader)
    _in_thread(db.reader)  # opening another reader closes the finished thread's one
    assert first not in [r for _, r in db._readers or []]
    db.close()


def test_search_from_other_threads_sees_new_writes(tmp_path: Path) -> None:
    engine = Engine(SQLiteStore(str(tmp_path / "kg.db")), embedder=FakeEmbedder(16))
    engine.add_objects([ObjectIn(type="Thing", key="a", properties={"name": "alpha"})])
    engine.embed_pending()
    store = engine.store

    def bm25(word: str) -> object:
        return _in_thread(lambda: store.text_search("default", Kind.OBJECT, word, limit=5))

    assert len(bm25("alpha")) == 1  # type: ignore[arg-type]
    assert bm25("bravo") == []
    engine.add_objects([ObjectIn(type="Thing", key="b", properties={"name": "bravo"})])
    assert len(bm25("bravo")) == 1  # type: ignore[arg-type]
    engine.close()


def test_a_large_collection_saves_its_index_and_the_next_open_loads_it(tmp_path: Path) -> None:
    path = str(tmp_path / "kg.db")
    engine = Engine(SQLiteStore(path, ann_min_rows=50), embedder=FakeEmbedder(16))
    engine.add_objects(
        [ObjectIn(type="Thing", key=f"k{i}", properties={"name": f"thing {i}"}) for i in range(80)]
    )
    engine.embed_pending()
    store = engine.store
    assert isinstance(store, SQLiteStore)
    assert store.wait_for_index("default", Kind.OBJECT, 60)
    entry = store.vectors_cache.entry(store.db, "default", Kind.OBJECT)
    assert entry.ann is not None and not entry.ann.loaded
    assert list((tmp_path / "kg.db.ann").glob("*-object-*.usearch"))
    query = FakeEmbedder(16).embed_query("thing 7")
    before = store.vector_search("default", Kind.OBJECT, query, limit=5)
    engine.close()

    reopened = SQLiteStore(path, ann_min_rows=50)
    assert reopened.wait_for_index("default", Kind.OBJECT, 60)
    entry = reopened.vectors_cache.entry(reopened.db, "default", Kind.OBJECT)
    assert entry.ann is not None and entry.ann.loaded
    assert reopened.vector_search("default", Kind.OBJECT, query, limit=5) == before
    reopened.close()
