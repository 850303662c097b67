"""Write runs on SQLite: the objects' full-text upkeep left to the end of a run (m014).

An extraction run writes batch after batch, and an object named in many of them has its
description, and so its text, grown by each: re-indexing it every time deletes and adds
its ever longer entry once per batch. Inside :meth:`WriteRuns.write_run` the full-text
triggers only note such rows (``fts_stale``, with the text their entry holds); the end
of the run re-indexes each noted row once, from its current text. Meanwhile a lexical
search finds a changed object by the text it had before the run, a new one not yet.

The run holds a lease in ``fts_deferred`` (one hour, taken again by each run that
starts); a process that dies in a run stops deferring when it ends, and the rows it
noted stay noted (later writes to them skip the index too, so their entries stay
consistent) until the store is next opened (:meth:`WriteRuns.heal_fts`) or the next
run starts, which re-index them first. The end of a run ends the
deferral for every process: a run of another process still going on then has its
index entries written at once, as without a run (slower, never inconsistent).

Inside a run the WAL is also checkpointed every :data:`RUN_CHECKPOINT_PAGES` pages
rather than SQLite's 1,000: the pages rewritten by batch after batch (popular rows,
the index B-trees) are then copied into the database file once per checkpoint.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from kgsearch.model import Kind
from kgsearch.store.sqlite.schema import DEFERRABLE_FTS, fts_flush_sql

if TYPE_CHECKING:
    from kgsearch.store.sqlite.connection import Connection

__all__ = ["LEASE_DAYS", "RUN_CHECKPOINT_PAGES", "WriteRuns"]

LEASE_DAYS = 1 / 24
"""How long a run's deferral lasts without the run ending it (julian days: one hour)."""

RUN_CHECKPOINT_PAGES = 10_000
"""WAL pages between automatic checkpoints inside a run (about 40 MB)."""

_DEFAULT_CHECKPOINT_PAGES = 1000
_lock = threading.Lock()


class WriteRuns:
    """``Lifecycle.write_run`` for :class:`~kgsearch.store.sqlite.store.SQLiteStore`."""

    if TYPE_CHECKING:
        db: Connection
        _runs: int

        def _changed(self, kind: Kind, *, texts: bool) -> None:
            """The store's own."""

    @contextmanager
    def write_run(self) -> Iterator[None]:
        """Many write transactions in a row; see the module docstring. Nested and
        concurrent runs of one store share the deferral, which ends with the last."""
        if not self._deferrable():
            yield
            return
        with _lock:
            first = self._runs == 0
            self._runs += 1
        try:
            if first:
                with self.db.transaction():
                    self._flush_fts()  # what a run that died left
                    self.db.executemany(
                        "INSERT INTO fts_deferred (tbl, until) "
                        "VALUES (?, julianday('now') + ?) "
                        "ON CONFLICT (tbl) DO UPDATE SET until = excluded.until",
                        [(table, LEASE_DAYS) for table in DEFERRABLE_FTS],
                    )
                self.db.execute(f"PRAGMA wal_autocheckpoint={RUN_CHECKPOINT_PAGES}")
            yield
        finally:
            with _lock:
                self._runs -= 1
                last = self._runs == 0
            if last:
                self.db.execute(f"PRAGMA wal_autocheckpoint={_DEFAULT_CHECKPOINT_PAGES}")
                with self.db.transaction():
                    self.db.execute("DELETE FROM fts_deferred")
                    self._flush_fts()

    def heal_fts(self) -> bool:
        """Re-index the rows a run that died left noted, unless a run holds a live
        lease (the store calls it when it opens, so a store whose ingest was killed is
        whole again at the next command, extraction or not). Returns whether it did."""
        if not self._deferrable():
            return False
        noted = self.db.one("SELECT 1 FROM fts_stale LIMIT 1")
        if noted is None:
            return False
        with self.db.transaction():
            live = self.db.one("SELECT 1 FROM fts_deferred WHERE until > julianday('now')")
            if live is not None:
                return False
            self.db.execute("DELETE FROM fts_deferred")
            self._flush_fts()
        return True

    def _flush_fts(self) -> None:
        """Re-index every noted row (inside the caller's transaction)."""
        for table in DEFERRABLE_FTS:
            for sql in fts_flush_sql(table):
                self.db.execute(sql)
            self._changed(Kind(table.removesuffix("s")), texts=True)  # objects → object

    def _deferrable(self) -> bool:
        """Whether the store has m014's tables (a store opened without migrating may
        not)."""
        found = self.db.one("SELECT 1 FROM sqlite_master WHERE name = 'fts_deferred'")
        return found is not None
