"""The counting behind ``stats`` and ``embed status``: one place for its SQL and sums.

The SQLite store (``store/sqlite/reads.py``, ``queue.py``, ``store.py``) counts with
these statements, and so does the CLI's read-only path
(:mod:`kgsearch.store.sqlite.readonly`), which answers ``kgsearch stats`` and
``kgsearch embed status`` without the engine. The figures of the embedding report
(percentages, failure rate, mean latency) are summed here once too
(:func:`status_figures`), for ``EmbeddingStatusReport`` and for the read-only path.

Standard library only on purpose (no pydantic, no numpy): importing this module is
part of a light command's start-up. Placeholders are SQLite's (``?``); PostgreSQL
shares :data:`PROJECTS_SQL`, :data:`LATENCY_SQL` and :func:`embedding_counts_sql`
(through :meth:`~kgsearch.store.dialect.Dialect.sql`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

__all__ = [
    "COUNTED_TABLES",
    "EMBEDDED_TABLES",
    "LATENCY_SQL",
    "MENTIONS_SQL",
    "META_SQL",
    "MIGRATIONS_SQL",
    "PROJECTS_SQL",
    "Rows",
    "embedding_counts_sql",
    "group_counts",
    "live_count_sql",
    "live_counts",
    "not_embedded_sql",
    "status_figures",
]

Rows = Callable[[str, Sequence[Any]], list[Any]]
"""Run a statement with its parameters and return every row (``Connection.all``)."""

PROJECTS_SQL = (
    "SELECT project FROM objects WHERE deleted_at IS NULL UNION "
    "SELECT project FROM relationships WHERE deleted_at IS NULL UNION "
    "SELECT project FROM chunks WHERE deleted_at IS NULL UNION "
    "SELECT project FROM sources WHERE deleted_at IS NULL ORDER BY 1"
)
"""Projects that hold any live row (both stores)."""

COUNTED_TABLES = ("objects", "relationships", "chunks", "sources")
"""The tables whose live rows ``stats`` counts, in its order (mentions come last)."""

EMBEDDED_TABLES: tuple[tuple[str, str], ...] = (
    ("object", "objects"),
    ("relationship", "relationships"),
    ("chunk", "chunks"),
    ("community", "community_reports"),
)
"""Each embeddable kind (``Kind``'s value, in its order) and its table."""

MENTIONS_SQL = "SELECT count(*) FROM mentions WHERE project = ?"
MIGRATIONS_SQL = "SELECT name FROM migrations ORDER BY name"
META_SQL = "SELECT value FROM meta WHERE key = ?"
LATENCY_SQL = "SELECT coalesce(sum(texts), 0) AS n, coalesce(sum(ms), 0) AS ms FROM embed_stats"


def live_count_sql(table: str) -> str:
    """Count a project's live rows of ``table`` (one parameter: the project)."""
    return f"SELECT count(*) FROM {table} WHERE project = ? AND deleted_at IS NULL"


def embedding_counts_sql(table: str, scope: str) -> str:
    """Rows of ``table`` by project and status, with their stale count (a vector of
    an old text); ``scope`` is empty or `` AND project = ?``."""
    return (
        "SELECT project, status, count(*) AS n, "
        "sum(CASE WHEN embedded_hash IS NOT NULL AND embedded_hash != text_hash "
        f"THEN 1 ELSE 0 END) AS stale FROM {table} WHERE deleted_at IS NULL {scope} "
        "GROUP BY project, status ORDER BY project, status"
    )


def not_embedded_sql(table: str) -> str:
    """Count a project's live rows of ``table`` without a vector: pending, failed or
    dead (one parameter: the project). ``project || ''`` keeps the planner on the
    status index (few such rows) rather than the project's (all of its rows)."""
    return (
        f"SELECT count(*) AS n FROM {table} WHERE status IN ('pending', 'failed', 'dead') "
        "AND project || '' = ? AND deleted_at IS NULL"
    )


def group_counts(
    rows: Iterable[tuple[str, Any]],
) -> list[tuple[str, str, dict[str, int], int]]:
    """Counts per project and kind from (kind's value, row) pairs, each row holding a
    project, a status, its count ``n`` and its ``stale`` count (the rows of
    :func:`embedding_counts_sql`): the project, the kind, its rows by status and its
    stale rows, ordered by project, then kind."""
    result: dict[tuple[str, str], tuple[dict[str, int], list[int]]] = {}
    for kind, row in rows:
        by_status, stale = result.setdefault((row["project"], kind), ({}, [0]))
        by_status[row["status"]] = int(row["n"])
        stale[0] += int(row["stale"] or 0)
    return [(p, k, result[p, k][0], result[p, k][1][0]) for p, k in sorted(result)]


def live_counts(rows: Rows, project: str) -> dict[str, int]:
    """Live rows per kind of a project, and its mention links."""
    result = {}
    for table in COUNTED_TABLES:
        found = rows(live_count_sql(table), (project,))
        result[table] = int(found[0][0]) if found else 0
    found = rows(MENTIONS_SQL, (project,))
    result["mentions"] = int(found[0][0]) if found else 0
    return result


def status_figures(
    counts: Iterable[tuple[str, str, dict[str, int], int]],
    latency: tuple[int, float],
    model: str | None,
    dims: int | None,
) -> dict[str, Any]:
    """The embedding report as plain values (the fields of ``EmbeddingStatusReport``).

    Args:
        counts: Per project and kind (ordered): the project, the kind's value, its
            rows by status and its stale rows.
        latency: Texts embedded and their total milliseconds.
        model: The store's embedding model.
        dims: Its dimensions.
    """
    rows = []
    totals: dict[str, int] = {}
    stale = 0
    for project, kind, by_status, kind_stale in counts:
        total = sum(by_status.values())
        embedded = by_status.get("embedded", 0)
        wanted = total - by_status.get("skipped", 0)
        rows.append(
            {
                "project": project,
                "kind": kind,
                "total": total,
                "pending": by_status.get("pending", 0),
                "embedded": embedded,
                "failed": by_status.get("failed", 0),
                "dead": by_status.get("dead", 0),
                "stale": kind_stale,
                "percent_embedded": round(100.0 * embedded / wanted, 2) if wanted else 100.0,
                "skipped": by_status.get("skipped", 0),
            }
        )
        for status, n in by_status.items():
            totals[status] = totals.get(status, 0) + n
        stale += kind_stale
    total = sum(totals.values())
    wanted = total - totals.get("skipped", 0)
    texts, ms = latency
    bad = totals.get("failed", 0) + totals.get("dead", 0)
    return {
        "model": model,
        "dims": dims,
        "rows": rows,
        "total": total,
        "embedded": totals.get("embedded", 0),
        "pending": totals.get("pending", 0),
        "failed": totals.get("failed", 0),
        "dead": totals.get("dead", 0),
        "stale": stale,
        "percent_embedded": (
            round(100.0 * totals.get("embedded", 0) / wanted, 2) if wanted else 100.0
        ),
        "failure_rate": round(bad / total, 4) if total else 0.0,
        # in EmbeddingStatusReport's field order: the light CLI prints this dict as it is
        "skipped": totals.get("skipped", 0),
        "mean_latency_ms_per_text": round(ms / texts, 3) if texts else None,
    }
