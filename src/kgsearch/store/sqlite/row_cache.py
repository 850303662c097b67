"""Decoded rows by id, kept between reads while their kind's write epoch holds.

A warm search reads the rows of its fused pool (about twenty on MetaQA) to build its
hits, and the rows of the popular entities come back search after search: one
statement and one decode per row each time (0.3-0.4 ms of CPU a search). Every write
to objects, relationships or chunks advances the kind's epoch in ``meta`` inside its
transaction (``vectors.py``), so decoded rows stay right while the epoch they were
read at is the current one. A reader reads the epoch *before* the rows: rows read
after a write committed in between are newer than their epoch says, and the next
reader, seeing the new epoch, drops them; never older.

Not for a thread inside its own write transaction (its uncommitted writes, or the
epoch it moved, may be rolled back): :meth:`SQLiteReads._get` bypasses the cache then.
The rows handed out are shared between readers: the models are frozen, and nothing
in kgsearch changes their dicts in place.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from itertools import islice
from typing import Any

__all__ = ["CACHED_KINDS", "ROW_CACHE_SIZE", "RowCache"]

ROW_CACHE_SIZE = 8192
"""Rows held per kind (the oldest go first). MetaQA's 300 benchmark questions hydrate
about 6,000 distinct rows in all; a decoded row holds 1-3 KB."""

CACHED_KINDS = frozenset({"object", "relationship", "chunk"})
"""The row kinds with a write epoch (sources have none: they are read directly)."""


class RowCache:
    """Decoded rows per kind, valid for one epoch of the kind.

    Args:
        size: Rows held per kind; 0 holds none.
    """

    def __init__(self, size: int = ROW_CACHE_SIZE) -> None:
        self.size = size
        self._kinds: dict[str, tuple[str, dict[tuple[str, str], Any]]] = {}
        self._lock = threading.Lock()
        self.hits = 0  # rows answered from the cache (benchmarks and tests read them)
        self.misses = 0

    def get(self, kind: str, epoch: str, project: str, ids: Sequence[str]) -> dict[str, Any]:
        """The held rows among ``ids`` as of ``epoch`` (a cache held for another epoch is
        dropped)."""
        with self._lock:
            held = self._kinds.get(kind)
            if held is None or held[0] != epoch:
                self._kinds[kind] = (epoch, {})
                self.misses += len(ids)
                return {}
            rows = held[1]
            found = {i: row for i in ids if (row := rows.get((project, i))) is not None}
            self.hits += len(found)
            self.misses += len(ids) - len(found)
            return found

    def put(self, kind: str, epoch: str, project: str, rows: Iterable[Any]) -> None:
        """Hold rows read at ``epoch`` (rows of an epoch the cache has left are not)."""
        if self.size <= 0:
            return
        with self._lock:
            held = self._kinds.get(kind)
            if held is None or held[0] != epoch:
                return
            cached = held[1]
            for row in rows:
                cached[(project, row.id)] = row
            extra = len(cached) - self.size
            if extra > 0:
                for old in list(islice(cached, extra)):
                    del cached[old]

    def clear(self) -> None:
        """Drop every held row (vectors and embedded texts forgotten at once, with no
        epoch moved)."""
        with self._lock:
            self._kinds.clear()
