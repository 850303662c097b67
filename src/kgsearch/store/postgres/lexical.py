"""BM25 for the PostgreSQL store, scored like SQLite FTS5's.

PostgreSQL's ``ts_rank`` is not BM25 (no inverse document frequency), so the score is
computed in SQL here with the same formula as SQLite FTS5 (k1 = 1.2, b = 0.75): the
query's lexemes come from ``to_tsvector('kgsearch', …)`` (:func:`lexemes`), term
frequencies from the stored ``tsvector``'s positions, document lengths as its lexeme
count, and document frequencies from the GIN index, cached per project and kind by
:class:`LexicalStats` (:func:`bm25` scores the rows one ``tsquery`` matches).
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from kgsearch.model import Filters, Kind
from kgsearch.store.postgres.connection import Connection
from kgsearch.store.postgres.sql import filter_sql, tsquery

__all__ = ["LexicalStats", "bm25", "lexemes"]

_K1 = 1.2
_B = 0.75
# Cached frequencies are refreshed after this long; BM25 needs them only roughly.
_STATS_TTL_SECONDS = 300.0


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


def lexemes(db: Connection, stats: LexicalStats, terms: list[str]) -> list[str]:
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
