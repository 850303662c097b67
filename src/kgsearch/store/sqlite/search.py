"""Search primitives for SQLite: in-process vector index over stored blobs, FTS5 BM25.

Vectors live in the row tables as float32 blobs. Each (project, kind) gets an
in-memory matrix, kept in step with every process's writes by key (``vectors.py``).
Exact search is one matrix product; large collections also get an int8 scan and an
HNSW index (see ``ann.py``) whose recall is measured against the exact path. :class:`SQLiteSearch`
is the ``SearchIndex`` slice of :class:`~kgsearch.store.sqlite.store.SQLiteStore`; its
queries run on the calling thread's reader connection (see ``connection.py``).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from kgsearch.model import Filters, Kind
from kgsearch.store.search_index import MAX_LIMIT, SearchCore, TextLeg, VectorLeg, check_dims
from kgsearch.store.sqlite.connection import Connection
from kgsearch.store.sqlite.freshness import meta_value
from kgsearch.store.sqlite.held_lexical import checked
from kgsearch.store.sqlite.lexical import LexicalStats, Plan
from kgsearch.store.sqlite.sql import chunked, filter_sql, fts_query, nocase, placeholders
from kgsearch.store.sqlite.vectors import Entry, VectorCache
from kgsearch.store.tracing import Trace, active, note, traced

__all__ = ["SQLiteSearch", "VectorCache"]

# Candidates ranked before frequent words are added to their scores (at least).
_RESCORE_POOL = 90
_RESCORE_FACTOR = 3
_SCAN_OUT_SHARE = 0.05
"""Largest share of an int8-scanned kind's rows a mask may leave out for the scan to
answer (with that many more candidates); beyond it the kept rows are scored exactly."""
# no filters (frozen: one instance serves every leg)
_NO_FILTERS = Filters()


def _with_tail(
    entry: Entry,
    query: npt.NDArray[np.float32],
    keys: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float32],
    limit: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The graph's hits merged with an exact scan of the rows appended since it was built
    (few: a reload comes first), so a written row is found at once whatever the graph's
    recall for it."""
    assert entry.ann is not None
    tail = np.arange(entry.ann.built, len(entry.ids), dtype=np.int64)
    if entry.alive is not None:
        tail = tail[entry.alive[tail]]
    tail_scores = entry.matrix[tail] @ query
    merged = dict(zip(tail.tolist(), tail_scores.tolist(), strict=True))
    merged.update(zip(keys.tolist(), scores.tolist(), strict=True))
    best = sorted(merged.items(), key=lambda x: (-x[1], x[0]))[:limit]
    return (
        np.asarray([k for k, _ in best], dtype=np.int64),
        np.asarray([v for _, v in best], dtype=np.float32),
    )


def _pairs(
    ids: list[str], keys: npt.NDArray[np.int64], scores: npt.NDArray[np.float32]
) -> list[tuple[str, float]]:
    """(row id, score) of each position, best first as given (one conversion of each
    array to Python numbers instead of one per item)."""
    return list(zip([ids[k] for k in keys.tolist()], scores.tolist(), strict=True))


def _allowed_rows(
    db: Connection,
    project: str,
    kind: Kind,
    entry: Entry,
    filters: Filters | None,
    ids: Sequence[str] | None,
) -> npt.NDArray[np.bool_] | None:
    """Boolean mask over the entry's rows, or None when nothing restricts them."""
    effective = filters or _NO_FILTERS
    if kind is Kind.RELATIONSHIP and not entry.has_validity and effective.as_of is not None:
        # copied only when there is an instant to drop (a pydantic copy a leg otherwise)
        effective = effective.model_copy(update={"as_of": None})
    if (
        ids is None
        and entry.has_validity
        and not filter_sql(kind, effective, current_only=False)[0]
    ):
        return _valid_now(db, project, kind, entry)
    where, params = filter_sql(kind, effective, current_only=entry.has_validity)
    if not where and ids is None:
        return None
    allowed: list[int] = []
    if ids is None:
        allowed = [
            r[0]
            for r in db.all(
                f"SELECT t.rowid FROM {kind.table} t WHERE t.project = ? AND t.deleted_at IS NULL"
                f"{where}",
                (project, *params),
            )
        ]
    else:
        for part in chunked(list(ids)):
            allowed.extend(
                r[0]
                for r in db.all(
                    f"SELECT t.rowid FROM {kind.table} t WHERE t.project = ? AND "
                    f"t.deleted_at IS NULL AND t.id IN ({placeholders(len(part))}){where}",
                    (project, *part, *params),
                )
            )
    # dead positions hold rowid -1, which no row has
    return np.isin(entry.rowids, np.asarray(allowed, dtype=np.int64))


_Bounds = tuple[list[int], list[str | None], list[str | None]]
# per vector-cache entry (a snapshot of one kind at one epoch), while it lives
_bounds: dict[int, tuple[weakref.ref[Entry], _Bounds]] = {}
_bounds_lock = threading.Lock()


def _valid_now(
    db: Connection, project: str, kind: Kind, entry: Entry
) -> npt.NDArray[np.bool_] | None:
    """The mask of the rows valid now, when nothing else restricts them; None when none
    is out. The rows' bounds are read once per epoch of the kind (any write to it moves
    the epoch) and compared with now here: reading every valid relationship's rowid
    scanned the wide table on every search (24 ms a leg on 2Wiki's 18k)."""
    with _bounds_lock:
        held = _bounds.get(id(entry))
    bounds = held[1] if held is not None and held[0]() is entry else None
    if bounds is None:
        rows = db.all(
            f"SELECT rowid, valid_from, valid_to FROM {kind.table} WHERE project = ? "
            "AND deleted_at IS NULL AND (valid_from IS NOT NULL OR valid_to IS NOT NULL)",
            (project,),
        )
        bounds = ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
        with _bounds_lock:
            for gone in [k for k, (ref, _) in _bounds.items() if ref() is None]:
                del _bounds[gone]
            _bounds[id(entry)] = (weakref.ref(entry), bounds)
    now = datetime.now(UTC).isoformat()  # as stored (store.values.iso)
    rowids, starts, ends = bounds
    out = [
        rowid
        for rowid, start, end in zip(rowids, starts, ends, strict=True)
        if (start is not None and start > now) or (end is not None and end <= now)
    ]
    if not out:
        return None
    keep = ~np.isin(entry.rowids, np.asarray(out, dtype=np.int64))
    return keep & (entry.rowids >= 0) if entry.alive is None else keep & entry.alive


def _ranked(
    db: Connection, project: str, kind: Kind, match: str, limit: int, filters: Filters | None
) -> list[tuple[int, str, float]]:
    """(rowid, id, -bm25) of the best ``limit`` live rows matching ``match``."""
    where, params = filter_sql(kind, filters)
    fts = f"{kind.table}_fts"
    if not filter_sql(kind, filters, current_only=False)[0]:
        # No filter beyond "valid now": rank inside the FTS index first and join only the
        # best `limit` rows (joining every match reads thousands of wide rows that hold
        # the vectors). When all of those pass the checks they are the answer; otherwise
        # (few matches, other projects' or expired rows among them) the full query decides.
        rows = db.all(
            f"SELECT f.r, t.id, -f.score AS score FROM (SELECT rowid AS r, bm25({fts}) AS "
            f"score FROM {fts} WHERE {fts} MATCH ? ORDER BY score, rowid LIMIT ?) f "
            f"JOIN {kind.table} t ON t.rowid = f.r WHERE t.project = ? "
            f"AND t.deleted_at IS NULL{where} ORDER BY f.score, f.r",
            (match, limit, project, *params),
        )
        if len(rows) == limit:
            return [(int(r[0]), str(r[1]), float(r[2])) for r in rows]
    rows = db.all(
        f"SELECT t.rowid, t.id, -bm25({fts}) AS score FROM {fts} JOIN {kind.table} t "
        f"ON t.rowid = {fts}.rowid WHERE {fts} MATCH ? AND t.project = ? "
        f"AND t.deleted_at IS NULL{where} ORDER BY bm25({fts}), t.rowid LIMIT ?",
        (match, project, *params, limit),
    )
    return [(int(r[0]), str(r[1]), float(r[2])) for r in rows]


class SQLiteSearch(SearchCore):
    """The ``SearchIndex`` capability over SQLite: vector legs scan a cached matrix (or
    its ANN index), text legs rank with FTS5."""

    # vector legs are in-process scans: see SearchIndex.parallel_vector_legs
    parallel_vector_legs = False

    db: Connection
    vectors_cache: VectorCache
    lexical: LexicalStats
    # object types per project, with the object epoch they were read at
    _types: dict[str, tuple[str, list[str]]]

    def _nearest(self, leg: VectorLeg) -> list[tuple[str, float]]:
        # exact cosine top-k (vectors are unit length), or the ANN index's when nothing
        # restricts the rows; the scan runs in memory: a tracer hears the SQL that read
        # the epoch (and loaded or filtered the rows), and a note on it
        project, kind, query, limit, filters, ids = leg
        db = self.db.reader()
        entry = self.vectors_cache.entry(db, project, kind)
        size = len(entry.ids)
        if not size:
            return []
        check_dims(query, entry.matrix.shape[1])
        mask = _allowed_rows(db, project, kind, entry, filters, ids)
        rows = f"{size} {kind.value} vectors of {entry.matrix.shape[1]} dims in memory"
        if mask is None and entry.ann is not None and entry.ann.ready:
            if active():
                note(f"top {limit} by the HNSW index over {rows}, re-scored in float32")
            keys, scores = entry.ann.search(query, limit, rows=size)
            if size > entry.ann.built:  # rows added since the build are also scanned
                keys, scores = _with_tail(entry, query, keys, scores, limit)
            return _pairs(entry.ids, keys, scores)
        if mask is None and entry.scan is not None:
            if active():
                note(f"top {limit} by an int8 scan of {rows}, re-scored in float32")
            keys, scores = entry.scan.search(query, limit, rows=size, alive=entry.alive)
            return _pairs(entry.ids, keys, scores)
        if mask is not None and entry.scan is not None:
            # a few rows out (relationships no longer valid, dead rows): the int8 scan
            # with room for them among its candidates, instead of a float32 product
            # over a copy of the kept rows (17-30 ms on 2Wiki's 18k relationships)
            out = size - int(np.count_nonzero(mask))
            if out <= size * _SCAN_OUT_SHARE:
                if active():
                    note(f"top {limit} by an int8 scan of {rows} ({out} out), re-scored in float32")
                keys, scores = entry.scan.search(query, limit + out, rows=size, alive=mask)
                return _pairs(entry.ids, keys[:limit], scores[:limit])
        mask = entry.alive if mask is None else mask
        if mask is None:
            scores = entry.matrix @ query
            positions = np.arange(len(entry.ids))
        else:
            positions = np.flatnonzero(mask)
            if positions.size == 0:
                if active():
                    note(f"no row of {rows} passes the filters")
                return []
            scores = entry.matrix[positions] @ query
        if active():
            note(f"top {limit} by exact cosine over {positions.size} of {rows}")
        k = min(limit, scores.shape[0])
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((positions[top], -scores[top]))]
        return [(entry.ids[int(positions[i])], float(scores[i])) for i in top]

    def _matching(self, leg: TextLeg) -> list[tuple[str, float]]:
        # BM25 via FTS5, scored ``-bm25``: a query of several words matches only rows
        # holding its selective words and scores the best of them with every word (see
        # ``lexical.py``)
        project, kind, terms, limit, filters, prefix = leg
        db = self.db.reader()
        held = None if prefix else self.lexical.held_scores(db, kind, terms, self.db.reader)
        if held is not None:
            # the same scores from the index's postings held in memory (held_lexical.py)
            if active():
                note(f"BM25 from the held postings of {held.postings.n_rows} rows")
            if held.postings.n_rows == 0:
                return []
            return [
                (id, score) for _, id, score in checked(db, project, kind, held, limit, filters)
            ]
        if db.one(f"SELECT 1 FROM {kind.table}_fts_docsize LIMIT 1") is None:
            return []  # nothing to match, or nothing indexed (a project without chunks)
        if len(terms) == 1 or prefix:
            plan = Plan(fts_query(terms, prefix=prefix) or "")
        else:
            plan = self.lexical.plan(db, kind, terms)
        # Scores recomputed afterwards can reorder candidates: rank a wider pool first.
        wanted = (
            min(MAX_LIMIT, max(_RESCORE_FACTOR * limit, _RESCORE_POOL)) if plan.rescore else limit
        )
        ranked = _ranked(db, project, kind, plan.match, wanted, filters)
        if len(ranked) < limit and plan.fallback is not None:
            ranked = _ranked(db, project, kind, plan.fallback, wanted, filters)
        if plan.rescore:
            if active():
                note(f"{len(ranked)} candidates re-scored by BM25 over every query word")
            ranked = self.lexical.rescore(db, kind, ranked, plan)
        return [(id, score) for _, id, score in ranked[:limit]]

    def _named(
        self, project: str, names: list[str], filters: Filters | None
    ) -> list[tuple[str, str, str, str]]:
        # NOCASE lowers ASCII letters only, as ``nocase`` does: each key's names by it
        asked: dict[str, list[str]] = {}
        for name in names:
            asked.setdefault(nocase(name), []).append(name)
        where, params = filter_sql(Kind.OBJECT, filters)
        out: list[tuple[str, str, str, str]] = []
        for part in chunked(list(asked)):
            rows = self.db.reader().all(
                "SELECT t.key, t.type, t.id FROM objects t "
                "WHERE t.project = ? AND t.key "
                f"COLLATE NOCASE IN ({placeholders(len(part))}) AND t.deleted_at IS NULL"
                f"{where}",
                (project, *part, *params),
            )
            for key, type_, id in rows:
                out.extend((name, type_, id, key) for name in asked.get(nocase(key), []))
        return out

    @traced
    def object_types(self, project: str, *, trace: Trace | None = None) -> list[str]:
        """Distinct types of the project's live objects (cached until objects change)."""
        value = meta_value(self.db, "epoch:object")
        epoch = "0" if value is None else value
        cached = self._types.get(project)
        if cached is not None and cached[0] == epoch:
            return cached[1]
        types = [
            r[0]
            for r in self.db.all(
                "SELECT type FROM objects WHERE project = ? AND deleted_at IS NULL GROUP BY type",
                (project,),
            )
        ]
        self._types[project] = (epoch, types)
        return types

    @traced
    def vectors(
        self, project: str, kind: Kind, ids: Sequence[str], *, trace: Trace | None = None
    ) -> dict[str, npt.NDArray[np.float32]]:
        """Stored vectors of the given embedded rows."""
        found: dict[str, npt.NDArray[np.float32]] = {}
        for part in chunked(list(dict.fromkeys(ids))):
            for row in self.db.all(
                f"SELECT id, vector FROM {kind.table} WHERE project = ? AND deleted_at IS NULL "
                "AND status = 'embedded' AND vector IS NOT NULL "
                f"AND id IN ({placeholders(len(part))})",
                (project, *part),
            ):
                found[row["id"]] = np.frombuffer(row["vector"], dtype=np.float32).copy()
        return found

    def build_indexes(self) -> list[str]:
        """Nothing to build: this store's vector indexes live in memory and are built
        when a search first needs them."""
        return []

    def wait_for_index(self, project: str, kind: Kind, timeout: float | None = None) -> bool:
        """Load the vector cache and wait for its ANN index and its scan's kernel, and
        read the kind's BM25 postings (benchmarks, warm-up)."""
        self.lexical.held.warm(self.db.reader(), kind)
        entry = self.vectors_cache.entry(self.db, project, kind)
        if entry.scan is not None and not entry.scan.wait(timeout):
            return False
        return entry.ann.wait(timeout) if entry.ann is not None else True
