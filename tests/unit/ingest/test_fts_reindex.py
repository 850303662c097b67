"""The SQLite full-text update triggers re-index a row only when its text or liveness
changed (m013): a rewrite of the same text leaves the index's stored data untouched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kgsearch.store.sqlite.schema import MIGRATIONS


def migrated(db: sqlite3.Connection, start: int = 0, upto: int | None = None) -> None:
    def execute(sql: str) -> None:
        db.execute(sql)

    for migration in MIGRATIONS[start:upto]:
        migration.apply(execute)


def fresh(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    migrated(db)
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
    migrated(db, 0, at)
    # the trigger as stores made before m013 have it
    db.execute("DROP TRIGGER chunks_fts_au")
    db.execute(
        "CREATE TRIGGER chunks_fts_au AFTER UPDATE OF text, deleted_at ON chunks BEGIN "
        "INSERT INTO chunks_fts(chunks_fts, rowid, text) "
        "SELECT 'delete', old.rowid, old.text WHERE old.deleted_at IS NULL; "
        "INSERT INTO chunks_fts(rowid, text) "
        "SELECT new.rowid, new.text WHERE new.deleted_at IS NULL; END"
    )
    migrated(db, at)
    (sql,) = db.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'chunks_fts_au'"
    ).fetchone()
    assert "WHEN old.text IS NOT new.text" in sql
