"""The SQLite side of the work queues (:mod:`kgsearch.store.queues`): claims, texts
and vectors written row by row inside one write transaction.

SQLite serialises writers, so a claim reads the due rows and leases them in the same
transaction and no two runners ever take the same row; every change to vectors
advances the kind's epoch so that cached matrices are rebuilt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kgsearch.model import Kind
from kgsearch.store.queues import ClaimSql, EmbeddingQueueCore, TaskQueueCore
from kgsearch.store.records import EmbeddingResult, TextUpdate
from kgsearch.store.sqlite.reads import SQLiteReads
from kgsearch.store.sqlite.search import VectorCache
from kgsearch.store.sqlite.sql import chunked, now_iso, placeholders

__all__ = ["SQLiteQueues"]


class SQLiteQueues(SQLiteReads, EmbeddingQueueCore, TaskQueueCore):
    """The ``EmbeddingQueue`` and ``TaskQueue`` capabilities over SQLite."""

    vectors_cache: VectorCache

    def _claim_rows(self, claim: ClaimSql) -> list[Any]:
        with self.db.transaction():
            rows = self.db.all(
                f"SELECT rowid AS _r, {claim.columns} FROM {claim.table} WHERE {claim.due} "
                "ORDER BY rowid LIMIT ?",
                (*claim.params, claim.limit),
            )
            for part in chunked([r["_r"] for r in rows]):
                self.db.execute(
                    f"UPDATE {claim.table} SET {claim.lease} "
                    f"WHERE rowid IN ({placeholders(len(part))})",
                    (*claim.lease_params, *part),
                )
        return rows

    def _changed(self, kind: Kind, *, texts: bool) -> None:
        self.vectors_cache.touch(self.db, kind)

    def _vectors_forgotten(self) -> None:
        self.vectors_cache.clear()

    def _write_texts(self, project: str, kind: Kind, updates: Sequence[TextUpdate]) -> int:
        changed = 0
        for u in updates:
            changed += self.db.write(
                f"UPDATE {kind.table} SET "
                "status = CASE WHEN ? = embedded_hash AND vector IS NOT NULL "
                "THEN 'embedded' ELSE 'pending' END, attempts = 0, last_error = NULL, "
                "next_attempt_at = 0, text = ?, text_hash = ?, text_version = ? "
                "WHERE project = ? AND id = ? AND deleted_at IS NULL AND text_hash != ?",
                (u.text_hash, u.text, u.text_hash, u.text_version, project, u.id, u.text_hash),
            )
        return changed

    def _write_vectors(
        self, kind: Kind, results: Sequence[EmbeddingResult], model: str, dims: int
    ) -> set[tuple[str, str]]:
        stamp = now_iso()
        written: set[tuple[str, str]] = set()
        for r in results:
            if self.db.write(
                f"UPDATE {kind.table} SET status = 'embedded', vector = ?, "
                "embedded_text = ?, embedded_hash = ?, model = ?, dims = ?, embedded_at = ?, "
                "attempts = 0, last_error = NULL, next_attempt_at = 0, claimed_until = 0 "
                "WHERE project = ? AND id = ? AND text_hash = ? AND deleted_at IS NULL",
                (
                    np.asarray(r.vector, dtype=np.float32).tobytes(),
                    r.text,
                    r.text_hash,
                    model,
                    dims,
                    stamp,
                    r.project,
                    r.id,
                    r.text_hash,
                ),
            ):
                written.add((r.project, r.id))
        return written
