"""SQLite BM25: the ranked-first fast path returns what the full join returns."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from kgsearch.engine import Engine
from kgsearch.model import Filters, Kind, ObjectIn, ObjectRef, RelationshipIn
from kgsearch.store.sqlite import SQLiteStore


def _full_query(store: SQLiteStore, project: str, query: str, limit: int) -> list[str]:
    """The plain join over every match (the oracle the fast path must equal)."""
    rows = store.db.all(
        "SELECT t.id FROM objects_fts JOIN objects t ON t.rowid = objects_fts.rowid "
        "WHERE objects_fts MATCH ? AND t.project = ? AND t.deleted_at IS NULL "
        "ORDER BY bm25(objects_fts), t.rowid LIMIT ?",
        (query, project, limit),
    )
    return [r["id"] for r in rows]


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = Engine(SQLiteStore(str(tmp_path / "kg.db")))
    # Project A's rows outrank project B's for "zeta": an index-first LIMIT sees only A.
    engine.add_objects(
        [ObjectIn(type="Thing", key=f"a{i}", properties={"name": "zeta zeta"}) for i in range(40)],
        project="A",
    )
    engine.add_objects(
        [
            ObjectIn(type="Thing", key=f"b{i}", properties={"name": f"zeta {'filler ' * i}"})
            for i in range(1, 6)
        ],
        project="B",
    )
    return engine


@pytest.mark.parametrize(("project", "limit"), [("A", 5), ("A", 40), ("A", 60), ("B", 3), ("B", 9)])
def test_fast_bm25_equals_the_full_join(engine: Engine, project: str, limit: int) -> None:
    store = engine.store
    assert isinstance(store, SQLiteStore)
    hits = store.text_search(project, Kind.OBJECT, "zeta", limit=limit)
    assert [i for i, _ in hits] == _full_query(store, project, '"zeta"', limit)
    assert len(hits) == min(limit, 40 if project == "A" else 5)


def test_fast_bm25_skips_deleted_rows(engine: Engine) -> None:
    store = engine.store
    assert isinstance(store, SQLiteStore)
    first = store.text_search("B", Kind.OBJECT, "zeta", limit=2)
    engine.delete("object", [first[0][0]], project="B")
    hits = store.text_search("B", Kind.OBJECT, "zeta", limit=2)
    assert first[0][0] not in [i for i, _ in hits]
    assert [i for i, _ in hits] == _full_query(store, "B", '"zeta"', 2)


def test_filtered_bm25_still_applies_the_filter(engine: Engine) -> None:
    store = engine.store
    hits = store.text_search("A", Kind.OBJECT, "zeta", limit=5, filters=Filters(object_types=["X"]))
    assert hits == []


def test_fast_bm25_skips_expired_relationships(engine: Engine) -> None:
    store = engine.store
    assert isinstance(store, SQLiteStore)
    past = datetime(2000, 1, 1, tzinfo=UTC)
    a = [ObjectRef(type="Thing", key=f"a{i}") for i in range(4)]
    engine.add_relationships(
        [RelationshipIn(type="LIKES", source=a[0], target=a[1], valid_to=past)]
        + [RelationshipIn(type="LIKES", source=a[0], target=a[i]) for i in (2, 3)],
        project="A",
    )
    hits = store.text_search("A", Kind.RELATIONSHIP, "zeta likes", limit=2)
    expected = store.db.all(
        "SELECT t.id FROM relationships_fts JOIN relationships t "
        "ON t.rowid = relationships_fts.rowid WHERE relationships_fts MATCH ? "
        "AND t.project = 'A' AND t.deleted_at IS NULL AND t.valid_to IS NULL "
        "ORDER BY bm25(relationships_fts), t.rowid LIMIT 2",
        ('"zeta" OR "likes"',),
    )
    assert [i for i, _ in hits] == [r["id"] for r in expected]
    assert len(hits) == 2
