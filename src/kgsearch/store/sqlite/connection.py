"""One SQLite connection with a lock, nested transactions and wrapped driver errors.

Searches read through :meth:`Connection.reader`: each thread gets its own connection
to a database file, so a BM25 query in one thread runs beside a vector-leg lookup or
another request's query in another (SQLite releases the GIL and WAL lets readers run
concurrently), instead of queueing behind the one lock of the writing connection.
Every statement is reported to the calling thread's tracer, if any, before it runs
(see :mod:`kgsearch.store.tracing`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kgsearch.errors import InvalidRequest, StoreError
from kgsearch.store.common import sqlite_conflict, store_failure
from kgsearch.store.tracing import report

__all__ = ["CACHE_PAGES_KIB", "Connection"]

# Page cache per connection, in KiB as SQLite counts it when negative (64 MiB). The
# file is read through it, not mapped: ``PRAGMA mmap_size`` (1 GiB, on the main
# connection and every reader) changed no search's CPU or wall time in one process,
# two engines on the same file taking turns (scripts/bench_mmap.py, 500 questions x 2,
# load 5-7: MetaQA CPU p50 9.17 ms mapped against 9.21, the REST sample 4.39 against
# 4.36) and mapped 470 MiB more of the file into the process's resident memory.
CACHE_PAGES_KIB = -65536


class Connection:
    """A thread-safe wrapper: every statement runs under one re-entrant lock.

    Args:
        path: Database file, or ``:memory:``.
        readers: Whether :meth:`reader` opens per-thread connections (file databases
            only; an in-memory database has just this one connection).
    """

    def __init__(self, path: str, *, readers: bool = True) -> None:
        self.path = path
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite database {path!r}: {exc}") from exc
        self._db.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        # guards the list of readers only: a thread opening its reader never waits for
        # a write transaction holding ``_lock``
        self._readers_lock = threading.Lock()
        self._depth = 0
        self._owner: int | None = None
        self._local = threading.local()
        # Helpers that create TEMP tables on a connection note them here (per connection).
        self.temp_tables: set[str] = set()
        # (thread, its reader); readers of threads that ended are closed on the next open
        self._readers: list[tuple[threading.Thread, Connection]] | None = (
            [] if readers and path != ":memory:" else None
        )
        for pragma in (
            *(("PRAGMA journal_mode=WAL",) if readers else ()),
            "PRAGMA synchronous=NORMAL",
            "PRAGMA foreign_keys=OFF",
            "PRAGMA busy_timeout=10000",
            "PRAGMA temp_store=MEMORY",
            f"PRAGMA cache_size={CACHE_PAGES_KIB}",
        ):
            self._db.execute(pragma)

    def close(self) -> None:
        """Close the connection and every reader opened from it."""
        with self._lock, self._readers_lock:
            for _, reader in self._readers or ():
                reader.close()
            if self._readers is not None:
                self._readers.clear()
            self._db.close()

    def reader(self) -> Connection:
        """The connection for read-only statements in the calling thread.

        For a database file this is a connection of the thread's own, opened on first
        use (a fresh snapshot per statement: it sees every committed write). This one
        is returned for an in-memory database, and inside a transaction the calling
        thread holds here, so that the transaction's own writes are seen.
        """
        if self._readers is None or self.held_here:
            return self
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = Connection(self.path, readers=False)
            self._local.conn = conn
            with self._readers_lock:
                for thread, old in [r for r in self._readers if not r[0].is_alive()]:
                    old.close()
                    self._readers.remove((thread, old))
                self._readers.append((threading.current_thread(), conn))
        return conn

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open on this connection (in any thread)."""
        return self._db.in_transaction

    @property
    def held_here(self) -> bool:
        """Whether the calling thread is inside a :meth:`transaction` of this connection."""
        return bool(self._depth) and self._owner == threading.get_ident()

    @contextmanager
    def transaction(self, *, immediate: bool = True) -> Iterator[None]:
        """BEGIN … COMMIT, rolled back on any exception; nested calls join the outer one."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._run("BEGIN IMMEDIATE" if immediate else "BEGIN", ())
            self._depth = 1
            self._owner = threading.get_ident()
            try:
                yield
            except BaseException:
                self._depth, self._owner = 0, None
                report("ROLLBACK", ())
                self._db.execute("ROLLBACK")
                raise
            self._depth, self._owner = 0, None
            self._run("COMMIT", ())

    def _run(self, sql: str, params: Sequence[Any], plain: bool = False) -> sqlite3.Cursor:
        report(sql, params)
        try:
            if plain:
                cursor = self._db.cursor()
                cursor.row_factory = None
                return cursor.execute(sql, params)
            return self._db.execute(sql, params)
        except OverflowError as exc:  # a caller's integer beyond SQLite's 64 bits
            raise InvalidRequest(f"a number is too large for the store: {exc}") from exc
        except UnicodeEncodeError as exc:  # e.g. a lone surrogate, not valid UTF-8
            raise InvalidRequest(f"text is not valid Unicode: {exc.reason}") from exc
        except sqlite3.IntegrityError as exc:
            raise sqlite_conflict(str(exc)) from exc
        except sqlite3.Error as exc:
            raise store_failure("SQLite", str(exc)) from exc

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one statement."""
        with self._lock:
            return self._run(sql, params)

    def write(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; return how many rows it changed."""
        return self.execute(sql, params).rowcount

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for many parameter rows."""
        with self._lock:
            report(sql, rows)
            try:
                self._db.executemany(sql, rows)
            except OverflowError as exc:
                raise InvalidRequest(f"a number is too large for the store: {exc}") from exc
            except UnicodeEncodeError as exc:
                raise InvalidRequest(f"text is not valid Unicode: {exc.reason}") from exc
            except sqlite3.IntegrityError as exc:
                raise sqlite_conflict(str(exc)) from exc
            except sqlite3.Error as exc:
                raise store_failure("SQLite", str(exc)) from exc

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run a query and fetch every row."""
        with self._lock:
            return self._run(sql, params).fetchall()

    def tuples(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a query and fetch every row as a plain tuple: cheaper to make and to read
        by position than a ``sqlite3.Row``, and once the collector has seen a tuple of
        plain values it stops tracking it (a row cache of them costs a full collection
        nothing)."""
        with self._lock:
            return self._run(sql, params, plain=True).fetchall()

    def batches(
        self, sql: str, params: Sequence[Any] = (), size: int = 65_536
    ) -> Iterator[list[sqlite3.Row]]:
        """Run a query and yield its rows in lists of at most ``size`` (the connection
        stays locked until the last one)."""
        with self._lock:
            cursor = self._run(sql, params)
            while True:
                try:
                    rows = cursor.fetchmany(size)
                except sqlite3.Error as exc:
                    raise store_failure("SQLite", str(exc)) from exc
                if not rows:
                    return
                yield rows

    def one(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        """Run a query and fetch the first row."""
        with self._lock:
            row: sqlite3.Row | None = self._run(sql, params).fetchone()
            return row
