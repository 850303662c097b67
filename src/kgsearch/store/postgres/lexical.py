"""BM25 for the PostgreSQL store, scored like SQLite FTS5's.

PostgreSQL's ``ts_rank`` is not BM25 (no inverse document frequency), so the score is
computed in SQL here with the same formula as SQLite FTS5 (k1 = 1.2, b = 0.75): the
query's lexemes come from ``to_tsvector('kgsearch', …)`` (:meth:`LexicalStats.words`), term
frequencies from the stored ``tsvector``'s positions, document lengths as its lexeme
count, and document frequencies from the GIN index, cached per project and kind and
kept warm by :class:`LexicalStats` (:func:`bm25` ranks the rows one ``tsquery``
matches cheaply and scores the best again exactly). A lexeme common enough to be in
the column's statistics (``pg_stats.most_common_elems``, which ``ANALYZE`` and
autovacuum keep) takes its frequency from there instead of a count: counting the rows
of a frequent word is the dearest read a first search of it makes, and its weight in
BM25 is small and changes slowly.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from kgsearch.model import Filters, Kind
from kgsearch.store.postgres.connection import Connection
from kgsearch.store.postgres.sql import filter_sql, tsquery

__all__ = ["LexicalStats", "bm25"]

_K1 = 1.2
_B = 0.75
# The cheap first stage keeps this many rows (at least) for the exact second one.
_RESCORE_POOL = 90
_RESCORE_FACTOR = 3
# Cached frequencies are refreshed after this long; BM25 needs them only roughly.
_STATS_TTL_SECONDS = 300.0
# An empty kind (no chunks, say) is counted again after this long: another process's
# first rows show as soon as its metadata does (see connection.py), and a search of a
# graph without chunks does not count them each time.
_EMPTY_TTL_SECONDS = 2.0
# Kinds of up to this many rows have stale figures read again before scoring.
_SYNC_ROWS = 10_000
# Kinds of up to this many rows have figures a write made stale read again before the
# next search scores (a count of a few thousand short rows); a larger kind's are read
# in the background, at most every _REFRESH_SECONDS: on the sample graph's 9,000
# objects a count of every row's length after each write took about a fifth of
# PostgreSQL's CPU under REST load with 10 writes a second.
_LAG_ROWS = 2_000
# On larger kinds a first count stops here (exact figures follow in the background).
_DF_CAP = 5_000
# A (project, kind)'s stale figures are read again in the background at most this often:
# under steady writes (each makes every figure stale) the refresh, whose row count reads
# the whole kind, ran back to back (REST on the sample graph with 10 writes a second:
# about a fifth of PostgreSQL's CPU).
_REFRESH_SECONDS = 5.0


# The tsv column's common lexemes and their shares, from its statistics (parameters:
# whether wanted, schema, table). On Citus the statistics are the shards', on the
# workers, and a statement joining the coordinator's catalog to a distributed table is
# refused (its catalog rows hold ``aclitem``s, which Citus cannot ship): there the
# same parameters select nothing, and every lexeme is counted.
_COMMON_ELEMS = (
    "SELECT most_common_elems::text::text[] AS e, most_common_elem_freqs AS f "
    "FROM pg_stats WHERE %s AND schemaname = %s AND tablename = %s AND attname = 'tsv'"
)
_NO_COMMON_ELEMS = (
    "SELECT NULL::text[] AS e, NULL::real[] AS f "
    "FROM (VALUES (%s::bool, %s::text, %s::text)) AS v(w, s, t) WHERE false"
)

# A lexeme (``\\w`` characters only, as the stored words are) as a ``tsquery``.
_LEXEME = "quote_literal(l.x)::tsquery"
# The lexemes of each term in order and their counts (the terms and the count are written
# in: parameters terms, then the count's). Off Citus the terms are a subquery's value, so
# that the prepared statement keeps its generic plan (see reads._ONCE_PLANNED).
_STEM_AND_COUNT = (
    "WITH w AS (SELECT w.term, array(SELECT lexeme FROM "
    "unnest(to_tsvector('kgsearch', w.term)) ORDER BY positions[1]) AS lexemes "
    "FROM unnest(%s) AS w(term)) "
    "SELECT w.term, w.lexemes, array(SELECT %s FROM unnest(w.lexemes) WITH ORDINALITY "
    "AS l(x, i) ORDER BY l.i) AS counts FROM w"
)


def _estimated_df(share: float, rows: int) -> int:
    """Rows holding a lexeme the statistics give ``share`` of the rows to (at least one:
    the statistics saw it)."""
    return max(1, round(share * rows))


def _count_sql(kind: Kind, query: str) -> str:
    """Rows of a project's kind matching ``query`` (an SQL expression), up to a cap:
    parameters (project, cap; a NULL cap counts them all)."""
    return (
        f"(SELECT count(*) FROM (SELECT 1 FROM {kind.table} t WHERE t.project = %s "
        f"AND t.deleted_at IS NULL AND t.tsv @@ {query} LIMIT %s) AS m)"
    )


# The stems of query terms (no table: on Citus the coordinator answers it alone).
_STEMS = (
    "SELECT w.term, array(SELECT lexeme FROM unnest(to_tsvector('kgsearch', w.term)) "
    "ORDER BY positions[1]) AS lexemes FROM unnest(%s::text[]) AS w(term)"
)


def _spread_counts(db: Connection, project: str, kind: Kind, queries: list[str]) -> list[int]:
    """Rows of a project's kind matching each ``tsquery`` text, on a spread table (Citus
    refuses the per-query count of :func:`_count_sql`, a subquery correlated with an
    array's elements, across shards): one join counted on every shard, summed by the
    coordinator, uncapped."""
    rows = db.all(
        f"SELECT w.i, count(*) AS n FROM unnest(%s::text[]) WITH ORDINALITY AS w(q, i) "
        f"JOIN {kind.table} t ON t.tsv @@ w.q::tsquery WHERE t.project = %s "
        "AND t.deleted_at IS NULL GROUP BY w.i",
        (queries, project),
    )
    counts = {int(r["i"]) - 1: int(r["n"]) for r in rows}
    return [counts.get(i, 0) for i in range(len(queries))]


class LexicalStats:
    """Cached BM25 statistics per (project, kind): row count, mean length, lexeme df,
    kept warm.

    A figure is read again once it is ``_STATS_TTL_SECONDS`` old, or after the store's
    own writes (:meth:`clear` marks every figure read before it stale). On a kind of up
    to ``_LAG_ROWS`` rows the query that finds a stale figure reads it again itself (a
    cheap count, so small stores score exactly as SQLite does after each write); on a
    larger one the stale figure is used and read again by one background thread, so
    neither writes nor the five-minute expiry make a search wait for full counts. That
    thread reads the row count again and the frequencies of the lexemes searched while
    stale (not every lexeme ever searched), each (project, kind) at most every
    ``_REFRESH_SECONDS``: figures may lag a write by that long and one refresh, as
    SQLite's lag a tenth of the rows.
    Zero document frequencies are never cached, so a word that appears elsewhere is
    always found; an empty kind is remembered for ``_EMPTY_TTL_SECONDS`` (vector legs
    skip it too, see ``search.py``)."""

    def __init__(self, *, column_stats: bool = True) -> None:
        # False on Citus: no column statistics (see _NO_COMMON_ELEMS)
        self.column_stats = column_stats
        # tables distributed by row id on Citus: counted by _spread_counts
        self.spread: frozenset[str] = frozenset()
        self._lock = threading.Lock()
        self.lock = self._lock
        # values are (when read, figure); a stale figure has its time set to -inf
        self._tables: dict[tuple[str, Kind], tuple[float, tuple[int, float]]] = {}
        self._df: dict[tuple[str, Kind, str, bool], tuple[float, int]] = {}
        self.stems: dict[str, tuple[str, ...]] = {}
        # per kind: (when read, the tsv column's common lexemes → share of rows)
        self._common: dict[Kind, tuple[float, dict[str, float]]] = {}
        # figures whose read began before this moment are stale (the last write's)
        self._stale_before = -math.inf
        # (project, kind) pairs a background refresh is due for, and whether one runs
        self._due: set[tuple[str, Kind]] = set()
        self._refreshing = False
        # per (project, kind): when its last background refresh began, and the lexemes
        # (with whether as a prefix) searched with a stale figure since
        self._refreshed: dict[tuple[str, Kind], float] = {}
        self._wanted: dict[tuple[str, Kind], set[tuple[str, bool]]] = {}
        # per (project, kind): set once the row count a search is reading now is read
        self._reading: dict[tuple[str, Kind], threading.Event] = {}
        # per thread: whether it wrote since its last commit
        self._written = threading.local()

    def clear(self) -> None:
        """Mark every cached figure stale (after the store's own writes; called inside
        a write's transaction, it is called again when that commits: see
        :meth:`committed`)."""
        self._written.flag = True
        self._stale()

    def committed(self) -> None:
        """After a transaction commits: if it wrote (:meth:`clear` ran on this thread),
        mark the figures stale again, since a search on another thread may have read
        them before the write was visible."""
        if getattr(self._written, "flag", False):
            self._written.flag = False
            self._stale()

    def _stale(self) -> None:
        with self._lock:
            self._stale_before = time.monotonic()

    def _fresh(self, at: float, now: float, ttl: float = _STATS_TTL_SECONDS) -> bool:
        """Whether a figure whose read began at ``at`` is still good at ``now``."""
        return at > self._stale_before and now - at < ttl

    def table(self, db: Connection, project: str, kind: Kind) -> tuple[int, float]:
        """(live rows, mean lexemes per row) of a project's kind."""
        now = time.monotonic()
        with self._lock:
            cached = self._tables.get((project, kind))
        ttl = _STATS_TTL_SECONDS if cached is None or cached[1][0] else _EMPTY_TTL_SECONDS
        if cached is not None and self._fresh(cached[0], now, ttl):
            return cached[1]
        if cached is not None and cached[1][0] > _LAG_ROWS:
            self._refresh_later(db, project, kind)
            return cached[1]
        return self._read_table_once(db, project, kind)

    def empty(self, db: Connection, project: str, kind: Kind) -> bool:
        """Whether the project's kind holds no live row (a kind known to hold rows is
        taken to hold them still, without a read: a search of it finds whatever is left)."""
        with self._lock:
            cached = self._tables.get((project, kind))
        if cached is not None and cached[1][0] > 0:
            return False
        return self.table(db, project, kind)[0] == 0

    def _read_table_once(self, db: Connection, project: str, kind: Kind) -> tuple[int, float]:
        """:meth:`_read_table`, once for the searches that find the figure stale at the same
        time (after a write, every leg of every search under way did): the others wait
        for that read and take its figure, unless a write made it stale meanwhile."""
        key = (project, kind)
        with self._lock:
            reading = self._reading.get(key)
            if reading is None:
                self._reading[key] = threading.Event()
        if reading is not None:
            reading.wait(30.0)
            with self._lock:
                cached = self._tables.get(key)
            if cached is not None and self._fresh(cached[0], time.monotonic()):
                return cached[1]
            return self._read_table(db, project, kind)
        try:
            return self._read_table(db, project, kind)
        finally:
            with self._lock:
                self._reading.pop(key).set()

    def dfs(
        self, db: Connection, project: str, kind: Kind, lexemes: list[str], prefixed: set[str]
    ) -> dict[str, int]:
        """Rows of the project's kind holding each lexeme (or, for the ``prefixed``
        ones, a word it starts); the missing figures are read in one query."""
        now = time.monotonic()
        out: dict[str, int] = {}
        missing: list[str] = []
        stale: list[tuple[str, bool]] = []
        with self._lock:
            large = (self._tables.get((project, kind)) or (0.0, (0, 0.0)))[1][0] > _LAG_ROWS
            for x in lexemes:
                cached = self._df.get((project, kind, x, x in prefixed))
                fresh = cached is not None and self._fresh(cached[0], now)
                if cached is not None and (large or fresh):
                    out[x] = cached[1]
                    if not fresh:
                        stale.append((x, x in prefixed))
                else:
                    missing.append(x)
            if stale:
                self._wanted.setdefault((project, kind), set()).update(stale)
        if stale:
            self._refresh_later(db, project, kind)
        if missing:
            out.update(self._read_dfs(db, project, kind, [(x, x in prefixed) for x in missing]))
        return out

    def common(self, db: Connection, kind: Kind) -> dict[str, float]:
        """The kind's common lexemes and the share of its rows holding each, from the
        column statistics (empty before the table's first ``ANALYZE``), read again
        every ``_STATS_TTL_SECONDS``. Shares are of the whole table, every project's
        rows: a project's own is assumed alike."""
        now = time.monotonic()
        with self._lock:
            cached = self._common.get(kind)
        if cached is not None and now - cached[0] < _STATS_TTL_SECONDS:
            return cached[1]
        row = db.one(
            _COMMON_ELEMS if self.column_stats else _NO_COMMON_ELEMS,
            (True, db.schema, kind.table),
        )
        shares: dict[str, float] = {}
        if row is not None and row["e"] and row["f"]:
            # the frequencies list ends with three summary figures past the lexemes'
            shares = dict(zip(row["e"], (float(f) for f in row["f"]), strict=False))
        with self._lock:
            self._common[kind] = (now, shares)
        return shares

    def _estimates(
        self, db: Connection, project: str, kind: Kind, words: list[tuple[str, bool]]
    ) -> dict[str, int]:
        """Document frequencies of the common whole words among ``words``, from the
        statistics (at least 1: the statistics saw the word), on a kind of over
        ``_SYNC_ROWS`` rows; none on a smaller one."""
        n, _ = self.table(db, project, kind)
        if n <= _SYNC_ROWS:  # small kinds are counted exactly, as SQLite scores them
            return {}
        shares = self.common(db, kind)
        known = [(x, shares[x]) for x, prefix in words if not prefix and x in shares]
        return {x: _estimated_df(share, n) for x, share in known}

    def _table_stale(self, project: str, kind: Kind) -> bool:
        """Whether the (project, kind)'s row count and mean length are due a new read
        (a stale document frequency alone does not make them so: counting every row's
        length is the refresh's dearest read)."""
        with self._lock:
            cached = self._tables.get((project, kind))
            return cached is None or not self._fresh(cached[0], time.monotonic())

    def _read_table(self, db: Connection, project: str, kind: Kind) -> tuple[int, float]:
        # a figure is as old as its read's start: a write committed meanwhile makes it stale
        started = time.monotonic()
        row = db.one(
            f"SELECT count(*) AS n, coalesce(avg(length(tsv)), 0) AS avgdl FROM {kind.table} "
            "WHERE project = %s AND deleted_at IS NULL",
            (project,),
        )
        figure = (int(row["n"]), float(row["avgdl"])) if row else (0, 0.0)
        with self._lock:  # an empty kind for a moment only (_EMPTY_TTL_SECONDS)
            self._tables[(project, kind)] = (started, figure)
        return figure

    def _read_dfs(
        self,
        db: Connection,
        project: str,
        kind: Kind,
        words: list[tuple[str, bool]],
        cap: int | None = None,
    ) -> dict[str, int]:
        started = time.monotonic()
        estimated = self._estimates(db, project, kind, words)
        if estimated:
            self._remember(
                project, kind, [(x, False, d) for x, d in estimated.items()], None, started
            )
            words = [(x, prefix) for x, prefix in words if prefix or x not in estimated]
            if not words:
                return estimated
        queries = [tsquery([x], prefix={x} if prefix else None) for x, prefix in words]
        if kind.table in self.spread:
            counts = dict(enumerate(_spread_counts(db, project, kind, queries)))
            cap = None
        else:
            rows = db.all(
                f"SELECT w.i, {_count_sql(kind, 'w.q::tsquery')} AS n "
                "FROM unnest(%s::text[]) WITH ORDINALITY AS w(q, i)",
                (project, cap, queries),
            )
            counts = {int(r["i"]) - 1: int(r["n"]) for r in rows}
        counted = self._remember(
            project,
            kind,
            [(x, p, counts.get(i, 0)) for i, (x, p) in enumerate(words)],
            cap,
            started,
        )
        return {**estimated, **counted}

    def _remember(
        self,
        project: str,
        kind: Kind,
        counts: list[tuple[str, bool, int]],
        cap: int | None,
        started: float,
    ) -> dict[str, int]:
        """Cache document frequencies whose read began at ``started`` (a figure at the
        cap stale at once, so the background refresh reads it whole) and return them by
        lexeme."""
        now = started
        out: dict[str, int] = {}
        with self._lock:
            for x, prefix, n in counts:
                out[x] = n
                if n:  # nor is an absent word: it costs one empty index probe
                    at = -math.inf if cap is not None and n >= cap else now
                    self._df[(project, kind, x, prefix)] = (at, n)
                    if at == -math.inf:  # read whole by the next refresh
                        self._wanted.setdefault((project, kind), set()).add((x, prefix))
                else:
                    self._df.pop((project, kind, x, prefix), None)
        return out

    def words(
        self, db: Connection, project: str, kind: Kind, terms: list[str], prefix: bool
    ) -> tuple[list[str], set[str], dict[str, int]]:
        """The query terms' lexemes in query order, the one to match as a prefix (the
        last, when ``prefix``), and their document frequencies. Terms met for the first
        time are stemmed and their lexemes counted in one query; on a large kind the
        counts stop at ``_DF_CAP`` (a word that frequent weighs little: its exact figure
        is read in the background)."""
        n, _ = self.table(db, project, kind)
        cap = _DF_CAP if n > _SYNC_ROWS else None
        with self._lock:
            known = {t: stems for t in terms if (stems := self.stems.get(t)) is not None}
        missing = list(dict.fromkeys(t for t in terms if t not in known))
        started = time.monotonic()
        if missing and kind.table in self.spread:
            found, counted = self._stem_spread(db, project, kind, missing)
            known.update(found)
            self._remember(project, kind, sorted(counted), None, started)
        elif missing:
            # stemmed and counted in one statement; on a large kind a lexeme in the
            # column statistics (:meth:`common`, read every few minutes) takes its share
            # of the rows from there instead of its count. Joining the pg_stats view in
            # this statement (a thousand lexemes sent as a parameter cost more) took
            # most of its time planning the view (1.7 of 2 ms on the sample graph), or
            # a session setting for a generic plan, set and undone around it (two more
            # round trips); a new term's common lexeme is now counted, up to the cap,
            # the first time it is met
            terms_sql = "(SELECT %s::text[])::text[]" if self.column_stats else "%s::text[]"
            rows = db.all(
                _STEM_AND_COUNT % (terms_sql, _count_sql(kind, _LEXEME)), (missing, project, cap)
            )
            shares = self.common(db, kind) if n > _SYNC_ROWS else {}
            found = {r["term"]: tuple(r["lexemes"] or ()) for r in rows}
            counted = {
                (x, False, _estimated_df(shares[x], n) if x in shares else int(c))
                for r in rows
                for x, c in zip(r["lexemes"] or (), r["counts"] or (), strict=True)
            }
            known.update(found)
            with self._lock:
                if len(self.stems) > 100_000:
                    self.stems.clear()
                self.stems.update(found)
            self._remember(project, kind, sorted(counted), cap, started)
        wanted = list(dict.fromkeys(x for t in terms for x in known.get(t, ())))
        prefixed = set(known.get(terms[-1], ())[-1:]) if prefix and terms else set()
        return wanted, prefixed, self.dfs(db, project, kind, wanted, prefixed)

    def _stem_spread(
        self, db: Connection, project: str, kind: Kind, terms: list[str]
    ) -> tuple[dict[str, tuple[str, ...]], set[tuple[str, bool, int]]]:
        """The terms' lexemes and the lexemes' counts on a spread table: stemmed by the
        coordinator, counted by :func:`_spread_counts` (two statements, not one)."""
        rows = db.all(_STEMS, (terms,))
        found = {r["term"]: tuple(r["lexemes"] or ()) for r in rows}
        lexemes = sorted({x for stems in found.values() for x in stems})
        counts = _spread_counts(db, project, kind, [tsquery([x]) for x in lexemes])
        with self._lock:
            if len(self.stems) > 100_000:
                self.stems.clear()
            self.stems.update(found)
        return found, {(x, False, n) for x, n in zip(lexemes, counts, strict=True)}

    def _refresh_later(self, db: Connection, project: str, kind: Kind) -> None:
        """Read the (project, kind)'s stale figures again on the background thread."""
        with self._lock:
            self._due.add((project, kind))
            if self._refreshing:
                return
            self._refreshing = True
        threading.Thread(target=self._refresh, args=(db,), daemon=True).start()

    def _refresh(self, db: Connection) -> None:
        while True:
            with self._lock:
                if not self._due:
                    self._refreshing = False
                    return
                now = time.monotonic()
                due = min(self._due, key=lambda k: self._refreshed.get(k, -math.inf))
                wait = self._refreshed.get(due, -math.inf) + _REFRESH_SECONDS - now
                if wait <= 0:
                    self._due.discard(due)
                    self._refreshed[due] = now
                    project, kind = due
                    words = sorted(
                        (x, prefix)
                        for x, prefix in self._wanted.pop(due, set())
                        if not self._fresh(self._df.get((*due, x, prefix), (-math.inf, 0))[0], now)
                    )
            if wait > 0:  # the last refresh of every due pair began a moment ago
                time.sleep(wait)
                continue
            try:
                if self._table_stale(project, kind):
                    self._read_table(db, project, kind)
                for start in range(0, len(words), 100):
                    self._read_dfs(db, project, kind, words[start : start + 100])
            except Exception:  # e.g. the store closed: the figures stay stale
                with self._lock:
                    self._due.clear()
                    self._refreshing = False
                return


def bm25(
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
    """BM25 over the ``present`` lexemes of the rows matching ``match``, in two stages.

    Every matching row is ranked cheaply, in C, by BM25 with each present word counted
    once (``tsv @@ word`` tests and the row's length: no row is unnested), and the best
    ``max(3 × limit, 90)`` are scored again exactly, term frequencies read from the
    ``tsvector``'s positions. The two differ only for rows repeating a word, which the
    pool leaves room for (and ``ts_rank``, which counts repeats, orders the cheap ties);
    every returned score is the exact one.
    """
    idf = [math.log((n - dfs[x] + 0.5) / (dfs[x] + 0.5) + 1.0) for x in present]
    where, params = filter_sql(kind, filters)
    norm = f"(1 - {_B} + {_B} * length(t.tsv) / %s::float8)"
    cheap = " + ".join("(t.tsv @@ %s::tsquery)::int * %s::float8" for _ in present)
    cheap_args: list[Any] = []
    for x, weight in zip(present, idf, strict=True):
        cheap_args += [tsquery([x], prefix={x} if x in prefixed else None), weight]
    # Without a prefix word, equality alone joins the rows' lexemes to the query's, which
    # PostgreSQL hashes; the OR needed for prefixes forces a nested loop over every pair.
    join = (
        "u.lexeme = q.lexeme OR (q.prefix AND starts_with(u.lexeme, q.lexeme))"
        if prefixed
        else "u.lexeme = q.lexeme"
    )
    # the limits are written into the statement (ints), not passed: see vector_search
    pool = max(_RESCORE_FACTOR * limit, _RESCORE_POOL)
    sql = f"""
        WITH q AS (SELECT * FROM unnest(%s::text[], %s::float8[], %s::bool[])
                   AS q(lexeme, idf, prefix)),
        c AS MATERIALIZED (SELECT t.id, t.seq, t.tsv FROM {kind.table} t WHERE t.project = %s
              AND t.deleted_at IS NULL AND t.tsv @@ %s::tsquery{where}
              ORDER BY ({cheap}) / ({_K1} * {norm} + 1) DESC,
                  ts_rank(t.tsv, %s::tsquery, 0) DESC, t.seq LIMIT {int(pool)})
        SELECT c.id, sum(q.idf * u.tf * {_K1 + 1} /
            (u.tf + {_K1} * (1 - {_B} + {_B} * length(c.tsv) / %s::float8))) AS score
        FROM c CROSS JOIN LATERAL (SELECT lexeme, cardinality(positions)::float8 AS tf
                                   FROM unnest(c.tsv)) u
        JOIN q ON {join}
        GROUP BY c.id, c.seq ORDER BY score DESC, c.seq LIMIT {int(limit)}"""
    avg = max(avgdl, 1.0)
    args: list[Any] = [
        present,
        idf,
        [x in prefixed for x in present],
        project,
        match,
        *params,
        *cheap_args,
        avg,
        match,
        avg,
    ]
    rows = db.all(sql, args)
    return [(r["id"], float(r["score"])) for r in rows]
