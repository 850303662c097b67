"""Light commands answered in process without the engine: ``kgsearch stats`` and
``kgsearch embed status`` on a SQLite store of the current schema.

The store and project come from the settings' precedence read without the settings
model (:func:`kgsearch.cli.remote.store_settings`); the file is opened read-only and
counted with the store's own statements (:mod:`kgsearch.store.sqlite.readonly`). No
pydantic, no numpy, no engine: these commands start in about the time of
``kgsearch --help``. Anything else (PostgreSQL, an in-memory store, an older or newer
schema, settings only the model can read, a file SQLite cannot read) returns None,
and the command builds the engine as before, which migrates or explains.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from kgsearch.cli.output import missing_sqlite_file, no_store
from kgsearch.cli.remote import store_settings
from kgsearch.cli.root import State
from kgsearch.store.sqlite.readonly import ReadOnlyCounts, sqlite_file

__all__ = ["embedding_status_read_only", "stats_read_only"]


def _open(state: State) -> tuple[ReadOnlyCounts, str] | None:
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
    counts = ReadOnlyCounts.open(path)
    return None if counts is None else (counts, project)


def stats_read_only(state: State) -> dict[str, Any] | None:
    """``kgsearch stats`` as ``Engine.stats`` gives it (JSON), or None when only the
    engine can answer.

    Raises:
        NotFound: The SQLite file does not exist.
    """
    opened = _open(state)
    if opened is None:
        return None
    counts, project = opened
    try:
        with counts:
            return counts.stats(project)
    except sqlite3.Error:
        return None


def embedding_status_read_only(state: State) -> dict[str, Any] | None:
    """``kgsearch embed status`` as ``Engine.embedding_status`` gives it (JSON), or
    None when only the engine can answer.

    Raises:
        NotFound: The SQLite file does not exist.
    """
    opened = _open(state)
    if opened is None:
        return None
    counts, _ = opened
    try:
        with counts:
            return counts.embedding_status(state.project)
    except sqlite3.Error:
        return None
