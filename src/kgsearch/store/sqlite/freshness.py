"""Every freshness mark a SQLite search checks, in one statement (``store/scope.py``).

The marks: each kind's epoch (``epoch:<kind>``, moved by every write to the kind's
rows or vectors: the in-memory vectors and the held BM25 owners check it), each kind's
rows epoch (``rows:<kind>``, the row cache's, ``row_cache.py``), the FTS5 structure
records of each kind's index (the held postings' stamp, ``held_lexical.py``) and
whether rows of each kind wait in ``fts_stale`` for their index entries. Of objects,
relationships and chunks: a check of another kind (communities) reads on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgsearch.model import Kind
from kgsearch.store.scope import scoped
from kgsearch.store.sqlite.connection import Connection
from kgsearch.store.tracing import active

__all__ = ["Marks", "marks", "meta_value"]

_KINDS = (Kind.OBJECT, Kind.RELATIONSHIP, Kind.CHUNK)
_KEYS = tuple(f"{prefix}:{k.value}" for prefix in ("epoch", "rows") for k in _KINDS)
_SQL = "SELECT " + ", ".join(
    [
        *(f"(SELECT value FROM meta WHERE key = '{key}')" for key in _KEYS),
        *(
            f"(SELECT block FROM {k.table}_fts_data WHERE id = {block})"
            for k in _KINDS
            for block in (1, 10)
        ),
        *(f"EXISTS (SELECT 1 FROM fts_stale WHERE tbl = '{k.table}')" for k in _KINDS),
    ]
)


@dataclass(frozen=True)
class Marks:
    """The marks as one statement read them.

    Attributes:
        meta: ``epoch:<kind>`` and ``rows:<kind>`` → value as stored (None: no such key).
        stamps: Kind → its FTS5 structure records (``held_lexical.stamp``).
        waiting: Kind → whether rows of it wait in ``fts_stale``.
    """

    meta: dict[str, Any]
    stamps: dict[Kind, tuple[bytes, ...]]
    waiting: dict[Kind, bool]


def marks(db: Connection) -> Marks | None:
    """The search's marks of ``db``'s database, read on its first check (None outside
    a read scope, inside a transaction, whose own writes may move them, and when the
    statements are traced: an explained search shows each check's own statement)."""
    if db.in_transaction or active():
        return None
    key = ("sqlite-marks", db.path if db.path != ":memory:" else id(db))
    return scoped(key, lambda: _read(db))


def _read(db: Connection) -> Marks:
    row = db.one(_SQL)
    assert row is not None
    values = tuple(row)
    n = len(_KEYS)
    blocks = values[n : n + 2 * len(_KINDS)]
    return Marks(
        meta=dict(zip(_KEYS, values[:n], strict=True)),
        stamps={
            k: tuple(bytes(v) for v in blocks[2 * i : 2 * i + 2] if v is not None)
            for i, k in enumerate(_KINDS)
        },
        waiting={k: bool(v) for k, v in zip(_KINDS, values[n + 2 * len(_KINDS) :], strict=True)},
    )


def meta_value(db: Connection, key: str) -> Any:
    """``meta``'s value of ``key`` (None: no such key): from the search's marks when it
    has them and they hold the key, else read here."""
    found = marks(db)
    if found is not None and key in found.meta:
        return found.meta[key]
    row = db.one("SELECT value FROM meta WHERE key = ?", (key,))
    return None if row is None else row["value"]
