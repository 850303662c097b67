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


@pytest.fixture
def movies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SQLiteStore:
    """Rows where "directed" and "genre" are frequent and the titles are rare."""
    from kgsearch.store.sqlite import lexical

    monkeypatch.setattr(lexical, "_FREQUENT_FLOOR", 5)
    monkeypatch.setattr(lexical, "_FREQUENT_SHARE", 0.05)
    engine = Engine(SQLiteStore(str(tmp_path / "kg.db")))
    names = [f"title{i} " + ("extra words " * (i % 3)) for i in range(60)]
    suffixes = {"f": "", "d": " directed", "g": " genre drama"}
    engine.add_objects(
        [
            ObjectIn(type="Film", key=f"{k}{i}", properties={"name": n + suffix})
            for k, suffix in suffixes.items()
            for i, n in enumerate(names)
        ]
    )
    store = engine.store
    assert isinstance(store, SQLiteStore)
    return store


def _plain_or(store: SQLiteStore, terms: list[str]) -> dict[str, float]:
    """FTS5's own BM25 for an OR of the terms, each once (the oracle)."""
    match = " OR ".join(f'"{t}"' for t in terms)
    rows = store.db.all(
        "SELECT t.id, -bm25(objects_fts) FROM objects_fts JOIN objects t "
        "ON t.rowid = objects_fts.rowid WHERE objects_fts MATCH ?",
        (match,),
    )
    return {r[0]: r[1] for r in rows}


@pytest.mark.parametrize(
    "query",
    ["directed title7", "title12 genre", "title4 extra directed genre", "title5 extra words"],
)
def test_frequent_words_are_scored_as_fts5_would(movies: SQLiteStore, query: str) -> None:
    terms = query.split()
    plan = movies.lexical.plan(movies.db, Kind.OBJECT, terms)
    assert plan.rescore  # candidates are scored again with every word
    assert all(t not in plan.match for t in ("directed", "genre"))
    hits = movies.text_search("default", Kind.OBJECT, query, limit=5)
    oracle = _plain_or(movies, terms)
    assert hits
    for id, score in hits:
        assert score == pytest.approx(oracle[id], rel=1e-9)
    # the row holding the rare word and the frequent one comes first
    best = max((i for i in oracle if i in dict(hits)), key=oracle.__getitem__)
    assert hits[0][0] == best


def test_a_query_of_frequent_words_only_needs_all_of_them(movies: SQLiteStore) -> None:
    hits = movies.text_search("default", Kind.OBJECT, "genre drama", limit=100)
    assert len(hits) == 60
    plan = movies.lexical.plan(movies.db, Kind.OBJECT, ["genre", "drama"])
    assert " AND " in plan.match and not plan.rescore


def test_a_prefix_query_is_scored_by_fts5(movies: SQLiteStore) -> None:
    hits = movies.text_search("default", Kind.OBJECT, "title3 direct", limit=5, prefix=True)
    (best,) = movies.get_objects("default", [hits[0][0]])
    assert best.key == "d3"


def test_words_matched_in_pairs_fall_back_to_any_of_them(
    movies: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgsearch.store.sqlite import lexical

    monkeypatch.setattr(lexical, "_ALONE_BUDGET", 2)  # each title word (3 rows) is paired
    plan = movies.lexical.plan(movies.db, Kind.OBJECT, ["title4", "title5", "directed"])
    assert plan.match == '("title4" AND "title5")'
    hits = movies.text_search("default", Kind.OBJECT, "title4 title5 directed", limit=5)
    oracle = _plain_or(movies, ["title4", "title5", "directed"])
    assert len(hits) == 5  # no row holds both titles: never silently short
    keys = {o.key for o in movies.get_objects("default", [i for i, _ in hits])}
    assert {"d4", "d5"} <= keys
    for id, score in hits:
        assert score == pytest.approx(oracle[id], rel=1e-9)


@pytest.mark.parametrize("added", [10, 300])
def test_scores_follow_rows_written_after_the_first_search(movies: SQLiteStore, added: int) -> None:
    """A few new rows (the vocabulary is not read again: the new word is looked up
    alone) or many (read again): scores stay FTS5's own."""
    query = "title3 novel directed"
    movies.text_search("default", Kind.OBJECT, query, limit=5)  # caches the vocabulary
    engine = Engine(movies)
    engine.add_objects(
        [ObjectIn(type="Book", key=f"n{i}", properties={"name": "novel"}) for i in range(added)]
    )
    hits = movies.text_search("default", Kind.OBJECT, query, limit=5)
    oracle = _plain_or(movies, query.split())
    assert hits
    for id, score in hits:
        assert score == pytest.approx(oracle[id], rel=1e-9)


def test_a_word_the_index_splits_is_scored_by_fts5(movies: SQLiteStore) -> None:
    plan = movies.lexical.plan(movies.db, Kind.OBJECT, ["title3", "directed_by"])
    assert not plan.rescore and '"directed_by"' in plan.match


def test_rescoring_inside_a_rolled_back_transaction_keeps_working_after(
    movies: SQLiteStore,
) -> None:
    # the first search on this connection creates the TEMP helper tables inside the
    # transaction; the rollback drops them, and later searches must create them again
    fresh = SQLiteStore(movies.path)
    query = "directed title7"
    with pytest.raises(RuntimeError), fresh.transaction():
        assert fresh.text_search("default", Kind.OBJECT, query, limit=5)
        raise RuntimeError("roll back")
    with fresh.transaction():  # on the same connection again (outside one, a reader's)
        hits = fresh.text_search("default", Kind.OBJECT, query, limit=5)
    oracle = _plain_or(fresh, query.split())
    assert hits and all(score == pytest.approx(oracle[id], rel=1e-9) for id, score in hits)
    fresh.close()


def test_a_row_deleted_between_ranking_and_rescoring_is_not_returned(
    movies: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgsearch.store.sqlite import search

    query = "directed title7"
    monkeypatch.setattr(movies.lexical.held, "fresh", lambda *_: None)  # FTS5 answers
    first = movies.text_search("default", Kind.OBJECT, query, limit=5)[0][0]
    ranked = search._ranked

    def then_delete(*args: object, **kwargs: object) -> list[tuple[int, str, float]]:
        rows = ranked(*args, **kwargs)  # type: ignore[arg-type]
        Engine(movies).delete("object", [first])
        return rows

    monkeypatch.setattr(search, "_ranked", then_delete)
    hits = movies.text_search("default", Kind.OBJECT, query, limit=5)
    assert hits and first not in [i for i, _ in hits]
