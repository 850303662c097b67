"""Rows by id, kept between reads while their kind's rows epoch holds.

A warm search reads the rows of its fused pool (about twenty on MetaQA) to build its
hits, and the rows of popular entities come back search after search, each time one
statement and one decode a row. Triggers (migration ``m015``) advance ``rows:<kind>`` in
``meta`` on every update of a column a decoded row shows (its fields, its embedding
state, its liveness) and on every delete, inside the writing transaction, whichever
process writes; so a decoded row stays right while the epoch it was read at is the
current one. Inserts move nothing: a row not read yet is never held. A reader reads the
epoch *before* the rows: rows read after a write committed in between are newer than
their epoch says, and the next reader, seeing the new epoch, drops them; never older.
A store without the key (not migrated to m015) has no triggers, and reads directly.

Not for a thread inside its own write transaction (its uncommitted writes, or the
epoch it moved, may be rolled back): the store's reads bypass the cache then, and
when traced (an explained search shows the statements that read the rows). The SQLite
reads hold each row's values as read (a tuple of strings and numbers, which the
collector stops tracking) and decode them for each read, so no reader shares a model
with another (``reads.py``).

The span names the anchored leg looks up are not held: a search looks up about twenty,
mostly new, so with any bound the oldest went before they came back (300 MetaQA
questions: 6,300 names) and each search paid the epoch's statement for nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any

from kgsearch.store.sqlite.freshness import meta_value

if TYPE_CHECKING:
    from kgsearch.store.sqlite.connection import Connection

__all__ = ["CACHED_KINDS", "ROW_CACHE_SIZE", "Key", "RowCache", "epoch_of"]

Key = tuple[str, str]
"""(project, id) of a row."""

ROW_CACHE_SIZE = 4096
"""Rows held per kind (the oldest go first). MetaQA's 300 benchmark questions read
about 2,000 objects and 3,300 relationships; full object and relationship spaces of
MetaQA rows held 28.5 MB of Python objects as decoded models, 3.65 KB a row (a chunk
holds its text besides)."""

CACHED_KINDS = frozenset({"object", "relationship", "chunk"})
"""The row kinds with a rows epoch (sources have none: they are read directly)."""


class RowCache:
    """Values per space (a row kind), valid for one epoch of it.

    Args:
        size: Entries held per space; 0 holds none.
    """

    def __init__(self, size: int = ROW_CACHE_SIZE) -> None:
        self.size = size
        self._spaces: dict[str, tuple[str, dict[Key, Any]]] = {}
        self._lock = threading.Lock()
        self.hits = 0  # keys answered from the cache (benchmarks and tests read them)
        self.misses = 0

    def get(self, space: str, epoch: str, keys: Sequence[Key]) -> dict[Key, Any]:
        """The held values among ``keys`` as of ``epoch`` (a space held for another
        epoch is dropped)."""
        with self._lock:
            held = self._spaces.get(space)
            if held is None or held[0] != epoch:
                self._spaces[space] = (epoch, {})
                self.misses += len(keys)
                return {}
            values = held[1]
            found = {k: v for k in keys if (v := values.get(k)) is not None}
            self.hits += len(found)
            self.misses += len(keys) - len(found)
            return found

    def put(self, space: str, epoch: str, items: Iterable[tuple[Key, Any]]) -> None:
        """Hold values read at ``epoch`` (those of an epoch the space has left are not)."""
        if self.size <= 0:
            return
        with self._lock:
            held = self._spaces.get(space)
            if held is None or held[0] != epoch:
                return
            values = held[1]
            values.update(items)
            extra = len(values) - self.size
            if extra > 0:
                for old in list(islice(values, extra)):
                    del values[old]

    def clear(self) -> None:
        """Drop everything held (the store closes)."""
        with self._lock:
            self._spaces.clear()


def epoch_of(db: Connection, kind: str) -> str | None:
    """The kind's rows epoch as ``db`` sees it now; None when the store has no such
    epoch (not migrated to m015: no trigger moves it, so nothing may be held)."""
    value = meta_value(db, f"rows:{kind}")
    return None if value is None else str(value)
