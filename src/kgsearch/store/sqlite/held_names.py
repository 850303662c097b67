"""Object names held in memory: a search's name look-up without its statement.

A unified search looks its names up once (the name leg's and the anchored leg's span
linking, :meth:`~kgsearch.store.base.SearchIndex.named_objects`): on SQLite one
``key COLLATE NOCASE IN (…)`` statement over the objects' ``(project, key)`` index,
about 0.1–0.2 ms with its Python around it on MetaQA. :class:`HeldNames` holds every
live object's (key, type, id) by project and folded key (ASCII case, as ``NOCASE``
folds), so an unfiltered look-up is a few dictionary probes.

Freshness follows :mod:`~kgsearch.store.sqlite.held_lexical`'s contract. The names are
stamped with the object epoch (``meta``'s ``epoch:object``), which every write
transaction that changes objects advances before it commits (upserts, deletes, purges,
embedding results: ``_changed``). A look-up reads the epoch (one statement) and answers
from the held names only when it equals theirs; otherwise the table answers, as before,
while a background thread reads the names again (no sooner than
:data:`_REBUILD_SPACING` times the last read's duration after it ended). Inside a write
transaction of this connection the table answers (only it sees the transaction's own
writes). A read is one read transaction, so the names and their epoch are of one
snapshot. Filtered look-ups (the name leg of a filtered search) always ask the table.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kgsearch.store.sqlite.connection import CACHE_PAGES_KIB, Connection

__all__ = ["EPOCH_SQL", "HeldNames", "Names", "read_names"]

EPOCH_SQL = "SELECT value FROM meta WHERE key = 'epoch:object'"
_REBUILD_SPACING = 4.0
"""A background read starts no sooner than this many times the last read's duration
after it ended (a store written to all the time spends at most a fifth of a core on
reading its names again)."""
_READ_CACHE_KIB = -2048
"""The page cache of the read's connection while it reads (KiB, as SQLite counts it)."""
_RETRY_SECONDS = 30.0
"""After a failed read, the table answers for this long before the next try."""

_log = logging.getLogger(__name__)

Entry = tuple[str, str, str]
"""One live object: its key as stored, its type and its id."""


@dataclass(frozen=True)
class Names:
    """Every live object by project and folded key, as of the object epoch ``epoch``.

    Attributes:
        by_key: project → folded key → the objects whose key folds to it.
        epoch: The object epoch the names were read at.
        rows: How many objects are held.
        seconds: How long the read took.
    """

    by_key: dict[str, dict[str, tuple[Entry, ...]]]
    epoch: str
    rows: int
    seconds: float

    def found(self, project: str, keys: Sequence[str]) -> list[Entry]:
        """The project's objects whose key folds to one of ``keys`` (already folded)."""
        held = self.by_key.get(project)
        if held is None:
            return []
        return [entry for k in keys for entry in held.get(k, ())]

    @property
    def nbytes(self) -> int:
        """Bytes held: the dictionaries, tuples and strings (types are shared)."""
        size = sys.getsizeof
        total = size(self.by_key)
        types: set[int] = set()
        for held in self.by_key.values():
            total += size(held)
            for key, entries in held.items():
                total += size(key) + size(entries)
                for entry in entries:
                    total += size(entry) + size(entry[0]) + size(entry[2])
                    if id(entry[1]) not in types:
                        types.add(id(entry[1]))
                        total += size(entry[1])
        return total


def read_names(db: Connection, fold: Callable[[str], str]) -> Names:
    """Every live object's key, type and id, with the object epoch, in one read
    transaction."""
    started = time.perf_counter()
    by_key: dict[str, dict[str, list[Entry]]] = {}
    types: dict[str, str] = {}
    rows = 0
    # the scan visits every object row once: through a small page cache, so that it
    # does not fill the connection's
    db.execute(f"PRAGMA cache_size={_READ_CACHE_KIB}")
    try:
        with db.transaction(immediate=False):
            row = db.one(EPOCH_SQL)
            epoch = str(row["value"]) if row is not None else "0"
            for batch in db.batches(
                "SELECT project, key, type, id FROM objects WHERE deleted_at IS NULL"
            ):
                for project, key, type_, id in batch:
                    type_ = types.setdefault(type_, type_)
                    entry = (key, type_, id)
                    by_key.setdefault(project, {}).setdefault(fold(key), []).append(entry)
                    rows += 1
    finally:
        db.execute(f"PRAGMA cache_size={CACHE_PAGES_KIB}")
    frozen = {p: {k: tuple(v) for k, v in held.items()} for p, held in by_key.items()}
    return Names(frozen, epoch, rows, time.perf_counter() - started)


@dataclass
class _Held:
    names: Names | None = None
    building: bool = False
    ready_at: float = float("-inf")


class HeldNames:
    """A store's object names, read in the background when first needed and again when
    stale (module docstring).

    Args:
        fold: A key as the store compares keys ignoring case.
        background: Whether reads run in a background thread (False: the asking
            look-up reads them and answers with them; tests).
    """

    def __init__(self, fold: Callable[[str], str], background: bool = True) -> None:
        self.fold = fold
        self.background = background
        self._held = _Held()
        self._lock = threading.Lock()
        self.answered = 0  # look-ups the held names answered (tests, benchmarks)

    def clear(self) -> None:
        """Drop the held names."""
        with self._lock:
            self._held = _Held()

    @property
    def names(self) -> Names | None:
        """The names held now, fresh or not (memory reports, tests)."""
        return self._held.names

    def fresh(self, db: Connection, reader: Callable[[], Connection]) -> Names | None:
        """The held names if their epoch is the objects' epoch now; else None, and a
        read starts (when none runs and the last ended long enough ago). ``reader``
        gives the reading thread its connection."""
        if db.in_transaction:
            return None
        with self._lock:
            held = self._held
        row = db.one(EPOCH_SQL)
        epoch = str(row["value"]) if row is not None else "0"
        if held.names is not None and held.names.epoch == epoch:
            self.answered += 1
            return held.names
        with self._lock:
            due = not held.building and time.monotonic() >= held.ready_at
            held.building = held.building or due
        if due and self.background:
            threading.Thread(
                target=self._read, args=(held, reader), name="kgsearch-held-names", daemon=True
            ).start()
        elif due:
            self._read(held, reader)
            names = held.names
            if names is None or names.epoch != epoch:
                return None
            self.answered += 1
            return names
        return None

    def warm(self, db: Connection) -> Names | None:
        """Read the names here and now unless fresh ones are held (warm-up); None
        inside a write transaction or when the read failed."""
        if db.in_transaction:
            return None
        with self._lock:
            held = self._held
            held.building = True
        self._read(held, lambda: db)
        return held.names

    def _read(self, held: _Held, reader: Callable[[], Connection]) -> None:
        # a background thread has no caller to raise to: a failure (a store closed
        # under it included) leaves the look-ups to the table for a while, and is logged
        try:
            names = read_names(reader(), self.fold)
        except Exception as exc:
            _log.warning("object names answered by the table: names not held: %s", exc)
            with self._lock:
                held.building, held.ready_at = False, time.monotonic() + _RETRY_SECONDS
            return
        with self._lock:
            held.names, held.building = names, False
            held.ready_at = time.monotonic() + _REBUILD_SPACING * names.seconds
