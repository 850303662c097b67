"""The in-memory vector matrices of a SQLite store, kept in step with writes by key.

Each (project, kind) gets one matrix of its embedded rows (with an int8 copy from
``INT8_MIN_ROWS`` rows and an HNSW index from ``ann_min_rows``, see ``ann.py``). Every
write to a kind advances the kind's epoch in ``meta`` inside its transaction, and
triggers (migration ``m008``) append the rowid of every row whose vector or liveness
changed to the ``vector_changes`` log, in the same transaction: so any process's writes
are seen, in commit order.

A search that finds the epoch moved reads the log after its matrix's position and
applies the changes by key: a changed row's old position is marked dead (left out of
every result, its int8 code zeroed, removed from the HNSW graph) and its current vector,
if it is still live and embedded, is appended at a new position (and added to the
graph). The matrix has room to grow; it is reloaded from scratch only when that pays
or is needed: more than ``_MAX_CHANGED`` of its rows changed at once, more than
``_MAX_DEAD`` of its positions are dead, the log was pruned past its position, or its
HNSW index is still being built. Writers keep the log to its last ``_LOG_KEEP`` entries.

Entries are snapshots: a search holding an older entry keeps answering from it (rows
appended for newer entries lie beyond its size and are never returned to it).

A load from SQLite is saved beside the store and later loads, in any process, map that
file instead and apply the changes logged since it (``saved_vectors.py``).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from kgsearch.model import Kind
from kgsearch.store import nbits
from kgsearch.store.ann import ANN_MIN_ROWS, INT8_MIN_ROWS, AnnIndex, Int8Scan
from kgsearch.store.sqlite import saved_vectors
from kgsearch.store.sqlite.connection import Connection
from kgsearch.store.sqlite.freshness import meta_value
from kgsearch.store.sqlite.saved_vectors import Saved
from kgsearch.store.sqlite.sql import chunked, placeholders

__all__ = ["Entry", "VectorCache"]

# Apply changes by key up to this share of the matrix's rows at once; reload beyond.
_MAX_CHANGED = 0.2
# Reload once this share of the positions is dead (their memory and scan time wasted).
_MAX_DEAD = 0.2
# Writers keep this many log entries (a reader further behind reloads).
_LOG_KEEP = 250_000
# Spare rows allocated with a matrix: an eighth more, at least this many.
_MIN_SPARE = 1024


@dataclass
class Entry:
    """One (project, kind)'s vectors as of log position ``seq``.

    Attributes:
        epoch: The kind's epoch this entry answers for.
        seq: The last ``vector_changes`` entry applied.
        rowids: Rowid of each position (-1 for dead positions).
        ids: Row id of each position (dead positions keep their old id).
        matrix: The vectors, one per position (a view of ``buffer``).
        buffer: The matrix with spare rows after it.
        alive: Which positions are live; None when all are.
        has_validity: Whether any relationship has validity bounds.
    """

    epoch: str
    seq: int
    rowids: npt.NDArray[np.int64]
    ids: list[str]
    matrix: npt.NDArray[np.float32]
    buffer: npt.NDArray[np.float32]
    has_validity: bool
    alive: npt.NDArray[np.bool_] | None = None
    ann: AnnIndex | None = None
    scan: Int8Scan | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def live(self) -> int:
        """How many positions are live."""
        return len(self.ids) if self.alive is None else int(self.alive.sum())


class VectorCache:
    """Per-(project, kind) vector matrices, kept in step with writes (module docstring).

    Args:
        ann_min_rows: Collections at least this large also get an HNSW index
            (None disables every acceleration: each query is a float32 product).
        index_dir: Where HNSW indexes and the scans' 4-bit kernels are saved once built
            and loaded from on the next open while the vectors are unchanged, and where
            the vectors themselves are saved and mapped from (None: built and read in
            every process).
    """

    def __init__(
        self, ann_min_rows: int | None = ANN_MIN_ROWS, index_dir: Path | None = None
    ) -> None:
        self._entries: dict[tuple[str, Kind], Entry] = {}
        self._lock = threading.Lock()
        # one loader per (project, kind): concurrent cold searches wait for it rather
        # than each loading a copy of the matrix and building an index of their own
        self._loading: dict[tuple[str, Kind], threading.Lock] = {}
        self.ann_min_rows = ann_min_rows
        self.index_dir = index_dir
        self.reloads = 0  # full loads so far (tests and benchmarks read it)
        self.mapped = 0  # loads from a saved file (saved_vectors.py)
        self.saves = 0  # loads then mapped from the file they saved (or found)

    def clear(self) -> None:
        """Drop every cached matrix."""
        with self._lock:
            self._entries.clear()

    @staticmethod
    def touch(db: Connection, kind: Kind) -> None:
        """Advance the kind's epoch and prune the change log (call inside the writing
        transaction; the triggers have logged the changed rows)."""
        db.execute(
            "INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT(key) DO UPDATE "
            "SET value = CAST(value AS INTEGER) + 1",
            (f"epoch:{kind.value}",),
        )
        db.execute(
            "DELETE FROM vector_changes WHERE seq <= (SELECT max(seq) FROM vector_changes) - ?",
            (_LOG_KEEP,),
        )

    def entry(self, db: Connection, project: str, kind: Kind) -> Entry:
        """The current matrix for a project and kind, brought up to date if stale."""
        value = meta_value(db, f"epoch:{kind.value}")
        epoch = "0" if value is None else value
        with self._lock:
            entry = self._entries.get((project, kind))
            if entry is not None and entry.epoch == epoch:
                return entry
            loading = self._loading.setdefault((project, kind), threading.Lock())
        with loading:
            with self._lock:
                entry = self._entries.get((project, kind))
            if entry is not None and entry.epoch == epoch:
                return entry  # another thread brought it up to date meanwhile
            fresh = _advance(db, project, kind, entry, epoch) if entry is not None else None
            if fresh is None:
                fresh = self._load(db, project, kind, epoch)
            with self._lock:
                self._entries[(project, kind)] = fresh
            return fresh

    def _load(self, db: Connection, project: str, kind: Kind, epoch: str) -> Entry:
        self.reloads += 1
        scanned = self.ann_min_rows is not None
        base = self._saved_path(project, kind, "vectors") if scanned else None
        with saved_vectors.loading(base):
            entry = self._mapped(db, project, kind, epoch, base) if base is not None else None
            if entry is None:
                entry = _load(db, project, kind, epoch)
                if scanned and len(entry.ids) >= INT8_MIN_ROWS:
                    saved = self._saved_path(project, kind, "nbits")
                    entry.scan = Int8Scan(entry.buffer, len(entry.ids), saved=saved)
                    if base is not None:
                        entry = self._save(db, project, kind, base, entry)
        if self.ann_min_rows is not None and len(entry.ids) >= self.ann_min_rows:
            entry.ann = AnnIndex(entry.matrix, saved=self._saved_path(project, kind))
        return entry

    def _scan(self, project: str, kind: Kind, saved: Saved, rows: int) -> Int8Scan:
        return Int8Scan(
            saved.buffer,
            rows,
            saved=self._saved_path(project, kind, "nbits"),
            codes=saved.codes,
            scale=saved.scale,
            key=(len(saved.ids), saved.kernel_key) if saved.kernel_key else None,
        )

    def _mapped(
        self, db: Connection, project: str, kind: Kind, epoch: str, base: Path
    ) -> Entry | None:
        """The rows mapped from the newest saved file, brought up to date by the log; None
        when there is none or it may not be used (``saved_vectors.py``)."""
        file = saved_vectors.find(base, _last_seq(db))
        saved = saved_vectors.read(file) if file is not None else None
        if saved is None or len(saved.ids) < INT8_MIN_ROWS:
            return None
        size = len(saved.ids)
        entry = Entry(
            "",
            saved.seq,
            saved.rowids,
            saved.ids,
            saved.buffer[:size],
            saved.buffer,
            saved.has_validity,
        )
        entry.scan = self._scan(project, kind, saved, size)
        fresh = _advance(db, project, kind, entry, epoch)
        if fresh is None or not _matches(db, project, kind, fresh):
            return None
        self.mapped += 1
        return fresh

    def _save(self, db: Connection, project: str, kind: Kind, base: Path, entry: Entry) -> Entry:
        """``entry`` saved to a file (unless another process saved the same rows) and
        mapped from it, its private copies dropped; ``entry`` itself when that fails."""
        size = len(entry.ids)
        file = saved_vectors.path(base, entry.seq)
        saved = saved_vectors.read(file) if file.exists() else None
        if saved is None or not _same(saved, entry):
            assert entry.scan is not None
            codes, scale = entry.scan.codes
            key = nbits.key(entry.buffer, size)
            mine = Saved(
                entry.seq,
                entry.rowids,
                entry.ids,
                entry.buffer,
                codes,
                scale,
                entry.has_validity,
                key,
            )
            written = saved_vectors.write(base, mine, size)
            saved = saved_vectors.read(written) if written is not None else None
        if saved is None:
            return entry
        self.saves += 1
        return replace(
            entry,
            rowids=saved.rowids,
            matrix=saved.buffer[:size],
            buffer=saved.buffer,
            scan=self._scan(project, kind, saved, size),
        )

    def _saved_path(self, project: str, kind: Kind, suffix: str = "usearch") -> Path | None:
        if self.index_dir is None:
            return None
        name = hashlib.blake2b(project.encode(), digest_size=8).hexdigest()
        return self.index_dir / f"{name}-{kind.value}.{suffix}"


def _where(kind: Kind) -> str:
    return (
        f"FROM {kind.table} WHERE project = ? AND deleted_at IS NULL "
        "AND status = 'embedded' AND vector IS NOT NULL"
    )


def _last_seq(db: Connection) -> int:
    """The last log position ever handed out (pruning never lowers it)."""
    found = db.one("SELECT seq FROM sqlite_sequence WHERE name = 'vector_changes'")
    return int(found[0]) if found else 0


def _load(db: Connection, project: str, kind: Kind, epoch: str) -> Entry:
    """The embedded rows' ids and vectors, read in batches straight into one matrix
    (peak memory about the matrix itself, not the rows' blobs two more times)."""
    where = _where(kind)
    ids: list[str] = []
    with db.transaction(immediate=False):  # one snapshot for the count, rows and log
        seq = _last_seq(db)
        found = db.one(f"SELECT count(*) {where}", (project,))
        count = int(found[0]) if found else 0
        rowids = np.zeros(count, dtype=np.int64)
        buffer = np.zeros((0, 0), dtype=np.float32)
        done = 0
        for batch in db.batches(f"SELECT rowid, id, vector {where} ORDER BY rowid", (project,)):
            if done == 0:
                buffer = np.zeros((_capacity(count), len(batch[0][2]) // 4), dtype=np.float32)
            stop = done + len(batch)
            flat = np.frombuffer(b"".join(r[2] for r in batch), dtype=np.float32)
            buffer[done:stop] = flat.reshape(len(batch), buffer.shape[1])
            rowids[done:stop] = [r[0] for r in batch]
            ids.extend(r[1] for r in batch)
            done = stop
        has_validity = _has_validity(db, project, kind)
    return Entry(epoch, seq, rowids, ids, buffer[:count], buffer, has_validity)


def _same(saved: Saved, entry: Entry) -> bool:
    """Whether a saved file holds exactly ``entry``'s rows (a file saved meanwhile by
    another process that read the same snapshot)."""
    size = len(entry.ids)
    return (
        saved.ids == entry.ids
        and np.array_equal(saved.rowids, entry.rowids)
        and np.array_equal(saved.buffer[:size], entry.matrix)
    )


def _matches(db: Connection, project: str, kind: Kind, entry: Entry) -> bool:
    """Whether a sample of ``entry``'s live rows (``saved_vectors.SPOT_ROWS``, evenly
    spread) has the ids and vectors SQLite has for their rowids."""
    size = len(entry.ids)
    if not size:
        return True
    spread = np.linspace(0, size - 1, min(size, saved_vectors.SPOT_ROWS))
    positions = np.unique(spread.astype(np.int64))
    if entry.alive is not None:
        positions = positions[entry.alive[positions]]
    wanted = {int(entry.rowids[p]): int(p) for p in positions}
    found = 0
    for part in chunked(list(wanted)):
        for row in db.all(
            f"SELECT rowid, id, vector {_where(kind)} AND rowid IN ({placeholders(len(part))})",
            (project, *part),
        ):
            position = wanted[int(row[0])]
            if row[1] != entry.ids[position] or row[2] != entry.matrix[position].tobytes():
                return False
            found += 1
    return found == len(wanted)


def _capacity(rows: int) -> int:
    return rows + max(_MIN_SPARE, rows // 8)


def _has_validity(
    db: Connection, project: str, kind: Kind, rowids: Sequence[int] | None = None
) -> bool:
    """Whether a live relationship of the project (of ``rowids`` only, when given: a
    lookup by key instead of a scan of the table) has a validity time."""
    if kind is not Kind.RELATIONSHIP or (rowids is not None and not rowids):
        return False
    sql = (
        "SELECT 1 FROM relationships WHERE project = ? AND deleted_at IS NULL AND "
        "(valid_from IS NOT NULL OR valid_to IS NOT NULL)"
    )
    if rowids is None:
        return db.one(f"{sql} LIMIT 1", (project,)) is not None
    return any(
        db.one(f"{sql} AND rowid IN ({placeholders(len(part))}) LIMIT 1", (project, *part))
        for part in chunked(list(rowids))
    )


def _advance(db: Connection, project: str, kind: Kind, entry: Entry, epoch: str) -> Entry | None:
    """``entry`` with the logged changes since it applied by key; None when a reload is
    due instead (see the module docstring)."""
    if entry.ann is not None and not entry.ann.ready:
        return None  # the graph is still being built from the old rows
    limit = max(1, int(_MAX_CHANGED * max(entry.live, 1)))
    with db.transaction(immediate=False):  # one snapshot for the log and the rows
        seq = _last_seq(db)
        found = db.one("SELECT min(seq) FROM vector_changes")
        first = int(found[0]) if found and found[0] is not None else seq + 1
        if first > entry.seq + 1:
            return None  # pruned past this entry: what changed is unknown
        changed = [
            int(r[0])
            for r in db.all(
                "SELECT DISTINCT row_id FROM vector_changes WHERE seq > ? AND kind = ? LIMIT ?",
                (entry.seq, kind.value, limit + 1),
            )
        ]
        if len(changed) > limit:
            return None
        rows: list[Any] = []
        for part in chunked(changed):
            rows += db.all(
                f"SELECT rowid, id, vector {_where(kind)} AND rowid IN "
                f"({placeholders(len(part))}) ORDER BY rowid",
                (project, *part),
            )
        # a changed row may bring validity times; one losing them leaves the flag set
        # until the next load (the validity filter then runs on rows that pass it all)
        has_validity = entry.has_validity or _has_validity(db, project, kind, changed)
    if not changed:
        return replace(entry, epoch=epoch, seq=seq)
    return _apply(entry, epoch, seq, np.asarray(changed, dtype=np.int64), rows, has_validity)


def _apply(
    entry: Entry,
    epoch: str,
    seq: int,
    changed: npt.NDArray[np.int64],
    rows: list[Any],
    has_validity: bool,
) -> Entry | None:
    """A new entry: the changed rows' old positions dead, their live vectors appended."""
    dead = np.flatnonzero(np.isin(entry.rowids, changed))
    size, added = len(entry.ids), len(rows)
    alive = np.ones(size + added, dtype=np.bool_)
    if entry.alive is not None:
        alive[:size] = entry.alive
    alive[dead] = False
    if (size + added - int(alive.sum())) > _MAX_DEAD * (size + added):
        return None
    buffer = entry.buffer
    if added and (not size or len(rows[0][2]) // 4 != buffer.shape[1]):
        return None  # nothing loaded yet, or other dimensions (a new model): load
    if size + added > buffer.shape[0]:
        buffer = np.zeros((_capacity(size + added), buffer.shape[1]), dtype=np.float32)
        buffer[:size] = entry.buffer[:size]
    if added:
        flat = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32)
        buffer[size : size + added] = flat.reshape(added, buffer.shape[1])
    rowids = np.concatenate([entry.rowids, np.asarray([r[0] for r in rows], dtype=np.int64)])
    rowids[dead] = -1
    new = np.arange(size, size + added, dtype=np.int64)
    if entry.scan is not None:
        entry.scan.kill(dead)
        entry.scan.extend(buffer, size, size + added)
    if entry.ann is not None:
        entry.ann.remove(dead)
        entry.ann.add(new, buffer[: size + added])
    return Entry(
        epoch=epoch,
        seq=seq,
        rowids=rowids,
        ids=entry.ids + [r[1] for r in rows],
        matrix=buffer[: size + added],
        buffer=buffer,
        has_validity=has_validity,
        alive=None if alive.all() else alive,
        ann=entry.ann,
        scan=entry.scan,
    )
