"""The embedding queue of the SQLite store: texts, claims, vectors, failures, counts.

:class:`SQLiteEmbeddingQueue` is the ``EmbeddingQueue`` slice of
:class:`~kgsearch.store.sqlite.store.SQLiteStore`. Every state change runs in one
write transaction of the store's connection (SQLite serialises writers, so two
runners can never claim the same row), and every change to vectors advances the
kind's epoch so that cached matrices are rebuilt.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from kgsearch.model import Kind
from kgsearch.store.common import (
    TEXT_ROW_KINDS,
    batched,
    embedding_counts,
    project_scope,
    retry_state,
)
from kgsearch.store.counts import LATENCY_SQL, embedding_counts_sql
from kgsearch.store.records import Claim, EmbeddingCounts, EmbeddingResult, TextUpdate
from kgsearch.store.sqlite.reads import SQLiteReads
from kgsearch.store.sqlite.search import VectorCache
from kgsearch.store.sqlite.sql import chunked, now_iso, placeholders

__all__ = ["SQLiteEmbeddingQueue"]


class SQLiteEmbeddingQueue(SQLiteReads):
    """The ``EmbeddingQueue`` capability over SQLite."""

    vectors_cache: VectorCache

    def set_texts(self, project: str, kind: Kind, updates: Sequence[TextUpdate]) -> int:
        """Store recomputed texts; a changed hash makes the row pending (or embedded again
        when it returns to the text that was embedded). Returns rows whose hash changed."""
        changed = 0
        with self.db.transaction():
            for update in updates:
                cur = self.db.execute(
                    f"UPDATE {kind.table} SET "
                    "status = CASE WHEN ? = embedded_hash AND vector IS NOT NULL "
                    "THEN 'embedded' ELSE 'pending' END, attempts = 0, last_error = NULL, "
                    "next_attempt_at = 0, text = ?, text_hash = ?, text_version = ? "
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
            if changed:
                self.vectors_cache.touch(self.db, kind)
        return changed

    def iter_text_rows(self, project: str, kind: Kind) -> Iterator[list[Any]]:
        """Batches of live rows of a kind (decoded models), to recompute their texts.
        Community reports have none: their build writes their text."""
        row_kind = TEXT_ROW_KINDS.get(kind)
        if row_kind is not None:
            yield from batched(self.iter_rows(project, row_kind))

    def claim(
        self,
        kind: Kind,
        *,
        project: str | None,
        limit: int,
        now: float,
        lease_seconds: float = 300.0,
    ) -> list[Claim]:
        """Claim up to ``limit`` due rows (pending, or failed whose backoff has passed,
        and not leased) under a lease of ``lease_seconds``."""
        scope, params = project_scope(project, "?")
        with self.db.transaction():
            rows = self.db.all(
                f"SELECT rowid AS r, project, id, text, text_hash, attempts FROM {kind.table} "
                "WHERE status IN ('pending', 'failed') AND next_attempt_at <= ? "
                f"AND claimed_until <= ? AND deleted_at IS NULL {scope} ORDER BY rowid LIMIT ?",
                (now, now, *params, limit),
            )
            for part in chunked([r["r"] for r in rows]):
                self.db.execute(
                    f"UPDATE {kind.table} SET claimed_until = ? "
                    f"WHERE rowid IN ({placeholders(len(part))})",
                    (now + lease_seconds, *part),
                )
        return [
            Claim(r["project"], r["id"], r["text"], r["text_hash"], r["attempts"]) for r in rows
        ]

    def complete(
        self,
        kind: Kind,
        results: Sequence[EmbeddingResult],
        *,
        model: str,
        dims: int,
        text_version: int,
        elapsed_ms: float,
        record_stats: bool = True,
    ) -> int:
        """Write vectors for rows whose text is unchanged since the claim; release the
        rest (they stay pending for their new text)."""
        stamp = now_iso()
        done = 0
        with self.db.transaction():
            for result in results:
                vector = np.asarray(result.vector, dtype=np.float32)
                cur = self.db.execute(
                    f"UPDATE {kind.table} SET status = 'embedded', vector = ?, "
                    "embedded_text = ?, embedded_hash = ?, model = ?, dims = ?, embedded_at = ?, "
                    "attempts = 0, last_error = NULL, next_attempt_at = 0, claimed_until = 0 "
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
                    self.db.execute(
                        f"UPDATE {kind.table} SET claimed_until = 0 WHERE project = ? AND id = ?",
                        (result.project, result.id),
                    )
            if record_stats:
                self.db.execute(
                    "INSERT INTO embed_stats (kind, texts, ms) VALUES (?, ?, ?) "
                    "ON CONFLICT(kind) DO UPDATE SET texts = texts + excluded.texts, "
                    "ms = ms + excluded.ms",
                    (kind.value, len(results), elapsed_ms),
                )
            self.vectors_cache.touch(self.db, kind)
        return done

    def fail(
        self,
        kind: Kind,
        claims: Sequence[Claim],
        error: str,
        *,
        now: float,
        max_attempts: int,
        backoff_seconds: float,
    ) -> None:
        """Count a failed attempt: exponential backoff, then ``dead`` after ``max_attempts``.

        Only pending and failed rows are touched: a runner whose lease expired must not
        downgrade a row that another runner has embedded meanwhile."""
        message = error[:2000]
        with self.db.transaction():
            for item in claims:
                status, attempts, due = retry_state(
                    item.attempts,
                    now=now,
                    max_attempts=max_attempts,
                    backoff_seconds=backoff_seconds,
                )
                self.db.execute(
                    f"UPDATE {kind.table} SET status = ?, attempts = ?, last_error = ?, "
                    "next_attempt_at = ?, claimed_until = 0 WHERE project = ? AND id = ? "
                    "AND text_hash = ? AND status IN ('pending', 'failed')",
                    (status, attempts, message, due, item.project, item.id, item.text_hash),
                )

    def requeue(self, kind: Kind, *, project: str | None, statuses: Sequence[str]) -> int:
        """Make rows in ``statuses`` pending again with attempts reset; return how many."""
        if not statuses:
            return 0
        scope, params = project_scope(project, "?")
        with self.db.transaction():
            cur = self.db.execute(
                f"UPDATE {kind.table} SET status = 'pending', attempts = 0, last_error = NULL, "
                "next_attempt_at = 0, claimed_until = 0 "
                f"WHERE status IN ({placeholders(len(statuses))}) AND deleted_at IS NULL {scope}",
                (*statuses, *params),
            )
            self.vectors_cache.touch(self.db, kind)
        return cur.rowcount

    def next_retry_at(self, kind: Kind, *, project: str | None) -> float | None:
        """When the next not-yet-due row becomes claimable: a failed row's backoff ends or
        another runner's lease expires (a runner killed mid-batch leaves such leases)."""
        scope, params = project_scope(project, "?")
        row = self.db.one(
            "SELECT min(CASE WHEN claimed_until > next_attempt_at THEN claimed_until "
            f"ELSE next_attempt_at END) FROM {kind.table} WHERE status IN ('pending', 'failed') "
            f"AND deleted_at IS NULL {scope}",
            params,
        )
        return None if row is None or row[0] is None else float(row[0])

    def embedding_counts(self, project: str | None) -> list[EmbeddingCounts]:
        """Rows by status per project and kind; stale = rows whose vector is of an old
        text."""
        scope, params = project_scope(project, "?")
        return embedding_counts(
            (kind, row)
            for kind in Kind
            for row in self.db.all(embedding_counts_sql(kind.table, scope), params)
        )

    def embedding_latency(self) -> tuple[int, float]:
        """(texts embedded, total milliseconds) recorded by :meth:`complete`."""
        row = self.db.one(LATENCY_SQL)
        return (int(row[0]), float(row[1])) if row else (0, 0.0)

    def _forget_vectors(self) -> None:
        """Forget every vector (an explicit model migration re-embeds everything);
        call inside the transaction that records the new model."""
        for kind in Kind:
            self.db.execute(
                f"UPDATE {kind.table} SET status = 'pending', attempts = 0, last_error = NULL, "
                "next_attempt_at = 0, claimed_until = 0, vector = NULL, embedded_hash = NULL, "
                "embedded_text = NULL, model = NULL, dims = NULL, embedded_at = NULL"
            )
        self.vectors_cache.clear()
