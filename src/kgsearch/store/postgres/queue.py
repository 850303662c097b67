"""The PostgreSQL side of the work queues (:mod:`kgsearch.store.queues`): claims with
``FOR UPDATE SKIP LOCKED``, texts and vectors written as arrays.

A claim takes due rows and stamps a lease in the same statement, so any number of
workers (threads or processes, on any machine) can claim at once without taking the
same row; a worker that dies leaves only a lease, which expires and makes its rows
claimable again. Text and vector batches go to the server as arrays (``unnest``),
one statement each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from kgsearch.model import Kind
from kgsearch.store.postgres.citus import shard_groups
from kgsearch.store.postgres.lexical import LexicalStats
from kgsearch.store.postgres.reads import PostgresReads
from kgsearch.store.postgres.sql import clean
from kgsearch.store.queues import ClaimSql, EmbeddingQueueCore, TaskQueueCore
from kgsearch.store.records import EmbeddingResult, TextUpdate
from kgsearch.store.values import words

__all__ = ["PostgresQueues"]


# A claim on a spread table reads this many times its limit of due rows, up to
# _SPREAD_READS times while other workers claim all of them first.
_SPREAD_CANDIDATES = 4
_SPREAD_READS = 5


def _claim_sql(sql: Callable[[str], str], claim: ClaimSql, inner: str, outer: str = "") -> str:
    """A claim statement: due rows (and ``inner``) locked with ``SKIP LOCKED``, leased."""
    return sql(
        f"UPDATE {claim.table} t SET {claim.lease} FROM (SELECT project, seq "
        f"FROM {claim.table} WHERE {claim.due}{inner} ORDER BY seq LIMIT ? "
        f"FOR UPDATE SKIP LOCKED) due WHERE t.project = due.project AND t.seq = due.seq{outer} "
        "RETURNING t.seq, " + ", ".join(f"t.{c.strip()}" for c in claim.columns.split(","))
    )


def _claim_params(claim: ClaimSql, ids: list[str] | None = None) -> tuple[Any, ...]:
    """The parameters of :func:`_claim_sql` (with the ids of a shard's claim twice)."""
    if ids is None:
        return (*claim.lease_params, *claim.params, claim.limit)
    return (*claim.lease_params, *claim.params, ids, claim.limit, ids)


class PostgresQueues(PostgresReads, EmbeddingQueueCore, TaskQueueCore):
    """The ``EmbeddingQueue`` and ``TaskQueue`` capabilities over PostgreSQL."""

    lexical: LexicalStats

    def _claim_rows(self, claim: ClaimSql) -> list[Any]:
        if claim.table in self.spread:
            return self._claim_spread(claim)
        with self.db.transaction():
            rows = self.db.all(_claim_sql(self.dialect.sql, claim, ""), _claim_params(claim))
        rows.sort(key=lambda r: r["seq"])
        return rows

    def _claim_spread(self, claim: ClaimSql) -> list[Any]:
        """A claim on a spread table (Citus refuses ``FOR UPDATE`` across shards): the
        oldest due rows are read without locks, then claimed shard by shard, each a
        router claim with ``SKIP LOCKED`` that checks again that its rows are due. A
        read whose rows other workers all took first is made again (a few times)."""
        sql = self.dialect.sql
        rows: list[Any] = []
        for _ in range(_SPREAD_READS):
            due = self.db.all(
                sql(f"SELECT id FROM {claim.table} WHERE {claim.due} ORDER BY seq LIMIT ?"),
                (*claim.params, claim.limit * _SPREAD_CANDIDATES),
            )
            if not due:
                break
            for ids in shard_groups(self.db, claim.table, [r["id"] for r in due]):
                wanted = claim.limit - len(rows)
                if wanted <= 0:
                    break
                with self.db.transaction():
                    rows += self.db.all(
                        _claim_sql(sql, claim, " AND id = ANY(?)", " AND t.id = ANY(?)"),
                        _claim_params(claim._replace(limit=wanted), ids),
                    )
            if rows:
                break
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
