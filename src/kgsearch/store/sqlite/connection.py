"""One SQLite connection with a lock, nested transactions and wrapped driver errors."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kgsearch.errors import Conflict, InvalidRequest, StoreError

__all__ = ["CACHE_PAGES_KIB", "Connection"]

# Page cache per connection, in KiB as SQLite counts it when negative (64 MiB).
CACHE_PAGES_KIB = -65536


class Connection:
    """A thread-safe wrapper: every statement runs under one re-entrant lock.

    Args:
        path: Database file, or ``:memory:``.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite database {path!r}: {exc}") from exc
        self._db.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._depth = 0
        for pragma in (
            "PRAGMA journal_mode=WAL",
            "PRAGMA synchronous=NORMAL",
            "PRAGMA foreign_keys=OFF",
            "PRAGMA busy_timeout=10000",
            "PRAGMA temp_store=MEMORY",
            f"PRAGMA cache_size={CACHE_PAGES_KIB}",
        ):
            self._db.execute(pragma)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

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
            try:
                yield
            except BaseException:
                self._depth = 0
                self._db.execute("ROLLBACK")
                raise
            self._depth = 0
            self._run("COMMIT", ())

    def _run(self, sql: str, params: Sequence[Any]) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, params)
        except OverflowError as exc:  # a caller's integer beyond SQLite's 64 bits
            raise InvalidRequest(f"a number is too large for the store: {exc}") from exc
        except UnicodeEncodeError as exc:  # e.g. a lone surrogate, not valid UTF-8
            raise InvalidRequest(f"text is not valid Unicode: {exc.reason}") from exc
        except sqlite3.IntegrityError as exc:
            raise Conflict(f"write conflicts with existing data: {exc}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite error: {exc}") from exc

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one statement."""
        with self._lock:
            return self._run(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for many parameter rows."""
        with self._lock:
            try:
                self._db.executemany(sql, rows)
            except OverflowError as exc:
                raise InvalidRequest(f"a number is too large for the store: {exc}") from exc
            except UnicodeEncodeError as exc:
                raise InvalidRequest(f"text is not valid Unicode: {exc.reason}") from exc
            except sqlite3.IntegrityError as exc:
                raise Conflict(f"write conflicts with existing data: {exc}") from exc
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite error: {exc}") from exc

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run a query and fetch every row."""
        with self._lock:
            return self._run(sql, params).fetchall()

    def one(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        """Run a query and fetch the first row."""
        with self._lock:
            row: sqlite3.Row | None = self._run(sql, params).fetchone()
            return row
