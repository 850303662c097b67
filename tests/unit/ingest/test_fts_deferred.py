"""A SQLite write run leaves the objects' full-text upkeep to its end (m014): inside it
a changed object keeps its old index entry, each is re-indexed once at the end, and the
index always stays consistent with what it holds (deletes, dead runs, bulk loads)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kgsearch.store.sqlite.schema import MIGRATIONS
from kgsearch.store.sqlite.store import SQLiteStore


def store(tmp_path: Path) -> SQLiteStore:
    s = SQLiteStore(str(tmp_path / "s.db"))
    s.db.execute(
        "INSERT INTO objects (id, project, type, key, created_at, updated_at, text) "
        "VALUES ('a', 'p', 't', 'a', '', '', 'alpha beta'), ('b', 'p', 't', 'b', '', '', 'bravo')"
    )
    return s


def hits(s: SQLiteStore, word: str) -> list[str]:
    sql = (
        "SELECT o.id FROM objects_fts f JOIN objects o ON o.rowid = f.rowid "
        "WHERE objects_fts MATCH ? ORDER BY o.id"
    )
    return [r[0] for r in s.db.all(sql, (word,))]


def consistent(s: SQLiteStore) -> bool:
    """Whether the index holds exactly the live rows' current texts (compared with a
    fresh index of them, word by word and row by row)."""
    s.db.execute("CREATE VIRTUAL TABLE temp.fresh USING fts5(text, tokenize='porter unicode61')")
    s.db.execute(
        "INSERT INTO temp.fresh(rowid, text) SELECT rowid, text FROM objects "
        "WHERE deleted_at IS NULL"
    )
    s.db.execute("CREATE VIRTUAL TABLE temp.v_fresh USING fts5vocab(temp, fresh, instance)")
    s.db.execute("CREATE VIRTUAL TABLE temp.v_kept USING fts5vocab(main, objects_fts, instance)")
    fresh = s.db.all("SELECT term, doc, offset FROM temp.v_fresh ORDER BY 1, 2, 3")
    kept = s.db.all("SELECT term, doc, offset FROM temp.v_kept ORDER BY 1, 2, 3")
    for name in ("v_fresh", "v_kept", "fresh"):
        s.db.execute(f"DROP TABLE temp.{name}")
    return [tuple(r) for r in fresh] == [tuple(r) for r in kept]


def stale(s: SQLiteStore) -> int:
    row = s.db.one("SELECT count(*) FROM fts_stale")
    assert row is not None
    return int(row[0])


def test_a_changed_object_is_re_indexed_once_at_the_end_of_the_run(tmp_path: Path) -> None:
    s = store(tmp_path)
    with s.write_run():
        s.db.execute("UPDATE objects SET text = 'gamma delta' WHERE id = 'a'")
        s.db.execute("UPDATE objects SET text = 'epsilon' WHERE id = 'a'")
        s.db.execute(
            "INSERT INTO objects (id, project, type, key, created_at, updated_at, text) "
            "VALUES ('c', 'p', 't', 'c', '', '', 'charlie')"
        )
        # the run's index: as it was before the run, the untouched row as ever
        assert hits(s, "alpha") == ["a"] and hits(s, "epsilon") == []
        assert hits(s, "charlie") == [] and hits(s, "bravo") == ["b"]
        assert stale(s) == 2
    assert hits(s, "alpha") == [] and hits(s, "gamma") == [] and hits(s, "epsilon") == ["a"]
    assert hits(s, "charlie") == ["c"]
    assert stale(s) == 0 and consistent(s)
    s.db.execute("UPDATE objects SET text = 'zeta' WHERE id = 'a'")  # outside: at once
    assert hits(s, "zeta") == ["a"] and consistent(s)


def test_deleting_and_reviving_inside_a_run_keep_the_index_consistent(tmp_path: Path) -> None:
    s = store(tmp_path)
    with s.write_run():
        s.db.execute("UPDATE objects SET text = 'gamma' WHERE id = 'a'")
        s.db.execute("DELETE FROM objects WHERE id = 'a'")  # purged while noted
        s.db.execute("UPDATE objects SET deleted_at = 'x' WHERE id = 'b'")
        assert hits(s, "alpha") == [] and hits(s, "bravo") == ["b"]
        s.db.execute("UPDATE objects SET deleted_at = NULL, text = 'bravo two' WHERE id = 'b'")
        s.db.execute("UPDATE objects SET deleted_at = 'y' WHERE id = 'b'")
    assert hits(s, "bravo") == [] and hits(s, "gamma") == []
    assert stale(s) == 0 and consistent(s)
    s.db.execute("UPDATE objects SET deleted_at = NULL WHERE id = 'b'")
    assert hits(s, "two") == ["b"] and consistent(s)


def test_a_run_that_died_stops_deferring_and_the_next_run_catches_up(tmp_path: Path) -> None:
    s = store(tmp_path)
    run = s.write_run()
    run.__enter__()
    s.db.execute("UPDATE objects SET text = 'gamma' WHERE id = 'a'")
    # the process dies: its lease runs out, its noted row stays noted
    s.db.execute("UPDATE fts_deferred SET until = julianday('now') - 1")
    s._runs = 0
    s.db.execute("UPDATE objects SET text = 'bravo two' WHERE id = 'b'")
    assert hits(s, "two") == ["b"]  # not deferred any more
    s.db.execute("UPDATE objects SET text = 'delta' WHERE id = 'a'")  # still noted
    assert hits(s, "alpha") == ["a"] and stale(s) == 1
    with s.write_run():
        assert hits(s, "delta") == ["a"] and stale(s) == 0  # caught up first
    assert consistent(s)


def test_a_run_killed_midway_is_healed_when_the_store_is_next_opened(tmp_path: Path) -> None:
    s = store(tmp_path)
    # what a run does first, by hand: the process is then killed, the run never left
    s.db.execute("INSERT INTO fts_deferred (tbl, until) VALUES ('objects', julianday('now') + 1)")
    s.db.execute("UPDATE objects SET text = 'gamma' WHERE id = 'a'")
    assert hits(s, "gamma") == [] and stale(s) == 1
    s.db.execute("UPDATE fts_deferred SET until = julianday('now') - 1")  # an hour later
    s.db.close()

    again = SQLiteStore(str(tmp_path / "s.db"))

    assert hits(again, "gamma") == ["a"] and stale(again) == 0
    assert consistent(again)


def test_a_store_opened_while_another_process_runs_leaves_its_deferral(tmp_path: Path) -> None:
    s = store(tmp_path)
    with s.write_run():
        s.db.execute("UPDATE objects SET text = 'gamma' WHERE id = 'a'")
        other = SQLiteStore(str(tmp_path / "s.db"))  # its lease is live
        assert stale(other) == 1 and hits(other, "gamma") == []
        other.close()
    assert hits(s, "gamma") == ["a"] and consistent(s)


def test_nested_runs_end_with_the_outer_one(tmp_path: Path) -> None:
    s = store(tmp_path)
    with s.write_run():
        with s.write_run():
            s.db.execute("UPDATE objects SET text = 'gamma' WHERE id = 'a'")
        assert hits(s, "gamma") == [] and stale(s) == 1
    assert hits(s, "gamma") == ["a"] and consistent(s)


def test_a_bulk_load_in_a_run_rebuilds_the_index_and_forgets_the_noted_rows(
    tmp_path: Path,
) -> None:
    s = store(tmp_path)
    with s.write_run():
        s.db.execute("UPDATE objects SET text = 'gamma' WHERE id = 'a'")
        with s.bulk_load():
            s.db.execute("UPDATE objects SET text = 'delta' WHERE id = 'b'")
        assert stale(s) == 0 and hits(s, "gamma") == ["a"] and hits(s, "delta") == ["b"]
        s.db.execute("UPDATE objects SET text = 'echo' WHERE id = 'a'")  # deferred again
        assert hits(s, "echo") == []
    assert hits(s, "echo") == ["a"] and consistent(s)


def test_an_older_store_gets_the_deferrable_triggers(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    at = [m.name for m in MIGRATIONS].index("m014_deferrable_fts")

    def execute(sql: str) -> None:
        db.execute(sql)

    db.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    for migration in MIGRATIONS[:at]:
        migration.apply(execute)
        db.execute("INSERT INTO migrations VALUES (?, '')", (migration.name,))
    db.execute(
        "INSERT INTO objects (id, project, type, key, created_at, updated_at, text) "
        "VALUES ('a', 'p', 't', 'a', '', '', 'alpha')"
    )
    db.close()
    s = SQLiteStore(str(tmp_path / "old.db"))  # migrates
    assert hits(s, "alpha") == ["a"]
    with s.write_run():
        s.db.execute("UPDATE objects SET text = 'gamma' WHERE id = 'a'")
        assert hits(s, "gamma") == []
    assert hits(s, "gamma") == ["a"] and consistent(s)
