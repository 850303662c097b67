"""Embedding-lifecycle primitives over PostgreSQL.

``claim`` takes due rows with ``FOR UPDATE SKIP LOCKED`` and stamps a lease in the
same statement, so any number of workers (threads or processes, on any machine) can
claim at once without taking the same row; a worker that dies leaves only a lease,
which expires after ``lease_seconds`` and makes its rows claimable again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from kgsearch.model import EmbeddingStatus, Kind
from kgsearch.store.base import Claim, EmbeddingCounts, EmbeddingResult, TextUpdate
from kgsearch.store.postgres.connection import Connection
from kgsearch.store.values import words

__all__ = [
    "claim",
    "complete",
    "counts",
    "fail",
    "latency",
    "next_retry_at",
    "requeue",
    "reset_all",
    "set_texts",
]

_DUE = "status IN ('pending', 'failed') AND deleted_at IS NULL"


def set_texts(db: Connection, project: str, kind: Kind, updates: Sequence[TextUpdate]) -> int:
    """Store recomputed texts; see the SQLite store for the rules. Returns rows changed."""
    if not updates:
        return 0
    rows = db.all(
        f"""UPDATE {kind.table} t SET
            status = CASE WHEN u.text_hash = t.embedded_hash AND t.vector IS NOT NULL
                THEN 'embedded' ELSE 'pending' END,
            attempts = 0, last_error = NULL, next_attempt_at = 0,
            text = u.text, text_hash = u.text_hash, text_version = u.text_version,
            words = u.words
        FROM unnest(%s::text[], %s::text[], %s::text[], %s::int[], %s::text[])
            AS u(id, text, text_hash, text_version, words)
        WHERE t.project = %s AND t.id = u.id AND t.deleted_at IS NULL
            AND t.text_hash != u.text_hash
        RETURNING t.id""",
        (
            [u.id for u in updates],
            [u.text for u in updates],
            [u.text_hash for u in updates],
            [u.text_version for u in updates],
            [words(u.text) for u in updates],
            project,
        ),
    )
    return len(rows)


def claim(
    db: Connection, kind: Kind, project: str | None, limit: int, now: float, lease_seconds: float
) -> list[Claim]:
    """Claim due rows (pending, or failed past their backoff, and not leased)."""
    scope, params = ("AND project = %s", [project]) if project is not None else ("", [])
    rows = db.all(
        f"""UPDATE {kind.table} t SET claimed_until = %s
        FROM (SELECT seq FROM {kind.table} WHERE {_DUE} AND next_attempt_at <= %s
              AND claimed_until <= %s {scope}
              ORDER BY seq LIMIT %s FOR UPDATE SKIP LOCKED) due
        WHERE t.seq = due.seq
        RETURNING t.seq, t.project, t.id, t.text, t.text_hash, t.attempts""",
        (now + lease_seconds, now, now, *params, limit),
    )
    rows.sort(key=lambda r: r["seq"])
    return [Claim(r["project"], r["id"], r["text"], r["text_hash"], r["attempts"]) for r in rows]


def complete(
    db: Connection,
    kind: Kind,
    results: Sequence[EmbeddingResult],
    model: str,
    dims: int,
    elapsed_ms: float,
    record_stats: bool = True,
) -> int:
    """Write vectors for rows whose text is unchanged since the claim; release the rest."""
    if not results:
        return 0
    stamp = datetime.now(UTC)
    done = db.all(
        f"""UPDATE {kind.table} t SET status = 'embedded', vector = u.vector,
            embedded_text = u.text, embedded_hash = u.text_hash, model = %s, dims = %s,
            embedded_at = %s, attempts = 0, last_error = NULL, next_attempt_at = 0,
            claimed_until = 0
        FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::vector[])
            AS u(project, id, text, text_hash, vector)
        WHERE t.project = u.project AND t.id = u.id AND t.text_hash = u.text_hash
            AND t.deleted_at IS NULL
        RETURNING t.project, t.id""",
        (
            model,
            dims,
            stamp,
            [r.project for r in results],
            [r.id for r in results],
            [r.text for r in results],
            [r.text_hash for r in results],
            [np.asarray(r.vector, dtype=np.float32) for r in results],
        ),
    )
    written = {(r["project"], r["id"]) for r in done}
    stale = [r for r in results if (r.project, r.id) not in written]
    if stale:
        db.execute(
            f"UPDATE {kind.table} t SET claimed_until = 0 FROM unnest(%s::text[], %s::text[]) "
            "AS u(project, id) WHERE t.project = u.project AND t.id = u.id",
            ([r.project for r in stale], [r.id for r in stale]),
        )
    if not record_stats:
        return len(written)
    db.execute(
        "INSERT INTO embed_stats (kind, texts, ms) VALUES (%s, %s, %s) ON CONFLICT (kind) DO "
        "UPDATE SET texts = embed_stats.texts + excluded.texts, ms = embed_stats.ms + excluded.ms",
        (kind.value, len(results), elapsed_ms),
    )
    return len(written)


def fail(
    db: Connection,
    kind: Kind,
    claims: Sequence[Claim],
    error: str,
    now: float,
    max_attempts: int,
    backoff_seconds: float,
) -> None:
    """Count a failed attempt: exponential backoff, then ``dead`` after ``max_attempts``."""
    if not claims:
        return
    message = error[:2000].replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    statuses, attempts, due = [], [], []
    for item in claims:
        count = item.attempts + 1
        statuses.append(
            (EmbeddingStatus.DEAD if count >= max_attempts else EmbeddingStatus.FAILED).value
        )
        attempts.append(count)
        due.append(now + backoff_seconds * (2 ** (count - 1)))
    db.execute(
        f"""UPDATE {kind.table} t SET status = u.status, attempts = u.attempts,
            last_error = %s, next_attempt_at = u.due, claimed_until = 0
        FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::int[], %s::float8[])
            AS u(project, id, text_hash, status, attempts, due)
        WHERE t.project = u.project AND t.id = u.id AND t.text_hash = u.text_hash
            AND t.status IN ('pending', 'failed')""",
        (
            message,
            [c.project for c in claims],
            [c.id for c in claims],
            [c.text_hash for c in claims],
            statuses,
            attempts,
            due,
        ),
    )


def requeue(db: Connection, kind: Kind, project: str | None, statuses: Sequence[str]) -> int:
    """Make rows in ``statuses`` pending with attempts reset; return how many."""
    if not statuses:
        return 0
    scope, params = ("AND project = %s", [project]) if project is not None else ("", [])
    return db.execute(
        f"UPDATE {kind.table} SET status = 'pending', attempts = 0, last_error = NULL, "
        "next_attempt_at = 0, claimed_until = 0 WHERE status = ANY(%s) "
        f"AND deleted_at IS NULL {scope}",
        (list(statuses), *params),
    )


def reset_all(db: Connection, kind: Kind) -> None:
    """Forget every vector of a kind (an explicit model migration re-embeds everything)."""
    db.execute(
        f"UPDATE {kind.table} SET status = 'pending', attempts = 0, last_error = NULL, "
        "next_attempt_at = 0, claimed_until = 0, vector = NULL, embedded_hash = NULL, "
        "embedded_text = NULL, model = NULL, dims = NULL, embedded_at = NULL"
    )


def counts(db: Connection, project: str | None) -> list[EmbeddingCounts]:
    """Rows by status per project and kind; stale = rows whose vector is of an old text."""
    scope, params = ("AND project = %s", [project]) if project is not None else ("", [])
    result: dict[tuple[str, Kind], EmbeddingCounts] = {}
    for kind in Kind:
        for row in db.all(
            f"SELECT project, status, count(*) AS n, "
            f"count(*) FILTER (WHERE embedded_hash IS NOT NULL AND embedded_hash != text_hash) "
            f"AS stale FROM {kind.table} WHERE deleted_at IS NULL {scope} "
            "GROUP BY project, status ORDER BY project, status",
            params,
        ):
            entry = result.setdefault(
                (row["project"], kind), EmbeddingCounts(project=row["project"], kind=kind)
            )
            entry.by_status[row["status"]] = int(row["n"])
            entry.stale += int(row["stale"] or 0)
    return [result[key] for key in sorted(result, key=lambda k: (k[0], k[1].value))]


def latency(db: Connection) -> tuple[int, float]:
    """(texts embedded, total milliseconds) over all kinds."""
    row = db.one("SELECT coalesce(sum(texts), 0) AS n, coalesce(sum(ms), 0) AS ms FROM embed_stats")
    return (int(row["n"]), float(row["ms"])) if row else (0, 0.0)


def next_retry_at(db: Connection, kind: Kind, project: str | None) -> float | None:
    """When the next not-yet-due row becomes claimable (backoff ends or a lease expires)."""
    scope, params = ("AND project = %s", [project]) if project is not None else ("", [])
    row = db.one(
        f"SELECT min(greatest(claimed_until, next_attempt_at)) AS at FROM {kind.table} "
        f"WHERE {_DUE} {scope}",
        params,
    )
    return None if row is None or row["at"] is None else float(row["at"])
