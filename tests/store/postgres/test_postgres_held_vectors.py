"""Vector legs answered from vectors held in the process (store/postgres/held.py): the
held answer is PostgreSQL's, and it is used only while no write committed since it was
read, whoever wrote (this process, another connection, another process, inside a write
transaction, a delete)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from kgsearch.engine import Engine
from kgsearch.model import Filters, Kind, ObjectIn, RelationshipIn
from kgsearch.store.postgres import PostgresStore
from kgsearch.testing import FakeEmbedder

QUERIES = ["thing 7 alpha", "thing 12 beta", "gamma", "thing", "k3"]


class _Log:
    """A tracer keeping the statements and notes of one call."""

    def __init__(self) -> None:
        self.statements: list[str] = []
        self.notes: list[str] = []

    def __call__(self, sql: str, params: Any) -> None:
        self.statements.append(sql)

    def note(self, text: str) -> None:
        self.notes.append(text)


def _open(pg_factory: Any, url: str | None = None, *, held: bool = True) -> PostgresStore:
    url = url or pg_factory.postgres_store_url()
    store = PostgresStore(url + ("" if held else "&held_vectors=off"))
    pg_factory.track(store)
    return store


def _fill(store: PostgresStore, n: int) -> Engine:
    engine = Engine(store, embedder=FakeEmbedder(32))
    engine.add_objects(
        [
            ObjectIn(
                type="Rare" if i % 25 == 0 else "Common",
                key=f"k{i}",
                properties={"name": f"thing {i} {'alpha' if i % 2 else 'beta'}"},
            )
            for i in range(n)
        ]
    )
    engine.embed_pending(kinds=[Kind.OBJECT, Kind.RELATIONSHIP, Kind.CHUNK])
    return engine


def _held(store: PostgresStore, kind: Kind = Kind.OBJECT, project: str = "default") -> bool:
    """Search until the held copy answers (a stale or missing copy starts a read, which
    is waited for); whether it did."""
    query = FakeEmbedder(32).embed_query("warm")
    assert store.held is not None
    for _ in range(5):  # a read under way may have begun before the last write
        log = _Log()
        store.vector_search(project, kind, query, limit=1, trace=log)
        if any("held in memory" in n for n in log.notes):
            return True
        store.held.wait(project, kind)
    return False


def _search(store: PostgresStore, text: str, limit: int = 10, **kw: Any) -> tuple[list[Any], bool]:
    """(hits, whether the held copy answered); the query is the text's vector, or the
    stored vector of the object named ``text`` when there is one."""
    log = _Log()
    named = store.objects_named("default", text, limit=1)
    query = (
        store.vectors("default", Kind.OBJECT, [named[0][0]])[named[0][0]]
        if named
        else FakeEmbedder(32).embed_query(text)
    )
    hits = store.vector_search(
        "default", kw.pop("kind", Kind.OBJECT), query, limit=limit, trace=log, **kw
    )
    return hits, any("held in memory" in n for n in log.notes)


def _same(held: list[tuple[str, float]], exact: list[tuple[str, float]]) -> None:
    """The rule: the same scores (to 1e-6) rank by rank; the ids may differ at a rank
    only where its score is tied to halfvec precision (1e-3) with another of PostgreSQL's
    rows, or with its last one (a tie across the cut, where PostgreSQL takes the lowest
    ``seq`` and the held scan whichever candidates it kept)."""
    assert len(held) == len(exact)
    last = exact[-1][1]
    for rank, ((hid, hs), (eid, es)) in enumerate(zip(held, exact, strict=True)):
        assert hs == pytest.approx(es, abs=1e-6)
        if hid != eid:
            tied = [i for i, (_, s) in enumerate(exact) if i != rank and abs(s - es) <= 1e-3]
            assert tied or abs(es - last) <= 1e-3, (rank, held, exact)


def test_the_held_answer_is_postgresqls(pg_factory: Any) -> None:
    store = _open(pg_factory)
    _fill(store, 300)
    exact = _open(pg_factory, store.url, held=False)
    assert _held(store)
    for text in QUERIES:
        for limit in (1, 10, 30):
            hits, held = _search(store, text, limit)
            truth, from_pg = _search(exact, text, limit)
            assert held and not from_pg
            _same(hits, truth)


def test_a_write_from_this_process_is_seen_at_once(pg_factory: Any) -> None:
    store = _open(pg_factory)
    engine = _fill(store, 50)
    assert _held(store)
    engine.add_objects([ObjectIn(type="Common", key="gamma ray", properties={"name": "gamma"})])
    engine.embed_pending()
    hits, held = _search(store, "gamma ray", 1)
    assert not held  # stale: PostgreSQL answers, the copy is read again meanwhile
    new = store.get_objects("default", [hits[0][0]])[0]
    assert new.key == "gamma ray"
    assert store.held is not None and store.held.wait("default", Kind.OBJECT)
    again, held = _search(store, "gamma ray", 1)
    assert held and again[0][0] == hits[0][0]


def test_writes_of_another_connection_and_process_are_seen(pg_factory: Any) -> None:
    store = _open(pg_factory)
    _fill(store, 50)
    assert _held(store)
    other = _open(pg_factory, store.url, held=False)
    doomed = _search(store, "thing 7 alpha", 1)[0][0][0]
    other.delete("default", "object", [doomed])
    hits, held = _search(store, "thing 7 alpha", 5)
    assert not held and doomed not in [i for i, _ in hits]
    assert _held(store)
    hits, held = _search(store, "thing 7 alpha", 5)
    assert held and doomed not in [i for i, _ in hits]
    # another process: a new object embedded there
    code = (
        "import sys; from kgsearch.engine import Engine; from kgsearch.model import ObjectIn;"
        "from kgsearch.store.postgres import PostgresStore; from kgsearch.testing import "
        "FakeEmbedder; s = PostgresStore(sys.argv[1]); e = Engine(s, embedder=FakeEmbedder(32));"
        "e.add_objects([ObjectIn(type='Common', key='delta wave')]); e.embed_pending(); s.close()"
    )
    subprocess.run([sys.executable, "-c", code, store.url], check=True, timeout=120)
    hits, held = _search(store, "delta wave", 1)
    assert not held
    assert store.get_objects("default", [hits[0][0]])[0].key == "delta wave"


def test_inside_a_write_transaction_its_own_writes_are_seen(pg_factory: Any) -> None:
    store = _open(pg_factory)
    _fill(store, 50)
    assert _held(store)
    doomed = _search(store, "thing 7 alpha", 1)[0][0][0]
    with store.transaction():
        store.delete("default", "object", [doomed])
        hits, held = _search(store, "thing 7 alpha", 5)
        assert not held and doomed not in [i for i, _ in hits]
    # committed: whichever answers (a read started inside may have seen the commit)
    # leaves the row out
    hits, held = _search(store, "thing 7 alpha", 5)
    assert doomed not in [i for i, _ in hits]
    assert _held(store)
    hits, held = _search(store, "thing 7 alpha", 5)
    assert held and doomed not in [i for i, _ in hits]


def test_a_rolled_back_write_leaves_the_copy_current(pg_factory: Any) -> None:
    store = _open(pg_factory)
    _fill(store, 50)
    assert _held(store)
    doomed = _search(store, "thing 7 alpha", 1)[0][0][0]
    with pytest.raises(RuntimeError), store.transaction():
        store.delete("default", "object", [doomed])
        raise RuntimeError("undo")
    hits, held = _search(store, "thing 7 alpha", 1)
    assert held and hits[0][0] == doomed


def test_updates_that_leave_vectors_alone_keep_the_copy(pg_factory: Any) -> None:
    store = _open(pg_factory)
    _fill(store, 50)
    assert _held(store)
    store.db.execute("UPDATE objects SET claimed_until = 1, attempts = attempts + 1")
    assert _search(store, "thing", 3)[1]
    store.db.execute("UPDATE objects SET deleted_at = now() WHERE key = 'k3'")
    assert not _search(store, "thing", 3)[1]


def test_filters_the_copy_cannot_apply_go_to_postgresql(pg_factory: Any) -> None:
    store = _open(pg_factory)
    engine = _fill(store, 50)
    assert _held(store)
    hits, held = _search(store, "thing", 10, filters=Filters(object_types=["Rare"]))
    assert not held and len(hits) == 2
    ids = [i for i, _ in _search(store, "thing", 3)[0]]
    assert not _search(store, "thing", 3, ids=ids)[1]
    assert _search(store, "thing", 3, filters=Filters())[1]
    # relationships with validity times: PostgreSQL decides which are valid now
    objs = store.list_rows("default", "object", limit=3).items
    engine.add_relationships(
        [
            RelationshipIn(
                type="knows", source=objs[0].id, target=objs[1].id, valid_to="2000-01-01T00:00:00Z"
            ),
            RelationshipIn(type="knows", source=objs[1].id, target=objs[2].id),
        ]
    )
    engine.embed_pending()
    assert not _held(store, Kind.RELATIONSHIP)
    assert store.held is not None and store.held.wait("default", Kind.RELATIONSHIP)
    hits, held = _search(store, "knows", 10, kind=Kind.RELATIONSHIP)
    assert not held and len(hits) == 1


def test_off_in_the_url_and_memory_reported(pg_factory: Any) -> None:
    url = pg_factory.postgres_store_url()
    off = _open(pg_factory, url, held=False)
    _fill(off, 20)
    assert off.held is None
    assert not _search(off, "thing", 3)[1]
    store = _open(pg_factory, url)
    assert _held(store)
    assert store.held is not None
    # 20 rows and 1,024 spare of 32 float16 values, their int8 codes and norms; seqs
    assert store.held.memory() == 1044 * (32 * 2 + 32 + 4) + 20 * 8


def test_a_pruned_log_makes_older_copies_stale(pg_factory: Any, monkeypatch: Any) -> None:
    from kgsearch.store.postgres import held as held_module

    store = _open(pg_factory)
    engine = _fill(store, 20)
    assert _held(store)
    other = _open(pg_factory, store.url)
    monkeypatch.setattr(held_module, "_LOG_KEEP", 1)
    engine.add_objects([ObjectIn(type="Common", key="epsilon")])
    engine.embed_pending()
    assert _held(other)  # its read pruned the log
    assert store.db.one("SELECT count(*) AS n FROM vector_writes")["n"] == 0  # type: ignore[index]
    assert not _search(store, "thing", 3)[1]  # read before the horizon
    assert _search(other, "thing", 3)[1]
    assert np.isfinite(_search(other, "thing", 3)[0][0][1])


def test_a_copy_is_brought_up_to_date_by_the_rows_changed(pg_factory: Any) -> None:
    store = _open(pg_factory)
    engine = _fill(store, 100)
    exact = _open(pg_factory, store.url, held=False)
    assert _held(store)
    assert store.held is not None and store.held.reads == 1
    # a new row, a deleted one, one embedded anew (its text changed)
    engine.add_objects([ObjectIn(type="Common", key="zeta", properties={"name": "thing 7"})])
    doomed = _search(store, "thing 12 beta", 1)[0][0][0]
    store.delete("default", "object", [doomed])
    engine.add_objects([ObjectIn(type="Common", key="k7", properties={"name": "thing 12"})])
    engine.embed_pending()
    assert not _search(store, "thing", 3)[1]
    assert store.held.wait("default", Kind.OBJECT)
    assert (store.held.reads, store.held.updates) == (1, 1)
    for text in QUERIES:
        hits, held = _search(store, text, 30)
        truth, _ = _search(exact, text, 30)
        assert held and doomed not in [i for i, _ in hits]
        _same(hits, truth)


def test_a_truncated_table_is_read_again_whole(pg_factory: Any) -> None:
    store = _open(pg_factory)
    _fill(store, 30)
    assert _held(store)
    store.db.execute("TRUNCATE objects")
    assert _search(store, "thing", 3) == ([], False)
    assert store.held is not None and store.held.wait("default", Kind.OBJECT)
    assert (store.held.reads, store.held.updates) == (2, 0)
    assert _search(store, "thing", 3) == ([], True)
