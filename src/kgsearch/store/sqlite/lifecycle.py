"""Embedding-lifecycle primitives over SQLite: claim, complete, fail, requeue, count.

Callers hold the write transaction; these functions only issue statements.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kgsearch.model import EmbeddingStatus, Kind
from kgsearch.store.base import Claim, EmbeddingCounts, EmbeddingResult, TextUpdate
from kgsearch.store.sqlite.connection import Connection
from kgsearch.store.sqlite.sql import chunked, now_iso, placeholders

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


def set_texts(db: Connection, project: str, kind: Kind, updates: Sequence[TextUpdate]) -> int:
    """Store recomputed texts; a changed hash makes the row pending (or embedded again
    when it returns to the text that was embedded). Returns rows whose hash changed."""
    table = kind.table
    changed = 0
    for update in updates:
        cur = db.execute(
            f"UPDATE {table} SET "
            "status = CASE WHEN ? = embedded_hash AND vector IS NOT NULL THEN 'embedded' "
            "ELSE 'pending' END, attempts = 0, last_error = NULL, next_attempt_at = 0, "
            "text = ?, text_hash = ?, text_version = ? "
            "WHERE project = ? AND id = ? AND deleted_at IS NULL AND text_hash != ?",
            (
                update.text_hash,
                update.text,
                update.text_hash,
                update.text_version,
                project,
                update.id,
                update.text_hash,
            ),
        )
        changed += cur.rowcount
    return changed


def claim(
    db: Connection, kind: Kind, project: str | None, limit: int, now: float, lease_seconds: float
) -> list[Claim]:
    """Claim due rows: pending, or failed whose backoff has passed, and not leased."""
    scope, params = ("AND project = ?", [project]) if project is not None else ("", [])
    rows = db.all(
        f"SELECT rowid AS r, project, id, text, text_hash, attempts FROM {kind.table} "
        "WHERE status IN ('pending', 'failed') AND next_attempt_at <= ? AND claimed_until <= ? "
        f"AND deleted_at IS NULL {scope} ORDER BY rowid LIMIT ?",
        (now, now, *params, limit),
    )
    for part in chunked([r["r"] for r in rows]):
        db.execute(
            f"UPDATE {kind.table} SET claimed_until = ? WHERE rowid IN ({placeholders(len(part))})",
            (now + lease_seconds, *part),
        )
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
    stamp = now_iso()
    done = 0
    for result in results:
        vector = np.asarray(result.vector, dtype=np.float32)
        cur = db.execute(
            f"UPDATE {kind.table} SET status = 'embedded', vector = ?, embedded_text = ?, "
            "embedded_hash = ?, model = ?, dims = ?, embedded_at = ?, attempts = 0, "
            "last_error = NULL, next_attempt_at = 0, claimed_until = 0 "
            "WHERE project = ? AND id = ? AND text_hash = ? AND deleted_at IS NULL",
            (
                vector.tobytes(),
                result.text,
                result.text_hash,
                model,
                dims,
                stamp,
                result.project,
                result.id,
                result.text_hash,
            ),
        )
        if cur.rowcount:
            done += 1
        else:
            db.execute(
                f"UPDATE {kind.table} SET claimed_until = 0 WHERE project = ? AND id = ?",
                (result.project, result.id),
            )
    if not record_stats:
        return done
    db.execute(
        "INSERT INTO embed_stats (kind, texts, ms) VALUES (?, ?, ?) ON CONFLICT(kind) DO "
        "UPDATE SET texts = texts + excluded.texts, ms = ms + excluded.ms",
        (kind.value, len(results), elapsed_ms),
    )
    return done


def fail(
    db: Connection,
    kind: Kind,
    claims: Sequence[Claim],
    error: str,
    now: float,
    max_attempts: int,
    backoff_seconds: float,
) -> None:
    """Count a failed attempt: exponential backoff, then ``dead`` after ``max_attempts``.

    Only pending and failed rows are touched: a runner whose lease expired must not
    downgrade a row that another runner has embedded meanwhile."""
    message = error[:2000]
    for item in claims:
        attempts = item.attempts + 1
        status = EmbeddingStatus.DEAD if attempts >= max_attempts else EmbeddingStatus.FAILED
        due = now + backoff_seconds * (2 ** (attempts - 1))
        db.execute(
            f"UPDATE {kind.table} SET status = ?, attempts = ?, last_error = ?, "
            "next_attempt_at = ?, claimed_until = 0 "
            "WHERE project = ? AND id = ? AND text_hash = ? AND status IN ('pending', 'failed')",
            (status.value, attempts, message, due, item.project, item.id, item.text_hash),
        )


def requeue(db: Connection, kind: Kind, project: str | None, statuses: Sequence[str]) -> int:
    """Make rows in ``statuses`` pending with attempts reset; return how many."""
    if not statuses:
        return 0
    scope, params = ("AND project = ?", [project]) if project is not None else ("", [])
    cur = db.execute(
        f"UPDATE {kind.table} SET status = 'pending', attempts = 0, last_error = NULL, "
        f"next_attempt_at = 0, claimed_until = 0 WHERE status IN ({placeholders(len(statuses))}) "
        f"AND deleted_at IS NULL {scope}",
        (*statuses, *params),
    )
    return cur.rowcount


def reset_all(db: Connection, kind: Kind) -> None:
    """Forget every vector of a kind (an explicit model migration re-embeds everything)."""
    db.execute(
        f"UPDATE {kind.table} SET status = 'pending', attempts = 0, last_error = NULL, "
        "next_attempt_at = 0, claimed_until = 0, vector = NULL, embedded_hash = NULL, "
        "embedded_text = NULL, model = NULL, dims = NULL, embedded_at = NULL"
    )


def counts(db: Connection, project: str | None) -> list[EmbeddingCounts]:
    """Rows by status per project and kind; stale = pending rows that had a vector."""
    scope, params = ("AND project = ?", [project]) if project is not None else ("", [])
    result: dict[tuple[str, Kind], EmbeddingCounts] = {}
    for kind in Kind:
        for row in db.all(
            f"SELECT project, status, count(*) AS n, "
            f"sum(CASE WHEN embedded_hash IS NOT NULL AND embedded_hash != text_hash "
            f"THEN 1 ELSE 0 END) AS stale FROM {kind.table} WHERE deleted_at IS NULL {scope} "
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
    row = db.one("SELECT coalesce(sum(texts), 0), coalesce(sum(ms), 0) FROM embed_stats")
    return (int(row[0]), float(row[1])) if row else (0, 0.0)


def next_retry_at(db: Connection, kind: Kind, project: str | None) -> float | None:
    """When the next not-yet-due row becomes claimable: a failed row's backoff ends or
    another runner's lease expires (a runner killed mid-batch leaves such leases)."""
    scope, params = ("AND project = ?", [project]) if project is not None else ("", [])
    row = db.one(
        "SELECT min(CASE WHEN claimed_until > next_attempt_at THEN claimed_until "
        f"ELSE next_attempt_at END) FROM {kind.table} WHERE status IN ('pending', 'failed') "
        f"AND deleted_at IS NULL {scope}",
        params,
    )
    return None if row is None or row[0] is None else float(row[0])
