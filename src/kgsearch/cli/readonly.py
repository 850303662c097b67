"""Light commands answered in process without the engine: ``kgsearch stats``,
``kgsearch embed status``, ``kgsearch objects get/list`` and ``kgsearch relationships
get/list`` on a SQLite store of the current schema.

The store and project come from the settings' precedence read without the settings
model (:func:`kgsearch.cli.remote.store_settings`); the file is opened read-only and
counted or read with the store's own statements (:mod:`kgsearch.store.sqlite.readonly`,
:mod:`kgsearch.store.sqlite.readonly_rows`). No pydantic, no numpy, no engine: these
commands start in about the time of ``kgsearch --help``. Anything else (PostgreSQL, an
in-memory store, an older or newer schema, settings only the model can read, a file
SQLite cannot read, a row the model would convert or refuse) returns None, and the
command builds the engine as before, which migrates or explains.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from kgsearch.cli.output import missing_sqlite_file, no_store
from kgsearch.cli.remote import store_settings
from kgsearch.cli.root import State
from kgsearch.store.sqlite.readonly import ReadOnlyCounts, sqlite_file
from kgsearch.store.sqlite.readonly_rows import ReadOnlyRows, Unreadable

__all__ = ["embedding_status_read_only", "rows_read_only", "stats_read_only"]

T = TypeVar("T")
_Reader = TypeVar("_Reader", ReadOnlyCounts, ReadOnlyRows)


def embedding_status_read_only(state: State) -> dict[str, Any] | None:
    """``kgsearch embed status`` as ``Engine.embedding_status`` gives it (JSON), or
    None when only the engine can answer.

    Raises:
        NotFound: The SQLite file does not exist.
    """
    return _answer(state, ReadOnlyCounts.open, lambda c, _: c.embedding_status(state.project))


def stats_read_only(state: State) -> dict[str, Any] | None:
    """``kgsearch stats`` as ``Engine.stats`` gives it (JSON), or None when only the
    engine can answer.

    Raises:
        NotFound: The SQLite file does not exist.
    """
    return _answer(state, ReadOnlyCounts.open, lambda c, project: c.stats(project))


def rows_read_only(state: State, read: Callable[[ReadOnlyRows, str], T]) -> T | None:
    """What ``read`` finds in the store's rows (given the read-only rows and the
    project), or None when only the engine can answer: another store, a file that is
    not a current kgsearch store, or a row the read-only path does not decode exactly
    as the model would. Errors ``read`` raises (NotFound, InvalidRequest) propagate.

    Raises:
        NotFound: The SQLite file does not exist.
    """
    return _answer(state, ReadOnlyRows.open, read)


def _answer(
    state: State, open_: Callable[[str], _Reader | None], read: Callable[[_Reader, str], T]
) -> T | None:
    """``read`` on the store opened read-only by ``open_`` (with the project), or None
    when the store is not a current SQLite file, or SQLite or the row decoding fails.

    Raises:
        NotFound: The SQLite file does not exist.
    """
    found = _sqlite_store(state)
    if found is None:
        return None
    path, project = found
    reader = open_(path)
    if reader is None:
        return None
    try:
        with reader:
            return read(reader, project)
    except (sqlite3.Error, Unreadable):
        return None


def _sqlite_store(state: State) -> tuple[str, str] | None:
    """The SQLite file and the project the command reads, or None for another store.

    Raises:
        NotFound: The SQLite file does not exist.
    """
    chosen = store_settings(state.db, state.project)
    if chosen is None:
        return None
    url, project = chosen
    path = sqlite_file(url)
    if path is None:
        return None
    missing = missing_sqlite_file(url)
    if missing is not None:  # as the engine's path says it, and nothing is created
        raise no_store(missing)
    return path, project
