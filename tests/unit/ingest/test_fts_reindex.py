"""The SQLite full-text update triggers re-index a row only when its text or liveness
changed (m013): a rewrite of the same text leaves the index's stored data untouched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kgsearch.store.sqlite.schema import MIGRATIONS


def fresh(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    for migration in MIGRATIONS:
        migration.apply(db.execute)
    db.execute(
        "INSERT INTO objects (id, project, type, key, created_at, updated_at, text) "
        "VALUES ('a', 'p', 't', 'a', '', '', 'alpha beta')"
    )
    return db


def index_data(db: sqlite3.Connection) -> list[tuple[object, ...]]:
    return db.execute("SELECT * FROM objects_fts_data ORDER BY id").fetchall()


def hits(db: sqlite3.Connection, word: str) -> list[str]:
    sql = (
        "SELECT o.id FROM objects_fts f JOIN objects o ON o.rowid = f.rowid "
        "WHERE objects_fts MATCH ?"
    )
    return [r[0] for r in db.execute(sql, (word,))]


def test_the_same_text_written_again_leaves_the_index_alone(tmp_path: Path) -> None:
    db = fresh(tmp_path / "s.db")
    before = index_data(db)
    db.execute("UPDATE objects SET text = 'alpha beta', updated_at = 'x' WHERE id = 'a'")
    db.execute("UPDATE objects SET deleted_at = NULL WHERE id = 'a'")
    assert index_data(db) == before
    assert hits(db, "beta") == ["a"]


def test_a_changed_text_is_re_indexed(tmp_path: Path) -> None:
    db = fresh(tmp_path / "s.db")
    before = index_data(db)
    db.execute("UPDATE objects SET text = 'gamma delta' WHERE id = 'a'")
    assert index_data(db) != before
    assert hits(db, "beta") == [] and hits(db, "gamma") == ["a"]
    db.execute("INSERT INTO objects_fts(objects_fts) VALUES ('integrity-check')")


def test_deleting_and_restoring_follow_the_liveness(tmp_path: Path) -> None:
    db = fresh(tmp_path / "s.db")
    db.execute("UPDATE objects SET deleted_at = '2026' WHERE id = 'a'")
    assert hits(db, "alpha") == []
    db.execute("UPDATE objects SET deleted_at = '2027' WHERE id = 'a'")  # still deleted
    assert hits(db, "alpha") == []
    db.execute("UPDATE objects SET deleted_at = NULL, text = 'alpha omega' WHERE id = 'a'")
    assert hits(db, "omega") == ["a"]
    db.execute("INSERT INTO objects_fts(objects_fts) VALUES ('integrity-check')")


def test_an_older_store_gets_the_new_triggers(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    at = [m.name for m in MIGRATIONS].index("m013_fts_reindex_on_change")
    for migration in MIGRATIONS[:at]:
        migration.apply(db.execute)
    MIGRATIONS[at].apply(db.execute)
    (sql,) = db.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'chunks_fts_au'"
    ).fetchone()
    assert "WHEN old.text IS NOT new.text" in sql
