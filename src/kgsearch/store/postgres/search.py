"""Search primitives for PostgreSQL: pgvector cosine top-k and BM25 over ``tsvector``.

Exact vector top-k is ``ORDER BY vector <=> q``. Once a kind has an HNSW (or IVFFlat)
index — built by :func:`build_vector_index` after bulk loads and embedding runs,
never on an empty table — unfiltered queries go through it; the index has no notion
of project or filters, so when it returns fewer rows than asked (filters, other
projects, stale rows) the query is answered again exactly. Results are never
silently short. BM25 is scored as SQLite FTS5 scores it (see ``lexical.py``); as
with the SQLite store, the match requires one of the query's selective lexemes when
it has any, so frequent words do not make the GIN scan touch most of the table;
here only the rarest of them are required, until they match about 2,000 rows, since
every matching row is scored in SQL. All of the query's words still count in the
score. :class:`PostgresSearch` is the ``SearchIndex`` slice of
:class:`~kgsearch.store.postgres.store.PostgresStore`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from kgsearch.model import Filters, Kind
from kgsearch.store.postgres.citus import plan_rows
from kgsearch.store.postgres.connection import BUILD_MEMORY, Connection, StoreOptions
from kgsearch.store.postgres.held import HeldVectors, held_filters
from kgsearch.store.postgres.lexical import LexicalStats, bm25
from kgsearch.store.postgres.schema import HNSW_SQL, INDEXED_DISTANCE, IVFFLAT_SQL
from kgsearch.store.postgres.sql import filter_sql, tsquery
from kgsearch.store.search_index import MAX_LIMIT, SearchCore, TextLeg, VectorLeg, check_dims
from kgsearch.store.tracing import Trace, note, traced

__all__ = [
    "EXACT_MAX_ROWS",
    "INDEX_MIN_ROWS",
    "PostgresSearch",
    "build_vector_index",
    "vector_index_exists",
]

# A lexeme is "frequent" above this share of the rows (and this absolute floor).
_FREQUENT_SHARE = 0.01
_FREQUENT_FLOOR = 1000
# Rows the BM25 query may score: rare words are required until their rows add up to this.
_CANDIDATE_BUDGET = 2000
# Whether a kind has its vector index is looked up again after this long.
_INDEX_TTL_SECONDS = 60.0
# A vector leg with filters asks the index for this many times its limit.
_FILTERED_FETCH = 4
# Fewer embedded rows than this are searched exactly; no index is built.
INDEX_MIN_ROWS = 10_000
# A vector leg whose conditions (project, filters) leave at most this many rows, by the
# planner's estimate, scans those rows exactly instead of walking the index.
EXACT_MAX_ROWS = 10_000
# A vector leg whose conditions keep at least this share of the indexed rows (by the
# planner's estimates) walks the index plainly; below it, iteratively (see vector_search).
_PLAIN_SCAN_SHARE = 0.9
# Settings of an exact vector scan (see PostgresSearch._nearest).
_EXACT_SCAN = {"random_page_cost": "1.1"}
# The planner's estimate for a leg's conditions is asked again after this long.
_ESTIMATE_TTL_SECONDS = 60.0


def vector_index_exists(db: Connection, kind: Kind) -> bool:
    """Whether the kind's table has its vector index."""
    row = db.one(
        "SELECT 1 AS x FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
        (db.schema, f"{kind.table}_vector"),
    )
    return row is not None


def build_vector_index(
    db: Connection,
    kind: Kind,
    dims: int,
    method: str,
    *,
    min_rows: int = INDEX_MIN_ROWS,
    memory: str = BUILD_MEMORY,
) -> bool:
    """Create the kind's ANN index over embedded rows if it is missing and the table
    holds at least ``min_rows`` vectors, with ``memory`` as ``maintenance_work_mem``;
    return whether one was built now. On Citus the setting is sent on to the workers
    (see :meth:`Connection.set_local`), which build the index of each shard: the
    coordinator's own setting never reaches them, and a worker's default (64 MB) holds
    the graph of about 20,000 rows."""
    if method == "none" or vector_index_exists(db, kind):
        return False
    row = db.one(
        f"SELECT count(*) AS n FROM {kind.table} WHERE vector IS NOT NULL AND dims = %s", (dims,)
    )
    embedded = int(row["n"]) if row else 0
    if embedded < max(1, min_rows):
        return False
    if method == "ivfflat":
        using = IVFFLAT_SQL % (int(dims), max(10, int(math.sqrt(embedded))))
    else:
        using = HNSW_SQL % int(dims)
    with db.transaction() as conn:
        # One builder at a time across processes; the others go on without waiting.
        lock = conn.execute(
            "SELECT pg_try_advisory_xact_lock(hashtext(%s)) AS ok",
            (f"{db.schema}.{kind.table}_vector",),
        ).fetchone()
        if not lock or not lock["ok"] or vector_index_exists(db, kind):
            return False
        db.set_local(conn, {"maintenance_work_mem": memory})
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS {kind.table}_vector ON {kind.table} USING {using} "
            f"WHERE dims = {int(dims)}"
        )
    return True


class PostgresSearch(SearchCore):
    """The ``SearchIndex`` capability over PostgreSQL, and the vector indexes' upkeep."""

    # each vector leg is a query on a pooled connection: see SearchIndex.parallel_vector_legs
    parallel_vector_legs = True

    db: Connection
    options: StoreOptions
    lexical: LexicalStats
    # vectors held in the process (None: off, or on Citus)
    held: HeldVectors | None
    # build a kind's vector index once it holds this many vectors
    index_min_rows: int
    # scan a vector leg's rows exactly when the planner expects at most this many
    exact_max_rows: int
    # per kind: (when looked up, whether its vector index exists)
    _indexed: dict[Kind, tuple[float, bool]]
    # per leg's conditions: (when estimated, the planner's row estimate)
    _estimates: dict[tuple[Any, ...], tuple[float, float]]

    def _dims(self) -> int | None:
        """The dims of the stored vectors (None before the first embedding run)."""
        dims = self.db.meta("dims")
        return int(dims) if dims else None

    def _has_index(self, kind: Kind) -> bool:
        """Whether the kind has its vector index (looked up again every minute, so an
        index another process builds is used)."""
        if self.options.vector_index == "none":  # exact search only, even if one exists
            return False
        now = time.monotonic()
        cached = self._indexed.get(kind)
        if cached is None or now - cached[0] > _INDEX_TTL_SECONDS:
            cached = (now, vector_index_exists(self.db, kind))
            self._indexed[kind] = cached
        return cached[1]

    def _estimated_rows(self, kind: Kind, base: str, params: Sequence[Any]) -> float:
        """The planner's estimate of the rows a vector leg's conditions leave (from the
        table's statistics: an ``EXPLAIN``, nothing read), remembered for a minute per
        conditions (the time a relationship is valid at is left out of the key)."""
        key = (kind, base, *(_hashable(p) for p in params))
        now = time.monotonic()
        cached = self._estimates.get(key)
        if cached is None or now - cached[0] > _ESTIMATE_TTL_SECONDS:
            row = self.db.one(f"EXPLAIN (FORMAT JSON) SELECT 1 {base}", params)
            plan = row["QUERY PLAN"] if row else None
            rows = plan_rows(plan[0]["Plan"]) if plan else math.inf  # Citus: the worker's
            if len(self._estimates) > 1000:
                self._estimates.clear()
            cached = self._estimates[key] = (now, rows)
        return cached[1]

    def build_indexes(self) -> list[str]:
        """Build each kind's vector index once it holds enough vectors (after a bulk load
        or an embedding run; never on an empty table). Returns the kinds indexed now."""
        dims = self._dims()
        built: list[str] = []
        if dims is None:
            return built
        for kind in Kind:
            if build_vector_index(
                self.db,
                kind,
                dims,
                self.options.vector_index,
                min_rows=self.index_min_rows,
                memory=self.options.build_memory,
            ):
                built.append(kind.value)
            self._indexed.pop(kind, None)
        return built

    def _vectors_forgotten(self) -> None:
        """Drop every kind's vector index (the vectors they index are forgotten)."""
        for kind in Kind:
            self.db.execute(f"DROP INDEX IF EXISTS {kind.table}_vector")
        self._indexed.clear()

    def _nearest(self, leg: VectorLeg) -> list[tuple[str, float]]:
        # 1 − cosine distance; the HNSW beam is the connection's ``ef_search``, widened
        # to the limit when that is larger
        project, kind, query, limit, filters, ids = leg
        dims = self._dims()
        if dims is None:
            return []
        check_dims(query, dims)
        if self.lexical.empty(self.db, project, kind):
            return []  # an empty kind (a graph without chunks): no query at all
        if self.held is not None and ids is None and held_filters(kind, filters):
            hits = self.held.search(project, kind, query, limit, int(dims))
            if hits is not None:
                note(f"top {limit} by an int8 scan of the {kind.value} vectors held in memory")
                return hits
        where, params = filter_sql(kind, filters)
        base = (
            f"FROM {kind.table} t WHERE t.project = %s AND t.deleted_at IS NULL "
            f"AND t.status = 'embedded' AND t.vector IS NOT NULL AND t.dims = {int(dims)}{where}"
        )
        if ids is not None:
            base += " AND t.id = ANY(%s)"
            params = [*params, list(ids)]
        d = int(dims)
        # a filtered leg asks the index for more rows and keeps the nearest: the first
        # rows an iterative scan finds to pass a filter are not always the nearest ones
        fetch = min(MAX_LIMIT, _FILTERED_FETCH * limit) if _narrowed(kind, filters) else limit
        indexed = ids is None and self._has_index(kind)
        iterative = False
        if indexed:
            estimate = self._estimated_rows(kind, base, [project, *params])
            indexed = estimate > self.exact_max_rows
            if not indexed:
                note(f"about {estimate:,.0f} rows pass the conditions: exact scan")
            else:
                indexed_rows = self._estimated_rows(
                    kind, f"FROM {kind.table} t WHERE t.dims = {d}", []
                )
                iterative = estimate < _PLAIN_SCAN_SHARE * indexed_rows
        if indexed:
            # an iterative scan in relaxed order (pgvector 0.8) keeps walking the graph
            # until ``limit`` rows pass the conditions (or hnsw.max_scan_tuples are
            # visited); it is needed only when they drop many of the indexed rows (other
            # projects', deleted ones, filters), else the connection's plain scan returns
            # its beam, nearly every row of which passes. The rows come back nearly
            # sorted, so they are ordered again here.
            # the limit is written into the statement (an int): with a LIMIT parameter
            # the planner prices a prepared statement's generic plan for a tenth of the
            # table, finds it dearer than the custom ones and plans every call again
            indexed_sql = (
                f"WITH r AS MATERIALIZED (SELECT t.id, t.seq, {INDEXED_DISTANCE % (d, d)} "
                f"AS distance {base} ORDER BY distance LIMIT {int(fetch)}) "
                "SELECT id, coalesce(1 - distance, 0) AS score FROM r ORDER BY distance, seq"
            )
            args = (query, project, *params)
            # every walk names its beam and scan mode: a pooled session keeps those of
            # the last walk on it (see connection._LEG_SETTINGS), set again only when
            # they differ; Citus's workers see them only as each statement's own
            beam = min(1000, max(self.options.beam(kind), fetch))
            settings = {"hnsw.ef_search": str(beam)}
            if iterative:
                note("the conditions drop many indexed rows: iterative index scan")
                settings["hnsw.iterative_scan"] = "relaxed_order"
                settings["ivfflat.iterative_scan"] = "relaxed_order"
            elif not self.db.workers_follow_settings:
                settings["hnsw.iterative_scan"] = "off"
                settings["ivfflat.iterative_scan"] = "off"
            rows = self.db.all_with(settings, indexed_sql, args)
            if len(rows) >= limit:
                return [(r["id"], float(r["score"])) for r in rows[:limit]]
            note(f"the vector index found {len(rows)} of {limit} rows: exact scan")
        # few rows pass (a selective filter, a small project), no index, or ids given:
        # the exact top-k of those rows, read through the indexes on the filtered columns
        # each row's distance is computed once (pgvector's halfvec distance converts every
        # value; written twice, as score and as sort key, it was computed twice), and the
        # limit is written into the statement as in the indexed query. The rows are read
        # from the kind's exact-scan index (schema m013), which the planner takes over the
        # table only when it knows index pages to be as cheap to read as the table's
        # (they are cached, as the table is): by default it prices them 4 times dearer.
        # The index holds no ids (a long one would not fit a btree entry): the top rows'
        # ids are read by their keys afterwards. The query vector is made a halfvec once,
        # by a subquery: in a generic plan (PostgreSQL's after five runs of a prepared
        # statement, when it costs no more) ``%s::halfvec`` converted it for every row.
        rows = self.db.all_with(
            _EXACT_SCAN,
            "SELECT o.id, coalesce(1 - r.distance, 0) AS score FROM (SELECT t.seq, "
            f"t.vector <=> (SELECT %s::halfvec) AS distance {base} ORDER BY distance, t.seq "
            f"LIMIT {int(limit)}) AS r JOIN {kind.table} o ON o.project = %s AND o.seq = r.seq "
            "ORDER BY r.distance, r.seq",
            (query, project, *params, project),
        )
        return [(r["id"], float(r["score"])) for r in rows]

    def _matching(self, leg: TextLeg) -> list[tuple[str, float]]:
        # any query string is safe: its words are only ever passed as quoted lexemes
        project, kind, terms, limit, filters, prefix = leg
        n, avgdl = self.lexical.table(self.db, project, kind)
        if n == 0:
            return []
        wanted, prefixed, dfs = self.lexical.words(self.db, project, kind, terms, prefix)
        if not wanted:
            return []
        threshold = max(_FREQUENT_FLOOR, int(n * _FREQUENT_SHARE))
        all_rare = sorted((x for x in wanted if 0 < dfs[x] <= threshold), key=dfs.__getitem__)
        rare: list[str] = []
        budget = 0
        for x in all_rare:
            # the rarest words, up to about _CANDIDATE_BUDGET matching rows to score
            if rare and budget + dfs[x] > _CANDIDATE_BUDGET:
                break
            rare.append(x)
            budget += dfs[x]
        present = [x for x in wanted if dfs[x] > 0]
        if not present:
            return []
        if rare:
            match = tsquery(rare, prefix=prefixed)
        elif len(present) > 1:
            match = tsquery(present, prefix=prefixed, conjunction=True)
        else:
            match = tsquery(present, prefix=prefixed)
        hits = bm25(self.db, project, kind, present, dfs, n, avgdl, prefixed, match, filters, limit)
        if len(hits) < limit and len(rare) < len(all_rare):
            # short: rows holding only the rare words left out may be missing, so ask again
            # requiring any rare word, as the SQLite store does
            match = tsquery(all_rare, prefix=prefixed)
            hits = bm25(
                self.db, project, kind, present, dfs, n, avgdl, prefixed, match, filters, limit
            )
        return hits

    def _named(
        self, project: str, names: list[str], filters: Filters | None
    ) -> list[tuple[str, str, str, str]]:
        # each name lowered by the server, as the key is (Python's lower can differ)
        where, params = filter_sql(Kind.OBJECT, filters)
        rows = self.db.all(
            "SELECT n.name, t.type, t.id, t.key FROM unnest(%s::text[]) AS n(name) "
            "JOIN objects t ON t.project = %s AND lower(t.key) = lower(n.name) "
            f"WHERE t.deleted_at IS NULL{where}",
            (names, project, *params),
        )
        return [(r["name"], r["type"], r["id"], r["key"]) for r in rows]

    @traced
    def object_types(self, project: str, *, trace: Trace | None = None) -> list[str]:
        return [
            r["type"]
            for r in self.db.all(
                "SELECT DISTINCT type FROM objects WHERE project = %s AND deleted_at IS NULL "
                "ORDER BY type",
                (project,),
            )
        ]

    @traced
    def vectors(
        self, project: str, kind: Kind, ids: Sequence[str], *, trace: Trace | None = None
    ) -> dict[str, npt.NDArray[np.float32]]:
        """Stored vectors of the given embedded rows."""
        rows = self.db.all(
            f"SELECT id, vector FROM {kind.table} WHERE project = %s AND deleted_at IS NULL "
            "AND status = 'embedded' AND vector IS NOT NULL AND id = ANY(%s)",
            (project, list(dict.fromkeys(ids))),
        )
        return {r["id"]: _array(r["vector"]) for r in rows}


def _narrowed(kind: Kind, filters: Filters | None) -> bool:
    """Whether the caller's filters narrow the kind's rows (beyond live, valid now)."""
    if filters is None:
        return False
    if kind is Kind.OBJECT:
        return bool(filters.object_types or filters.labels or filters.properties)
    if kind is Kind.RELATIONSHIP:
        return bool(filters.relationship_types or filters.properties)
    return bool(filters.properties)


def _hashable(value: Any) -> Any:
    """A statement parameter as part of a cache key (a point in time as one value: the
    estimate of "valid at" conditions does not depend on the moment)."""
    if isinstance(value, datetime):
        return datetime
    if isinstance(value, list):
        return tuple(value)
    return value


def _array(value: Any) -> npt.NDArray[np.float32]:
    """A pgvector value (numpy array or ``pgvector.Vector``) as float32."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)
