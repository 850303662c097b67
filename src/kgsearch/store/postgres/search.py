"""Search primitives for PostgreSQL: pgvector cosine top-k and BM25 over ``tsvector``.

**Vectors.** Exact top-k is ``ORDER BY vector <=> q``. Once a kind has an HNSW (or
IVFFlat) index — built by :func:`build_vector_index` after bulk loads and embedding
runs, never on an empty table — unfiltered queries go through it; the index has no
notion of project or filters, so when it returns fewer rows than asked (filters,
other projects, stale rows) the query is answered again exactly. Results are never
silently short.

**BM25.** PostgreSQL's ``ts_rank`` is not BM25 (no inverse document frequency), so
the score is computed here with the same formula as SQLite FTS5 (k1 = 1.2, b = 0.75):
the query's lexemes come from ``to_tsvector('kgsearch', …)``, term frequencies from
the stored ``tsvector``'s positions, document lengths as its lexeme count, and
document frequencies from the GIN index (cached per project and kind). As with the
SQLite store, the match requires one of the query's selective lexemes when it has
any, so frequent words do not make the GIN scan touch most of the table; here only
the rarest of them are required, until they match about 2,000 rows, since every
matching row is scored in SQL. All of the query's words still count in the score.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from kgsearch.errors import DimensionMismatch, InvalidRequest
from kgsearch.model import Filters, Kind
from kgsearch.store.postgres.connection import Connection
from kgsearch.store.postgres.sql import filter_sql, tsquery
from kgsearch.store.values import query_terms

__all__ = [
    "LexicalStats",
    "build_vector_index",
    "stored_vectors",
    "text_search",
    "vector_index_exists",
    "vector_search",
]

_MAX_LIMIT = 1000
_K1 = 1.2
_B = 0.75
# A lexeme is "frequent" above this share of the rows (and this absolute floor).
_FREQUENT_SHARE = 0.01
_FREQUENT_FLOOR = 1000
# Rows the BM25 query may score: rare words are required until their rows add up to this.
_CANDIDATE_BUDGET = 2000
# Cached frequencies are refreshed after this long; BM25 needs them only roughly.
_STATS_TTL_SECONDS = 300.0
# Fewer embedded rows than this are searched exactly; no index is built.
INDEX_MIN_ROWS = 10_000


def vector_index_exists(db: Connection, kind: Kind) -> bool:
    """Whether the kind's table has its vector index."""
    row = db.one(
        "SELECT 1 AS x FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
        (db.schema, f"{kind.table}_vector"),
    )
    return row is not None


def build_vector_index(
    db: Connection, kind: Kind, dims: int, method: str, *, min_rows: int = INDEX_MIN_ROWS
) -> bool:
    """Create the kind's ANN index over embedded rows if it is missing and the table
    holds at least ``min_rows`` vectors; return whether one was built now."""
    if method == "none" or vector_index_exists(db, kind):
        return False
    row = db.one(
        f"SELECT count(*) AS n FROM {kind.table} WHERE vector IS NOT NULL AND dims = %s", (dims,)
    )
    embedded = int(row["n"]) if row else 0
    if embedded < max(1, min_rows):
        return False
    if method == "ivfflat":
        lists = max(10, int(math.sqrt(embedded)))
        using = f"ivfflat ((vector::vector({dims})) vector_cosine_ops) WITH (lists = {lists})"
    else:
        using = (
            f"hnsw ((vector::vector({dims})) vector_cosine_ops) "
            "WITH (m = 24, ef_construction = 128)"
        )
    with db.transaction() as conn:
        # One builder at a time across processes; the others go on without waiting.
        lock = conn.execute(
            "SELECT pg_try_advisory_xact_lock(hashtext(%s)) AS ok",
            (f"{db.schema}.{kind.table}_vector",),
        ).fetchone()
        if not lock or not lock["ok"] or vector_index_exists(db, kind):
            return False
        conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS {kind.table}_vector ON {kind.table} USING {using} "
            f"WHERE dims = {int(dims)}"
        )
    return True


def vector_search(
    db: Connection,
    project: str,
    kind: Kind,
    vector: npt.NDArray[np.float32],
    *,
    limit: int,
    dims: int | None,
    indexed: bool,
    filters: Filters | None = None,
    ids: Sequence[str] | None = None,
) -> list[tuple[str, float]]:
    """Top-``limit`` embedded rows by cosine similarity (1 − cosine distance); the HNSW
    beam is the connection's ``ef_search``, widened to the limit when that is larger."""
    if not 1 <= limit <= _MAX_LIMIT:
        raise InvalidRequest(f"limit must be between 1 and {_MAX_LIMIT}")
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    if dims is None:
        return []
    if query.shape[0] != dims:
        raise DimensionMismatch(
            f"query vector has {query.shape[0]} dims; the store's vectors have {dims}",
            details={"query_dims": int(query.shape[0]), "store_dims": dims},
        )
    where, params = filter_sql(kind, filters)
    base = (
        f"FROM {kind.table} t WHERE t.project = %s AND t.deleted_at IS NULL "
        f"AND t.status = 'embedded' AND t.vector IS NOT NULL AND t.dims = {int(dims)}{where}"
    )
    if ids is not None:
        base += " AND t.id = ANY(%s)"
        params = [*params, list(ids)]
    if indexed and ids is None:
        indexed_sql = (
            f"SELECT t.id, coalesce(1 - (t.vector::vector({int(dims)}) <=> "
            f"%s::vector({int(dims)})), 0) AS score {base} "
            f"ORDER BY t.vector::vector({int(dims)}) <=> %s::vector({int(dims)}) LIMIT %s"
        )
        args = (query, project, *params, query, limit)
        if limit <= db.ef_search:
            # the connection's own beam (set when it was opened) is wide enough
            rows = db.all(indexed_sql, args)
        else:
            with db.transaction() as conn:
                conn.execute(f"SET LOCAL hnsw.ef_search = {min(1000, limit)}")
                rows = conn.execute(indexed_sql, args).fetchall()
        if len(rows) == limit:
            return [(r["id"], float(r["score"])) for r in rows]
    rows = db.all(
        f"SELECT t.id, coalesce(1 - (t.vector <=> %s), 0) AS score {base} "
        f"ORDER BY t.vector <=> %s, t.seq LIMIT %s",
        (query, project, *params, query, limit),
    )
    return [(r["id"], float(r["score"])) for r in rows]


class LexicalStats:
    """Cached BM25 statistics per (project, kind): row count, mean length, lexeme df.

    The store clears them on its own writes; other processes' writes are seen after
    ``_STATS_TTL_SECONDS`` (they only shift scores: zero counts are never cached, so a
    word that appears elsewhere is always found)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.lock = self._lock
        self._tables: dict[tuple[str, Kind], tuple[float, int, float]] = {}
        self._df: dict[tuple[str, Kind, str, bool], tuple[float, int]] = {}
        self.stems: dict[str, tuple[str, ...]] = {}

    def clear(self) -> None:
        """Forget every cached figure (after bulk writes)."""
        with self._lock:
            self._tables.clear()
            self._df.clear()

    def table(self, db: Connection, project: str, kind: Kind) -> tuple[int, float]:
        """(live rows, mean lexemes per row) of a project's kind."""
        now = time.monotonic()
        with self._lock:
            cached = self._tables.get((project, kind))
        if cached is not None and now - cached[0] < _STATS_TTL_SECONDS:
            return cached[1], cached[2]
        row = db.one(
            f"SELECT count(*) AS n, coalesce(avg(length(tsv)), 0) AS avgdl FROM {kind.table} "
            "WHERE project = %s AND deleted_at IS NULL",
            (project,),
        )
        n, avgdl = (int(row["n"]), float(row["avgdl"])) if row else (0, 0.0)
        if n:  # an empty table is not remembered: the next write may fill it
            with self._lock:
                self._tables[(project, kind)] = (now, n, avgdl)
        return n, avgdl

    def df(self, db: Connection, project: str, kind: Kind, lexeme: str, prefix: bool) -> int:
        """Rows of the project's kind whose text holds ``lexeme`` (or a word it starts)."""
        key = (project, kind, lexeme, prefix)
        now = time.monotonic()
        with self._lock:
            cached = self._df.get(key)
        if cached is not None and now - cached[0] < _STATS_TTL_SECONDS:
            return cached[1]
        row = db.one(
            f"SELECT count(*) AS n FROM {kind.table} WHERE project = %s AND deleted_at IS NULL "
            "AND tsv @@ %s::tsquery",
            (project, tsquery([lexeme], prefix={lexeme} if prefix else None)),
        )
        value = int(row["n"]) if row else 0
        if value:  # nor is an absent word: it costs one empty index probe to recheck
            with self._lock:
                self._df[key] = (now, value)
        return value


def _lexemes(db: Connection, stats: LexicalStats, terms: list[str]) -> list[str]:
    """The query terms as the index's lexemes, in query order (stemming never changes,
    so each term's lexemes are remembered)."""
    known = {t: stems for t in terms if (stems := stats.stems.get(t)) is not None}
    missing = [t for t in terms if t not in known]
    if missing:
        rows = db.all(
            "SELECT w.term, array(SELECT lexeme FROM unnest(to_tsvector('kgsearch', w.term)) "
            "ORDER BY positions[1]) AS lexemes FROM unnest(%s::text[]) AS w(term)",
            (missing,),
        )
        found = {row["term"]: tuple(row["lexemes"] or ()) for row in rows}
        known.update(found)
        with stats.lock:
            if len(stats.stems) > 100_000:
                stats.stems.clear()
            stats.stems.update(found)
    return list(dict.fromkeys(x for t in terms for x in known.get(t, ())))


def text_search(
    db: Connection,
    stats: LexicalStats,
    project: str,
    kind: Kind,
    query: str,
    *,
    limit: int,
    filters: Filters | None = None,
    prefix: bool = False,
) -> list[tuple[str, float]]:
    """BM25 over the rows' text; any query string is safe (its words are only ever
    passed as quoted lexemes)."""
    if not 1 <= limit <= _MAX_LIMIT:
        raise InvalidRequest(f"limit must be between 1 and {_MAX_LIMIT}")
    terms = query_terms(query)
    if not terms:
        return []
    lexemes = _lexemes(db, stats, terms)
    if not lexemes:
        return []
    last = _lexemes(db, stats, terms[-1:]) if prefix else []
    prefixed = set(last[-1:])
    n, avgdl = stats.table(db, project, kind)
    if n == 0:
        return []
    dfs = {x: stats.df(db, project, kind, x, x in prefixed) for x in lexemes}
    threshold = max(_FREQUENT_FLOOR, int(n * _FREQUENT_SHARE))
    all_rare = sorted((x for x in lexemes if 0 < dfs[x] <= threshold), key=dfs.__getitem__)
    rare: list[str] = []
    budget = 0
    for x in all_rare:
        # the rarest words, up to about _CANDIDATE_BUDGET matching rows to score
        if rare and budget + dfs[x] > _CANDIDATE_BUDGET:
            break
        rare.append(x)
        budget += dfs[x]
    present = [x for x in lexemes if dfs[x] > 0]
    if not present:
        return []
    if rare:
        match = tsquery(rare, prefix=prefixed)
    elif len(present) > 1:
        match = tsquery(present, prefix=prefixed, conjunction=True)
    else:
        match = tsquery(present, prefix=prefixed)
    hits = _bm25(db, project, kind, present, dfs, n, avgdl, prefixed, match, filters, limit)
    if len(hits) < limit and len(rare) < len(all_rare):
        # short: rows holding only the rare words left out may be missing, so ask again
        # requiring any rare word, as the SQLite store does
        match = tsquery(all_rare, prefix=prefixed)
        hits = _bm25(db, project, kind, present, dfs, n, avgdl, prefixed, match, filters, limit)
    return hits


def _bm25(
    db: Connection,
    project: str,
    kind: Kind,
    present: list[str],
    dfs: dict[str, int],
    n: int,
    avgdl: float,
    prefixed: set[str],
    match: str,
    filters: Filters | None,
    limit: int,
) -> list[tuple[str, float]]:
    """Score every row matching ``match`` by BM25 over the ``present`` lexemes."""
    idf = [math.log((n - dfs[x] + 0.5) / (dfs[x] + 0.5) + 1.0) for x in present]
    where, params = filter_sql(kind, filters)
    # Without a prefix word, equality alone joins the rows' lexemes to the query's, which
    # PostgreSQL hashes; the OR needed for prefixes forces a nested loop over every pair
    # (tens of ms for a question of many words matching 2,000 rows).
    join = (
        "u.lexeme = q.lexeme OR (q.prefix AND starts_with(u.lexeme, q.lexeme))"
        if prefixed
        else "u.lexeme = q.lexeme"
    )
    sql = f"""
        WITH q AS (SELECT * FROM unnest(%s::text[], %s::float8[], %s::bool[])
                   AS q(lexeme, idf, prefix)),
        c AS (SELECT t.id, t.seq, t.tsv FROM {kind.table} t WHERE t.project = %s
              AND t.deleted_at IS NULL AND t.tsv @@ %s::tsquery{where})
        SELECT c.id, sum(q.idf * u.tf * {_K1 + 1} /
            (u.tf + {_K1} * (1 - {_B} + {_B} * length(c.tsv) / %s::float8))) AS score
        FROM c CROSS JOIN LATERAL (SELECT lexeme, cardinality(positions)::float8 AS tf
                                   FROM unnest(c.tsv)) u
        JOIN q ON {join}
        GROUP BY c.id, c.seq ORDER BY score DESC, c.seq LIMIT %s"""
    args: list[Any] = [
        present,
        idf,
        [x in prefixed for x in present],
        project,
        match,
        *params,
        max(avgdl, 1.0),
        limit,
    ]
    rows = db.all(sql, args)
    return [(r["id"], float(r["score"])) for r in rows]


def stored_vectors(
    db: Connection, project: str, kind: Kind, ids: Sequence[str]
) -> dict[str, npt.NDArray[np.float32]]:
    """Vectors of embedded rows by id."""
    rows = db.all(
        f"SELECT id, vector FROM {kind.table} WHERE project = %s AND deleted_at IS NULL "
        "AND status = 'embedded' AND vector IS NOT NULL AND id = ANY(%s)",
        (project, list(dict.fromkeys(ids))),
    )
    return {r["id"]: _array(r["vector"]) for r in rows}


def _array(value: Any) -> npt.NDArray[np.float32]:
    """A pgvector value (numpy array or ``pgvector.Vector``) as float32."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)
