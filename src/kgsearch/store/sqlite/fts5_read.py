"""An FTS5 index's rows read into numpy arrays for the held postings
(:mod:`kgsearch.store.sqlite.held_lexical`), a few statements a table.

A read of one row per Python object (a row of ``fts5vocab``'s ``instance`` table per
word in the index, a ``docsize`` row per indexed row) cost about 2 s of CPU for
MetaQA's 129k relationships, in the background thread that competes with searches on
a small machine. Here each statement returns a few rows of text, ``group_concat``
aggregates over up to :data:`_CHUNK` rows (a keyset walk over an index, or a range of
the index's tokens), which numpy parses: integers from their decimal list, ids and
FTS5's size records from hex, the sizes' varints decoded as arrays
(:func:`_first_varints`). The arrays equal a row-by-row read's, element for element
(``tests/store/sqlite/test_sqlite_held_bm25.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from kgsearch.errors import StoreError
from kgsearch.store.sqlite.connection import Connection
from kgsearch.store.sqlite.sql import placeholders

__all__ = ["instance_rows", "owner_columns", "row_lengths", "varints"]

IntArray = npt.NDArray[np.int64]


def varints(blob: bytes) -> list[int]:
    """The SQLite varints in an FTS5 record (``docsize`` sizes; the averages record:
    rows, then each column's token total)."""
    out: list[int] = []
    value = 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            out.append(value)
            value = 0
    return out


def _first_varints(blob: bytes, lengths: IntArray) -> IntArray:
    """The first SQLite varint of each of the records laid end to end in ``blob``
    (``lengths`` bytes each: ``docsize`` rows, whose first varint is the row's length
    in tokens; an empty record counts 0), decoded in numpy.

    A varint is 7 bits a byte, most significant first, the high bit set on every byte
    but its last (FTS5's sizes are far below the 9-byte form's 2**56).

    Raises:
        StoreError: The records are not whole varints.
    """
    data = np.frombuffer(blob, dtype=np.uint8).astype(np.int64)
    out = np.zeros(len(lengths), dtype=np.int64)
    if len(data) != int(lengths.sum()) or (len(data) and data[-1] & 0x80):
        raise StoreError("FTS5 sizes: a record is not whole varints")
    if not len(data):
        return out
    last = (data & 0x80) == 0
    ends = np.flatnonzero(last)
    firsts = np.concatenate(([0], ends[:-1] + 1))  # where each varint begins
    which = np.repeat(np.arange(len(ends)), ends - firsts + 1)  # each byte's varint
    after = ends[which] - np.arange(len(data))  # bytes of its varint after this one
    if int(after.max()) > 8:
        raise StoreError("FTS5 sizes: a record holds a malformed varint")
    values = np.add.reduceat((data & 0x7F) << (7 * after), firsts)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    filled = lengths > 0
    at = starts[filled]
    if not np.array_equal(firsts[which[at]], at):
        raise StoreError("FTS5 sizes: a record does not begin a varint")
    out[filled] = values[which[at]]
    return out


_CHUNK = 200_000
"""Rows (or a token's instances) one aggregate of a read gathers at most."""


def _chunks(
    db: Connection, columns: str, source: str, keys: str, *, group: str | None = None
) -> Iterator[list[tuple[Any, ...]]]:
    """Rows of ``columns`` (aggregates over ``source``'s rows, with ``count(*)``
    appended) for chunks of at most :data:`_CHUNK` rows in the order of ``keys``
    (unique, indexed: a keyset walk), grouped by ``group`` (the first key) within a
    chunk: a few rows of text each instead of one row of Python objects per row read."""
    last = keys.split(", ")[-1]
    after: tuple[Any, ...] = ()
    while True:
        where = f" WHERE ({keys}) > ({placeholders(len(after))})" if after else ""
        rows = db.all(
            f"SELECT {columns}, {group or 'NULL'}, max({last}), count(*) FROM ({source}"
            f"{where} ORDER BY {keys} LIMIT {_CHUNK})" + (f" GROUP BY {group}" if group else ""),
            after,
        )
        rows = [r for r in rows if r[-1]]
        if not rows:
            return
        yield [(*r[:-3], r[-1]) for r in rows]
        if sum(r[-1] for r in rows) < _CHUNK:
            return
        # the chunk's last key: its greatest group's greatest key (as SQLite orders text)
        end = max(rows, key=lambda r: str(r[-3]).encode()) if group else rows[0]
        after = (end[-3], end[-2]) if group else (end[-2],)


def instance_rows(db: Connection, table: str, terms: list[str], counts: IntArray) -> IntArray:
    """Each instance's rowid in an ``fts5vocab`` ``instance`` table (token after token,
    in the index's order, as ``terms`` and their ``counts`` list them), a range of
    tokens of at most :data:`_CHUNK` instances an aggregate."""
    parts: list[IntArray] = []
    first, total = 0, 0
    for number, count in enumerate(counts.tolist()):
        total += count
        if total >= _CHUNK or number == len(terms) - 1:
            whole = first == 0 and number == len(terms) - 1
            row = db.one(
                f"SELECT group_concat(doc) FROM {table}"
                + ("" if whole else " WHERE term >= ? AND term <= ?"),
                () if whole else (terms[first], terms[number]),
            )
            parts.append(_integers(row[0] if row is not None else None))
            first, total = number + 1, 0
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


def _integers(text: str | None) -> IntArray:
    """The integers of a ``group_concat`` (comma-separated; None: none)."""
    if not text:
        return np.empty(0, dtype=np.int64)
    return np.fromstring(text, dtype=np.int64, sep=",")


def owner_columns(
    db: Connection, table: str
) -> tuple[IntArray, npt.NDArray[np.int32], dict[str, int], bytes, IntArray]:
    """Each row of ``table``: its rowid (ascending), its project's number
    (``projects``: project → number), and its id's UTF-8 bytes laid end to end
    (``offsets`` delimit them), read from the table's (project, id) index.

    Raises:
        StoreError: A row has no id.
    """
    projects: dict[str, int] = {}
    rowid_parts: list[IntArray] = []
    code_parts: list[npt.NDArray[np.int32]] = []
    length_parts: list[IntArray] = []
    id_parts: list[bytes] = []
    for rows in _chunks(
        db,
        "project, group_concat(rowid), group_concat(length(CAST(id AS BLOB))), "
        "group_concat(hex(id), '')",
        f"SELECT rowid, id, project FROM {table}",
        "project, id",
        group="project",
    ):
        for group in rows:
            found, lengths = _integers(group[1]), _integers(group[2])
            if len(found) != len(lengths) or len(found) != group[-1]:
                raise StoreError(f"{table}: a row has no id")
            rowid_parts.append(found)
            length_parts.append(lengths)
            code = projects.setdefault(str(group[0]), len(projects))
            code_parts.append(np.full(len(found), code, dtype=np.int32))
            id_parts.append(bytes.fromhex(group[3] or ""))
    rowids = np.concatenate(rowid_parts) if rowid_parts else np.empty(0, dtype=np.int64)
    lengths = np.concatenate(length_parts) if length_parts else np.empty(0, dtype=np.int64)
    codes = np.concatenate(code_parts) if code_parts else np.empty(0, dtype=np.int32)
    # the ids by rowid: each one's bytes gathered from where the scan left them
    order = np.argsort(rowids, kind="stable")
    was = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    offsets = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(lengths[order], out=offsets[1:])
    gather = np.repeat(was[order] - offsets[:-1], lengths[order]) + np.arange(offsets[-1])
    ids = np.frombuffer(b"".join(id_parts), dtype=np.uint8)[gather].tobytes()
    return rowids[order], codes[order], projects, ids, offsets


def row_lengths(db: Connection, table: str) -> tuple[IntArray, IntArray]:
    """(rowids ascending, lengths in tokens) of an FTS5 ``docsize`` table's rows (a
    row's first column; a table of one column, as the stores' indexes are).

    Raises:
        StoreError: A row has no size, or a size is not whole varints.
    """
    sizes = [
        (_integers(r[0]), _integers(r[1]), bytes.fromhex(r[2] or ""), r[-1])
        for rows in _chunks(
            db,
            "group_concat(id), group_concat(length(sz)), group_concat(hex(sz), '')",
            f"SELECT id, sz FROM {table}",
            "id",
        )
        for r in rows
    ]
    if any(len(ids) != n or len(widths) != n for ids, widths, _, n in sizes):
        raise StoreError(f"{table}: a row has no size")
    rowids = np.concatenate([np.empty(0, dtype=np.int64), *(s[0] for s in sizes)])
    lengths = np.concatenate(
        [np.empty(0, dtype=np.int64), *(_first_varints(b, w) for _, w, b, _ in sizes)]
    )
    ascending = np.argsort(rowids, kind="stable")
    return rowids[ascending], lengths[ascending]
