"""A SQLite store opened read-only, for counting: ``kgsearch stats`` and ``kgsearch
embed status`` without the engine.

Standard library only (``sqlite3``): no pydantic, no numpy, no model. It answers only
a store whose schema is the current one (every migration this code knows applied,
none it does not); :meth:`ReadOnlyCounts.open` returns None for any other file (an
older schema to migrate, a newer one, not a kgsearch store, not a database) and the
caller takes the engine's path, which migrates or explains. Its figures are those of
``Engine.stats`` and ``Engine.embedding_status`` as JSON, counted with the store's
own statements (:mod:`kgsearch.store.counts`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self
from urllib.parse import quote

from kgsearch.store.counts import (
    EMBEDDED_TABLES,
    LATENCY_SQL,
    META_SQL,
    MIGRATIONS_SQL,
    PROJECTS_SQL,
    embedding_counts_sql,
    group_counts,
    live_counts,
    status_figures,
)
from kgsearch.store.sqlite.schema import MIGRATIONS

__all__ = ["ReadOnlyCounts", "connect_read_only", "sqlite_file"]


_MMAP_BYTES = 1 << 30


def sqlite_file(url: str) -> str | None:
    """The file of a SQLite store URL (a bare path or ``sqlite:///path``) as the store
    spells it, or None for any other store (in memory, PostgreSQL…)."""
    if url == ":memory:":
        return None
    if "://" not in url:
        return str(Path(url))
    path = url.removeprefix("sqlite:///")
    if path == url or not path or path == ":memory:" or path.startswith("sqlite://"):
        return None
    return path


def connect_read_only(path: str) -> sqlite3.Connection | None:
    """A read-only connection to ``path`` (rows as :class:`sqlite3.Row`), or None when
    it is not a current kgsearch store (every migration this code knows applied, none
    it does not) or cannot be read here; nothing is ever created or written."""
    if not os.path.isfile(path):
        return None
    try:
        db = sqlite3.connect(
            f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True, check_same_thread=False
        )
    except sqlite3.Error:
        return None
    try:
        db.execute("PRAGMA busy_timeout=10000")
        # counting reads every live row's page: mapped, they are not copied (about
        # half the time of a count on the demo store)
        db.execute(f"PRAGMA mmap_size={_MMAP_BYTES}")
        names = {row[0] for row in db.execute(MIGRATIONS_SQL)}
    except sqlite3.Error:
        db.close()
        return None
    if names != {m.name for m in MIGRATIONS}:
        db.close()
        return None
    db.row_factory = sqlite3.Row
    return db


class ReadOnlyConnection:
    """A read-only connection to a current SQLite store (closed by ``close`` or ``with``),
    the base of the light commands' readers."""

    def __init__(self, db: sqlite3.Connection, path: str) -> None:
        self.db = db
        self.url = "sqlite:///" + path  # as SQLiteStore spells it

    @classmethod
    def open(cls, path: str) -> Self | None:
        """Open ``path`` read-only, or None when it is not a current kgsearch store (or
        cannot be read here); nothing is ever created or written."""
        db = connect_read_only(path)
        return None if db is None else cls(db, path)

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ReadOnlyCounts(ReadOnlyConnection):
    """Counts of a current SQLite store, read through a read-only connection."""

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self.db.execute(sql, params).fetchall()

    def _meta(self, key: str) -> str | None:
        rows = self._all(META_SQL, (key,))
        return None if not rows else str(rows[0][0])

    def _model(self) -> tuple[str | None, int | None]:
        dims = self._meta("dims")
        return self._meta("embedding_model"), int(dims) if dims else None

    def stats(self, project: str) -> dict[str, Any]:
        """``Engine.stats`` as JSON: a project's row counts and the store's metadata."""
        with self._snapshot():
            counts = live_counts(self._all, project)
            model, dims = self._model()
            return {
                "project": project,
                "counts": counts,
                "store": self.url,
                "schema_version": len(self._all(MIGRATIONS_SQL)),
                "embedding_model": model,
                "dims": dims,
                "projects": [row[0] for row in self._all(PROJECTS_SQL)],
            }

    def embedding_status(self, project: str | None) -> dict[str, Any]:
        """``Engine.embedding_status`` as JSON: counts by status per project and kind."""
        scope, params = ("AND project = ?", [project]) if project is not None else ("", [])
        with self._snapshot():
            counts = group_counts(
                (kind, row)
                for kind, table in EMBEDDED_TABLES
                for row in self._all(embedding_counts_sql(table, scope), params)
            )
            texts, ms = self._all(LATENCY_SQL)[0]
            model, dims = self._model()
            return status_figures(counts, (int(texts), float(ms)), model, dims)

    def _snapshot(self) -> _Snapshot:
        return _Snapshot(self.db)


class _Snapshot:
    """One read transaction: every count of a report sees the same state."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN")

    def __exit__(self, *exc: object) -> None:
        self.db.execute("COMMIT")
