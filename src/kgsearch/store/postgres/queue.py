"""The embedding queue of the PostgreSQL store: texts, claims, vectors, failures, counts.

:class:`PostgresEmbeddingQueue` is the ``EmbeddingQueue`` slice of
:class:`~kgsearch.store.postgres.store.PostgresStore`. ``claim`` takes due rows with
``FOR UPDATE SKIP LOCKED`` and stamps a lease in the same statement, so any number of
workers (threads or processes, on any machine) can claim at once without taking the
same row; a worker that dies leaves only a lease, which expires after
``lease_seconds`` and makes its rows claimable again. Batches go to the server as
arrays (``unnest``), one statement each.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from kgsearch.model import Kind
from kgsearch.store.common import (
    TEXT_ROW_KINDS,
    batched,
    embedding_counts,
    error_text,
    project_scope,
    retry_state,
)
from kgsearch.store.postgres.citus import claim_each_project
from kgsearch.store.postgres.lexical import LexicalStats
from kgsearch.store.postgres.reads import PostgresReads
from kgsearch.store.postgres.sql import clean
from kgsearch.store.records import Claim, EmbeddingCounts, EmbeddingResult, TextUpdate
from kgsearch.store.values import words

__all__ = ["PostgresEmbeddingQueue"]

_DUE = "status IN ('pending', 'failed') AND deleted_at IS NULL"


class PostgresEmbeddingQueue(PostgresReads):
    """The ``EmbeddingQueue`` capability over PostgreSQL."""

    lexical: LexicalStats
    citus: bool = False  # the store is laid out on Citus (store/postgres/citus.py)

    def set_texts(self, project: str, kind: Kind, updates: Sequence[TextUpdate]) -> int:
        """Store recomputed texts; a changed hash makes the row pending (or embedded again
        when it returns to the text that was embedded). Returns rows whose hash changed."""
        for update in updates:
            clean(update.text)
        if not updates:
            return 0
        with self.db.transaction():
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
            self.lexical.clear()
        return len(rows)

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
        """Claim up to ``limit`` due rows (pending, or failed past their backoff, and not
        leased) under a lease; concurrent claimers never get the same row."""
        if project is None and self.citus:
            return claim_each_project(
                self.db,
                kind.table,
                (f"{_DUE} AND next_attempt_at <= %s AND claimed_until <= %s", (now, now)),
                limit,
                lambda p, n: self.claim(
                    kind, project=p, limit=n, now=now, lease_seconds=lease_seconds
                ),
            )
        scope, params = project_scope(project, "%s")
        with self.db.transaction():
            rows = self.db.all(
                f"""UPDATE {kind.table} t SET claimed_until = %s
                FROM (SELECT project, seq FROM {kind.table} WHERE {_DUE} AND next_attempt_at <= %s
                      AND claimed_until <= %s {scope}
                      ORDER BY seq LIMIT %s FOR UPDATE SKIP LOCKED) due
                WHERE t.project = due.project AND t.seq = due.seq
                RETURNING t.seq, t.project, t.id, t.text, t.text_hash, t.attempts""",
                (now + lease_seconds, now, now, *params, limit),
            )
        rows.sort(key=lambda r: r["seq"])
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
        if not results:
            return 0
        with self.db.transaction():
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
            written = {(r["project"], r["id"]) for r in done}
            stale = [r for r in results if (r.project, r.id) not in written]
            if stale:
                self.db.execute(
                    f"UPDATE {kind.table} t SET claimed_until = 0 "
                    "FROM unnest(%s::text[], %s::text[]) AS u(project, id) "
                    "WHERE t.project = u.project AND t.id = u.id",
                    ([r.project for r in stale], [r.id for r in stale]),
                )
            if record_stats:
                self.db.execute(
                    "INSERT INTO embed_stats (kind, texts, ms) VALUES (%s, %s, %s) "
                    "ON CONFLICT (kind) DO UPDATE SET texts = embed_stats.texts + "
                    "excluded.texts, ms = embed_stats.ms + excluded.ms",
                    (kind.value, len(results), elapsed_ms),
                )
        return len(written)

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
        if not claims:
            return
        states = [
            retry_state(
                c.attempts, now=now, max_attempts=max_attempts, backoff_seconds=backoff_seconds
            )
            for c in claims
        ]
        with self.db.transaction():
            self.db.execute(
                f"""UPDATE {kind.table} t SET status = u.status, attempts = u.attempts,
                    last_error = %s, next_attempt_at = u.due, claimed_until = 0
                FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::int[],
                            %s::float8[]) AS u(project, id, text_hash, status, attempts, due)
                WHERE t.project = u.project AND t.id = u.id AND t.text_hash = u.text_hash
                    AND t.status IN ('pending', 'failed')""",
                (
                    error_text(error[:2000]),
                    [c.project for c in claims],
                    [c.id for c in claims],
                    [c.text_hash for c in claims],
                    [s[0] for s in states],
                    [s[1] for s in states],
                    [s[2] for s in states],
                ),
            )

    def requeue(self, kind: Kind, *, project: str | None, statuses: Sequence[str]) -> int:
        """Make rows in ``statuses`` pending again with attempts reset; return how many."""
        if not statuses:
            return 0
        scope, params = project_scope(project, "%s")
        with self.db.transaction():
            return self.db.execute(
                f"UPDATE {kind.table} SET status = 'pending', attempts = 0, last_error = NULL, "
                "next_attempt_at = 0, claimed_until = 0 WHERE status = ANY(%s) "
                f"AND deleted_at IS NULL {scope}",
                (list(statuses), *params),
            )

    def next_retry_at(self, kind: Kind, *, project: str | None) -> float | None:
        """When the next not-yet-due row becomes claimable (backoff ends or a lease
        expires)."""
        scope, params = project_scope(project, "%s")
        row = self.db.one(
            f"SELECT min(greatest(claimed_until, next_attempt_at)) AS at FROM {kind.table} "
            f"WHERE {_DUE} {scope}",
            params,
        )
        return None if row is None or row["at"] is None else float(row["at"])

    def embedding_counts(self, project: str | None) -> list[EmbeddingCounts]:
        """Rows by status per project and kind; stale = rows whose vector is of an old
        text."""
        scope, params = project_scope(project, "%s")
        return embedding_counts(
            (kind, row)
            for kind in Kind
            for row in self.db.all(
                f"SELECT project, status, count(*) AS n, count(*) FILTER (WHERE embedded_hash "
                f"IS NOT NULL AND embedded_hash != text_hash) AS stale FROM {kind.table} "
                f"WHERE deleted_at IS NULL {scope} "
                "GROUP BY project, status ORDER BY project, status",
                params,
            )
        )

    def embedding_latency(self) -> tuple[int, float]:
        """(texts embedded, total milliseconds) recorded by :meth:`complete`."""
        row = self.db.one(
            "SELECT coalesce(sum(texts), 0) AS n, coalesce(sum(ms), 0) AS ms FROM embed_stats"
        )
        return (int(row["n"]), float(row["ms"])) if row else (0, 0.0)

    def _forget_vectors(self) -> None:
        """Forget every vector (an explicit model migration re-embeds everything);
        call inside the transaction that records the new model."""
        for kind in Kind:
            self.db.execute(
                f"UPDATE {kind.table} SET status = 'pending', attempts = 0, last_error = NULL, "
                "next_attempt_at = 0, claimed_until = 0, vector = NULL, embedded_hash = NULL, "
                "embedded_text = NULL, model = NULL, dims = NULL, embedded_at = NULL"
            )
