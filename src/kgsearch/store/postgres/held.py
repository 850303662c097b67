"""Vector legs answered from vectors held in the process, when they are provably current.

A PostgreSQL vector leg without filters is an exact scan of the kind's live embedded
rows: on the sample graph 8.4 ms of the server's CPU for 9,736 objects, most of it
reading index pages (docs/postgres.md). The same rows held in the process and scanned
as the SQLite store scans them (the int8 scan of ``store/ann.py``) cost about half a
millisecond. A process therefore keeps, per (project, kind), the rows' ``seq``, id and
``halfvec`` values (as float16: the stored values, nothing rounded again), read in one
``REPEATABLE READ`` snapshot whose text it remembers.

**Freshness.** Migration m014 logs every transaction that writes a kind's vectors or
liveness (``vector_writes``: kind and transaction id, written by triggers inside the
writing transaction). Before answering, a leg asks in one statement whether the log
holds a transaction of the kind that is visible now but was not in the held snapshot
(``pg_visible_in_snapshot``; only ids from the snapshot's ``xmin`` on are looked at, an
index range). If so, or if nothing is held yet, PostgreSQL answers as before and a
background thread brings the copy up to date: the log names the rows (by ``seq``) each
transaction changed, so only those are read again, in a new snapshot (their old
positions marked dead, their live versions appended, as the SQLite store's copies are
kept); a copy is read whole when nothing is held, when many rows changed, or when the
log was pruned past it. The statement runs on the caller's
transaction's connection inside a write transaction, so this process's own writes,
committed or not, are seen at once; another process's once committed. The log is
pruned when it outgrows :data:`_LOG_KEEP` rows; the prune horizon is written to
``meta`` and a copy read before it counts as stale.

**Answers.** Scores are what PostgreSQL computes: cosine over the float16 values with
the query rounded to float16, in float32 sums and a double division (pgvector's
``halfvec_cosine_distance``), ties by ``seq``. The int8 scan picks the candidates by
inner product (the rows are not quite unit length once rounded), twice the limit at
least, which are then ranked by that cosine. Sums in another order can still swap two
rows whose scores agree to about 1e-7.

What the held copy cannot apply goes to PostgreSQL: ids, type, label, property and
time filters, relationships with validity times (any live one of the project), a
store on Citus, and ``held_vectors=off`` in the store URL.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg.rows import tuple_row

from kgsearch.errors import StoreError
from kgsearch.model import Filters, Kind
from kgsearch.store.ann import Int8Scan
from kgsearch.store.postgres.connection import Connection

__all__ = ["HeldVectors", "held_filters"]

_log = logging.getLogger(__name__)

# The log is pruned to nothing once it holds this many rows (copies read before then
# are read again).
_LOG_KEEP = 100_000
# Bring a copy up to date by the rows changed up to this share of its rows; read it
# whole beyond, or once this share of its positions is dead.
_MAX_CHANGED = 0.2
_MAX_DEAD = 0.2
# The log's size is looked at after every this-many reads and updates.
_PRUNE_EVERY = 100
# Spare rows of a copy's buffers: an eighth more, at least this many.
_MIN_SPARE = 1024
# Rows read from the server at a time.
_BATCH_ROWS = 10_000
# A kind whose read failed is not read again for this long.
_RETRY_SECONDS = 30.0
# Candidates of the int8 scan ranked by cosine: this many times the limit, at least
# this many more.
_CANDIDATE_FACTOR = 2
_CANDIDATE_EXTRA = 32


@dataclass(frozen=True)
class _Copy:
    """One (project, kind)'s live embedded rows as of ``snapshot``.

    Positions are rows in the order read, rows changed since appended; a changed row's
    old position is dead (``alive`` False, its int8 code zeroed). ``matrix`` and
    ``norms`` are views of buffers with room to grow, which the int8 scan shares (rows
    appended for a newer copy lie beyond this one's ``size`` and are never returned)."""

    snapshot: str
    dims: int
    seqs: npt.NDArray[np.int64]
    ids: list[str]
    buffer: npt.NDArray[np.float16]
    norms: npt.NDArray[np.float32]  # squared, summed in float32 as pgvector does
    scan: Int8Scan | None
    has_validity: bool
    alive: npt.NDArray[np.bool_] | None = None

    @property
    def size(self) -> int:
        """Positions in use (live and dead)."""
        return len(self.ids)

    @property
    def live(self) -> int:
        """Live positions."""
        return self.size if self.alive is None else int(self.alive.sum())

    @property
    def nbytes(self) -> int:
        """Memory of the arrays: float16 rows, their int8 codes, norms and seqs (the
        buffers' spare rows included; ids not)."""
        codes = self.buffer.shape[0] * self.buffer.shape[1] if self.scan is not None else 0
        return int(self.buffer.nbytes + codes + self.norms.nbytes + self.seqs.nbytes)


def held_filters(kind: Kind, filters: Filters | None) -> bool:
    """Whether a leg's filters leave every live embedded row of the kind (validity aside,
    which the copy checks): only such legs can be answered from a held copy."""
    if filters is None:
        return True
    if filters.properties and kind is not Kind.CHUNK:
        return False
    if kind is Kind.OBJECT:
        return not (filters.object_types or filters.labels)
    if kind is Kind.RELATIONSHIP:
        return not (filters.relationship_types or filters.as_of)
    return True


# Whether a logged transaction of the kind is visible now but was not in the snapshot,
# or the log was pruned past it.
_STALE_SQL = (
    "SELECT EXISTS (SELECT 1 FROM vector_writes WHERE kind = %(kind)s AND xid >= '{xmin}'::xid8 "
    "AND NOT pg_visible_in_snapshot(xid, %(snapshot)s::pg_snapshot)) OR coalesce("
    "(SELECT value::xid8 FROM meta WHERE key = 'vector_writes_horizon') > '{xmin}'::xid8, "
    "false) AS stale"
)
# In a new snapshot: its text, whether the log was pruned past the old one, and the rows
# (at most ``limit``) the transactions not visible in the old one changed (seq 0:
# truncated).
_CHANGES_SQL = (
    "SELECT pg_current_snapshot()::text AS snapshot, coalesce((SELECT value::xid8 FROM meta "
    "WHERE key = 'vector_writes_horizon') > '{xmin}'::xid8, false) AS pruned, "
    "ARRAY(SELECT DISTINCT seq FROM vector_writes WHERE kind = %(kind)s AND "
    "xid >= '{xmin}'::xid8 AND NOT pg_visible_in_snapshot(xid, %(snapshot)s::pg_snapshot) "
    "LIMIT %(limit)s) AS changed"
)


def _since(sql: str, snapshot: str, kind: Kind, **more: Any) -> tuple[str, dict[str, Any]]:
    """A question about the log since ``snapshot``, with its parameters. The snapshot's
    ``xmin`` (its text's first field, a number) is written into the statement, so the
    planner sees where the log's index on (kind, xid) is walked from: given as
    ``pg_snapshot_xmin`` of a parameter, or as a parameter in a generic plan, the log
    was scanned whole (20,000 rows after copying the sample graph in, twice a search)."""
    xmin = int(snapshot.split(":", 1)[0])
    return sql.replace("{xmin}", str(xmin)), {"snapshot": snapshot, "kind": kind.value, **more}


class HeldVectors:
    """Per (project, kind) copies of the embedded vectors, each with its snapshot.

    Args:
        db: The store's connection pool.
    """

    def __init__(self, db: Connection) -> None:
        self._db = db
        self._copies: dict[tuple[str, Kind], _Copy] = {}
        self._reading: set[tuple[str, Kind]] = set()
        self._failed: dict[tuple[str, Kind], float] = {}
        self._lock = threading.Lock()
        self.reads = 0  # full reads so far (tests and benchmarks read it)
        self.updates = 0  # copies brought up to date by the rows changed
        # the reader's own connection (see _reader), one read at a time on it
        self._conn: Any = None
        self._closed = False
        self._reader_lock = threading.Lock()

    def clear(self) -> None:
        """Forget every copy (the next legs go to PostgreSQL and read them again)."""
        with self._lock:
            self._copies.clear()

    def memory(self) -> int:
        """Bytes of the held arrays (ids aside)."""
        with self._lock:
            return sum(c.nbytes for c in self._copies.values())

    def search(
        self, project: str, kind: Kind, query: npt.NDArray[np.float32], limit: int, dims: int
    ) -> list[tuple[str, float]] | None:
        """The leg's top ``limit`` (id, score) from the held copy; None when there is
        none or it is stale (a read in the background is then started) or cannot
        answer the leg (relationships with validity times)."""
        key = (project, kind)
        with self._lock:
            copy = self._copies.get(key)
        if copy is None or copy.dims != dims or self._stale(kind, copy.snapshot):
            self._read_later(key, dims)
            return None
        if copy.has_validity:
            return None
        return _top(copy, query, limit)

    def wait(self, project: str, kind: Kind, timeout: float = 30.0) -> bool:
        """Block until no read of the kind is under way (tests, benchmarks); True when
        a copy is held then."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if (project, kind) not in self._reading:
                    return (project, kind) in self._copies
            time.sleep(0.01)
        return False

    def _stale(self, kind: Kind, snapshot: str) -> bool:
        row = self._db.one(*_since(_STALE_SQL, snapshot, kind))
        return row is None or bool(row["stale"])

    def _read_later(self, key: tuple[str, Kind], dims: int) -> None:
        """Start a background read of the kind, unless one is under way or failed lately."""
        with self._lock:
            if (
                self._closed
                or key in self._reading
                or time.monotonic() < self._failed.get(key, 0.0)
            ):
                return
            self._reading.add(key)
        threading.Thread(
            target=self._read, args=(key, dims), daemon=True, name="kgsearch-held-vectors"
        ).start()

    def close(self) -> None:
        """Close the reader's connection, or let a read under way close it when it ends
        (closed under its server-side cursor, the cursor's cleanup would fail); no read
        starts afterwards."""
        with self._lock:
            self._closed = True
        if self._reader_lock.acquire(blocking=False):
            try:
                with self._lock:
                    conn, self._conn = self._conn, None
                if conn is not None:
                    conn.close()
            finally:
                self._reader_lock.release()

    @contextmanager
    def _reader(self) -> Iterator[Any]:
        """The reader's own connection (opened on first use, again after an error): a
        copy brought up to date waits for no pooled connection, which searches hold."""
        with self._reader_lock:
            with self._lock:
                conn = self._conn
            if conn is None or conn.closed:
                conn = self._db.dedicated()
                with self._lock:
                    closed = self._closed
                    if not closed:
                        self._conn = conn
                if closed:  # the store closed meanwhile
                    conn.close()
                    raise StoreError("the store is closed")
            try:
                yield conn
            except Exception:
                with self._lock:
                    self._conn = None
                conn.close()
                raise
            with self._lock:
                closed = self._closed
                if closed:
                    self._conn = None
            if closed:  # the store closed during the read
                conn.close()

    def _read(self, key: tuple[str, Kind], dims: int) -> None:
        try:
            with self._lock:
                old = self._copies.get(key)
            with self._reader() as conn:
                copy = _update(conn, *key, old) if old is not None and old.dims == dims else None
                updated = copy is not None
                if copy is None:
                    copy = _read_copy(conn, *key, dims)
                with self._lock:
                    self._copies[key] = copy
                    self.updates += updated
                    self.reads += not updated
                    due = (self.reads + self.updates) % _PRUNE_EVERY == 1
                if due:
                    try:
                        _prune(conn)
                    except psycopg.Error as exc:  # a read replica, a role without DELETE
                        _log.debug("could not prune the vector write log: %s", exc)
        except Exception as exc:  # a failed read leaves PostgreSQL answering
            if self._closed:
                return
            _log.warning("could not read the %s vectors of %r: %s", key[1].value, key[0], exc)
            with self._lock:
                self._failed[key] = time.monotonic() + _RETRY_SECONDS
        finally:
            with self._lock:
                self._reading.discard(key)


@contextmanager
def _snapshot(conn: Any) -> Iterator[str]:
    """A read-only ``REPEATABLE READ`` transaction on ``conn``, with the text of its
    snapshot (every statement in it sees that snapshot)."""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        found = conn.execute("SELECT pg_current_snapshot()::text AS s").fetchone()
        yield str(found["s"]) if found else ""


def _has_validity(conn: Any, project: str, kind: Kind) -> bool:
    """Whether a live relationship of the project has validity times."""
    if kind is not Kind.RELATIONSHIP:
        return False
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM relationships WHERE project = %s AND "
        "deleted_at IS NULL AND (valid_from IS NOT NULL OR valid_to IS NOT NULL)) AS v",
        (project,),
    ).fetchone()
    return bool(row and row["v"])


def _decode(blobs: list[bytes], dims: int) -> npt.NDArray[np.float16]:
    """Rows of ``halfvec_send`` bytes (a 4-byte header, then big-endian float16 values)
    as one float16 matrix."""
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), 4 + 2 * dims)
    return np.ascontiguousarray(raw[:, 4:]).view(">f2").astype(np.float16)


def _norms(matrix: npt.NDArray[np.float16]) -> npt.NDArray[np.float32]:
    wide = matrix.astype(np.float32)
    return np.asarray(np.einsum("ij,ij->i", wide, wide), dtype=np.float32)


def _capacity(rows: int) -> int:
    return rows + max(_MIN_SPARE, rows // 8)


def _read_copy(conn: Any, project: str, kind: Kind, dims: int) -> _Copy:
    """The kind's live embedded rows of ``dims`` dimensions in one snapshot, in ``seq``
    order, decoded a batch at a time into the copy's buffer (the peak memory is about
    the copy's own, not the rows' bytes held whole beside it)."""
    where = (
        f"FROM {kind.table} WHERE project = %s AND deleted_at IS NULL AND status = 'embedded' "
        f"AND vector IS NOT NULL AND dims = {int(dims)}"
    )
    seqs: list[int] = []
    ids: list[str] = []
    with _snapshot(conn) as snapshot:
        validity = _has_validity(conn, project, kind)
        found = conn.execute(f"SELECT count(*) AS n {where}", (project,)).fetchone()
        buffer = np.zeros((_capacity(int(found["n"]) if found else 0), dims), dtype=np.float16)
        with conn.cursor("kgsearch_held", row_factory=tuple_row) as cur:
            cur.itersize = _BATCH_ROWS
            cur.execute(f"SELECT seq, id, halfvec_send(vector) {where} ORDER BY seq", (project,))
            while batch := cur.fetchmany(_BATCH_ROWS):
                start = len(ids)  # the count was read in this snapshot: the rows fit
                buffer[start : start + len(batch)] = _decode([r[2] for r in batch], dims)
                seqs.extend(r[0] for r in batch)
                ids.extend(r[1] for r in batch)
    size = len(ids)
    norms = np.zeros(buffer.shape[0], dtype=np.float32)
    for start in range(0, size, _BATCH_ROWS):
        stop = min(size, start + _BATCH_ROWS)
        norms[start:stop] = _norms(buffer[start:stop])
    # numpy multiplies the float16 rows by a float32 query in float32 (see _top)
    scan = Int8Scan(buffer, size) if size else None  # type: ignore[arg-type]
    return _Copy(
        snapshot=snapshot,
        dims=dims,
        seqs=np.asarray(seqs, dtype=np.int64),
        ids=ids,
        buffer=buffer,
        norms=norms,
        scan=scan,
        has_validity=validity,
    )


def _update(conn: Any, project: str, kind: Kind, old: _Copy) -> _Copy | None:
    """``old`` with the rows changed since its snapshot read again (their old positions
    dead, their live versions appended), in a new snapshot; None when a full read is due
    instead: the log pruned past it, the table truncated, more than ``_MAX_CHANGED`` of
    its rows changed or ``_MAX_DEAD`` of its positions dead, or nothing held yet."""
    if old.scan is None:
        return None
    limit = max(1, int(_MAX_CHANGED * max(old.live, 1)))
    # two statements in one snapshot, the transaction begun and ended by hand (a
    # transaction block of psycopg's costs two more round trips)
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    try:
        found = conn.execute(*_since(_CHANGES_SQL, old.snapshot, kind, limit=limit + 1)).fetchone()
        if found is None or found["pruned"]:
            return None
        snapshot, changed = str(found["snapshot"]), [int(x) for x in found["changed"]]
        if len(changed) > limit or 0 in changed:
            return None
        timed = "valid_from IS NOT NULL OR valid_to IS NOT NULL"
        rows = conn.execute(
            f"SELECT seq, id, halfvec_send(vector) AS v, "
            f"{timed if kind is Kind.RELATIONSHIP else 'false'} AS timed FROM {kind.table} "
            "WHERE project = %s AND seq = ANY(%s) AND deleted_at IS NULL AND status = "
            f"'embedded' AND vector IS NOT NULL AND dims = {int(old.dims)} ORDER BY seq",
            (project, changed),
        ).fetchall()
    finally:
        conn.execute("ROLLBACK")
    seqs, ids = [int(r["seq"]) for r in rows], [str(r["id"]) for r in rows]
    matrix = _decode([r["v"] for r in rows], old.dims)
    # a changed row may bring validity times; one losing them leaves the flag set until
    # the next full read (PostgreSQL answers meanwhile)
    validity = old.has_validity or any(r["timed"] for r in rows)
    dead = np.flatnonzero(np.isin(old.seqs, np.asarray(changed, dtype=np.int64)))
    size, added = old.size, len(ids)
    alive = np.ones(size + added, dtype=np.bool_)
    if old.alive is not None:
        alive[:size] = old.alive
    alive[dead] = False
    if size + added - int(alive.sum()) > _MAX_DEAD * (size + added):
        return None
    buffer, norms = old.buffer, old.norms
    if size + added > buffer.shape[0]:
        buffer = np.zeros((_capacity(size + added), old.dims), dtype=np.float16)
        buffer[:size] = old.buffer[:size]
        norms = np.zeros(buffer.shape[0], dtype=np.float32)
        norms[:size] = old.norms[:size]
    buffer[size : size + added] = matrix
    norms[size : size + added] = _norms(matrix)
    old.scan.kill(dead)
    old.scan.extend(buffer, size, size + added)  # type: ignore[arg-type]
    return _Copy(
        snapshot=snapshot,
        dims=old.dims,
        seqs=np.concatenate([old.seqs, np.asarray(seqs, dtype=np.int64)]),
        ids=old.ids + ids,
        buffer=buffer,
        norms=norms,
        scan=old.scan,
        has_validity=validity,
        alive=None if alive.all() else alive,
    )


def _top(copy: _Copy, query: npt.NDArray[np.float32], limit: int) -> list[tuple[str, float]]:
    """The top ``limit`` rows by PostgreSQL's ``halfvec`` cosine, ties by ``seq``. The
    int8 scan over the float16 rows (numpy multiplies them by a float32 query in
    float32) keeps the candidates, ranked here exactly."""
    if copy.scan is None or copy.live == 0:
        return []
    q = query.astype(np.float16).astype(np.float32)
    wanted = min(copy.live, max(_CANDIDATE_FACTOR * limit, limit + _CANDIDATE_EXTRA))
    positions, _ = copy.scan.search(q, wanted, rows=copy.size, alive=copy.alive)
    rows = copy.buffer[positions].astype(np.float32)
    dots = (rows @ q).astype(np.float64)
    qnorm = float(np.dot(q, q))
    with np.errstate(divide="ignore", invalid="ignore"):
        similarity = dots / np.sqrt(copy.norms[positions].astype(np.float64) * qnorm)
    distance = 1.0 - np.clip(similarity, -1.0, 1.0)
    order = np.lexsort((copy.seqs[positions], distance))[:limit]
    return [
        (copy.ids[int(p)], float(1.0 - d))
        for p, d in zip(positions[order].tolist(), distance[order].tolist(), strict=True)
    ]


def _prune(conn: Any) -> None:
    """Empty the log once it holds :data:`_LOG_KEEP` rows, recording the horizon: every
    transaction logged before it is visible to any snapshot taken from now on."""
    row = conn.execute(
        "SELECT count(*) AS n FROM (SELECT 1 FROM vector_writes LIMIT %s) AS r", (_LOG_KEEP,)
    ).fetchone()
    if row is None or int(row["n"]) < _LOG_KEEP:
        return
    with conn.transaction():
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('vector_writes_horizon', "
            "pg_snapshot_xmin(pg_current_snapshot())::text) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        )
        conn.execute(
            "DELETE FROM vector_writes WHERE xid < "
            "(SELECT value::xid8 FROM meta WHERE key = 'vector_writes_horizon')"
        )
