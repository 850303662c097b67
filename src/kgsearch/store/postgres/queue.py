"""The PostgreSQL side of the work queues (:mod:`kgsearch.store.queues`): claims with
``FOR UPDATE SKIP LOCKED``, texts and vectors written as arrays.

A claim takes due rows and stamps a lease in the same statement, so any number of
workers (threads or processes, on any machine) can claim at once without taking the
same row; a worker that dies leaves only a lease, which expires and makes its rows
claimable again. Text and vector batches go to the server as arrays (``unnest``),
one statement each.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from kgsearch.model import Kind
from kgsearch.store.postgres.lexical import LexicalStats
from kgsearch.store.postgres.reads import PostgresReads
from kgsearch.store.postgres.sql import clean
from kgsearch.store.queues import ClaimSql, EmbeddingQueueCore, TaskQueueCore
from kgsearch.store.records import EmbeddingResult, TextUpdate
from kgsearch.store.values import words

__all__ = ["PostgresQueues"]


class PostgresQueues(PostgresReads, EmbeddingQueueCore, TaskQueueCore):
    """The ``EmbeddingQueue`` and ``TaskQueue`` capabilities over PostgreSQL."""

    lexical: LexicalStats

    def _claim_rows(self, claim: ClaimSql) -> list[Any]:
        sql = self.dialect.sql
        with self.db.transaction():
            rows = self.db.all(
                sql(
                    f"UPDATE {claim.table} t SET {claim.lease} FROM (SELECT project, seq "
                    f"FROM {claim.table} WHERE {claim.due} ORDER BY seq LIMIT ? "
                    "FOR UPDATE SKIP LOCKED) due WHERE t.project = due.project "
                    f"AND t.seq = due.seq RETURNING t.seq, "
                    + ", ".join(f"t.{c.strip()}" for c in claim.columns.split(","))
                ),
                (*claim.lease_params, *claim.params, claim.limit),
            )
        rows.sort(key=lambda r: r["seq"])
        return rows

    def _changed(self, kind: Kind, *, texts: bool) -> None:
        # vector indexes live in the database; only the lexical statistics are cached
        if texts:
            self.lexical.clear()

    def _write_texts(self, project: str, kind: Kind, updates: Sequence[TextUpdate]) -> int:
        for update in updates:
            clean(update.text)
        rows = self.db.all(
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

    def _write_vectors(
        self, kind: Kind, results: Sequence[EmbeddingResult], model: str, dims: int
    ) -> set[tuple[str, str]]:
        done = self.db.all(
            f"""UPDATE {kind.table} t SET status = 'embedded', vector = u.vector::halfvec,
                embedded_text = u.text, embedded_hash = u.text_hash, model = %s,
                dims = %s, embedded_at = %s, attempts = 0, last_error = NULL,
                next_attempt_at = 0, claimed_until = 0
            FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::vector[])
                AS u(project, id, text, text_hash, vector)
            WHERE t.project = u.project AND t.id = u.id AND t.text_hash = u.text_hash
                AND t.deleted_at IS NULL
            RETURNING t.project, t.id""",
            (
                model,
                dims,
                datetime.now(UTC),
                [r.project for r in results],
                [r.id for r in results],
                [r.text for r in results],
                [r.text_hash for r in results],
                [np.asarray(r.vector, dtype=np.float32) for r in results],
            ),
        )
        return {(r["project"], r["id"]) for r in done}
