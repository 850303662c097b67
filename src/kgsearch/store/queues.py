"""The two work queues, written once for both stores: the embedding queue of the
embeddable rows (``EmbeddingQueue``) and the generic task queue of jobs (``TaskQueue``).

Both follow one rule: claim due rows under a lease, work outside any transaction, then
complete or fail them; a failure backs off exponentially and turns ``dead`` after
``max_attempts``; a row whose input changed since its claim stays pending. The
statements are the same on SQLite and PostgreSQL but for what
:class:`~kgsearch.store.dialect.Dialect` words. A backend supplies three things: how it
claims rows (``_claim_rows``: SQLite selects then leases inside its single-writer
transaction; PostgreSQL leases with ``FOR UPDATE SKIP LOCKED`` in one statement), how
it writes texts and vectors in bulk (``_write_texts``, ``_write_vectors``: row by row,
or arrays), and what it refreshes when vectors or texts change (``_changed``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from kgsearch.model import Kind
from kgsearch.store.common import (
    TASK_COLUMNS,
    TASK_ON_CONFLICT,
    TASK_OPEN,
    TEXT_ROW_KINDS,
    batched,
    embedding_counts,
    error_text,
    retry_state,
    to_task,
    to_task_state,
)
from kgsearch.store.counts import LATENCY_SQL, embedding_counts_sql, not_embedded_sql
from kgsearch.store.dialect import Slice
from kgsearch.store.records import (
    TASK_STATUSES,
    Claim,
    EmbeddingCounts,
    EmbeddingResult,
    Task,
    TaskIn,
    TaskState,
    TextUpdate,
)
from kgsearch.store.values import dumps

__all__ = ["ClaimSql", "EmbeddingQueueCore", "TaskQueueCore"]

T = TypeVar("T")

# Rows of the embedding queue that still wait for a vector.
_WAITING = "status IN ('pending', 'failed') AND deleted_at IS NULL"


class ClaimSql(NamedTuple):
    """One claim: up to ``limit`` rows of ``table`` meeting ``due`` (with ``params``),
    oldest first, get ``lease`` (assignments, with ``lease_params``); the claimed rows'
    ``columns`` come back in insertion order. Placeholders are ``?``."""

    table: str
    columns: str
    due: str
    params: Sequence[Any]
    limit: int
    lease: str
    lease_params: Sequence[Any]


class _Backend(Slice):
    """What the queues ask of a store besides :class:`~kgsearch.store.dialect.Slice`'s."""

    if TYPE_CHECKING:

        def _claim_rows(self, claim: ClaimSql) -> list[Any]: ...

        def iter_rows(self, project: str, kind: Any) -> Iterator[Any]: ...

        def _write_texts(self, project: str, kind: Kind, updates: Sequence[TextUpdate]) -> int:
            """Store texts whose hash changed (pending, or embedded again when the text
            is the one embedded); return how many."""

        def _write_vectors(
            self, kind: Kind, results: Sequence[EmbeddingResult], model: str, dims: int
        ) -> set[tuple[str, str]]:
            """Store the vectors of rows whose text is the one embedded; return their
            (project, id)."""

        def _vectors_forgotten(self) -> None:
            """Drop what was built from the forgotten vectors."""


class _Queue(_Backend):
    claims_by_project = False
    """Claim for all projects one project at a time (a Citus store: it refuses ``FOR
    UPDATE`` across shards, while a claim naming one project is a router query)."""

    def _each_project(
        self,
        table: str,
        due: str,
        params: Sequence[Any],
        limit: int,
        claim: Callable[[str, int], list[T]],
    ) -> list[T]:
        """Claim up to ``limit`` rows, ``claim(project, n)`` for each project with a
        due row in turn (the projects from one read across the shards)."""
        rows = self.db.all(
            self.dialect.sql(f"SELECT DISTINCT project FROM {table} WHERE {due} ORDER BY project"),
            params,
        )
        out: list[T] = []
        for row in rows:
            if len(out) >= limit:
                break
            out += claim(row["project"], limit - len(out))
        return out

    def _requeue(
        self,
        table: str,
        where: str,
        params: Sequence[Any],
        project: str | None,
        statuses: Sequence[str],
        stamp: Any = None,
    ) -> int:
        """Make the rows meeting ``where`` in ``statuses`` pending with attempts reset
        (``updated_at`` set to ``stamp`` when given); return how many."""
        if not statuses:
            return 0
        scope, scope_params = self.dialect.scope(project)
        listed, listed_params = self.dialect.listed("status", list(statuses))
        touched = ", updated_at = ?" if stamp is not None else ""
        return self.db.write(
            self.dialect.sql(
                f"UPDATE {table} SET status = 'pending', attempts = 0, last_error = NULL, "
                f"next_attempt_at = 0, claimed_until = 0{touched} "
                f"WHERE {where} AND {listed} {scope}"
            ),
            (*([stamp] if stamp is not None else []), *params, *listed_params, *scope_params),
        )

    def _next_due(
        self, table: str, waiting: str, project: str | None, params: Sequence[Any]
    ) -> float | None:
        """When the next row meeting ``waiting`` becomes claimable (None: none left)."""
        scope, scope_params = self.dialect.scope(project)
        row = self.db.one(
            self.dialect.sql(
                f"SELECT min({self.dialect.greatest}(claimed_until, next_attempt_at)) AS at "
                f"FROM {table} WHERE {waiting} {scope}"
            ),
            (*params, *scope_params),
        )
        return None if row is None or row["at"] is None else float(row["at"])


class EmbeddingQueueCore(_Queue):
    """``EmbeddingQueue`` over a backend's claims and bulk writes."""

    def set_texts(self, project: str, kind: Kind, updates: Sequence[TextUpdate]) -> int:
        if not updates:
            return 0
        with self.db.transaction():
            changed = self._write_texts(project, kind, updates)
            if changed:
                self._changed(kind, texts=True)
        return changed

    def iter_text_rows(self, project: str, kind: Kind) -> Iterator[list[Any]]:
        # community reports have no text rule: their build writes their text
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
        if project is None and self.claims_by_project:
            return self._each_project(
                kind.table,
                f"{_WAITING} AND next_attempt_at <= ? AND claimed_until <= ?",
                (now, now),
                limit,
                lambda p, n: self.claim(
                    kind, project=p, limit=n, now=now, lease_seconds=lease_seconds
                ),
            )
        scope, params = self.dialect.scope(project)
        rows = self._claim_rows(
            ClaimSql(
                kind.table,
                "project, id, text, text_hash, attempts",
                f"{_WAITING} AND next_attempt_at <= ? AND claimed_until <= ? {scope}",
                (now, now, *params),
                limit,
                "claimed_until = ?",
                (now + lease_seconds,),
            )
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
        if not results:
            return 0
        sql = self.dialect.sql
        with self.db.transaction():
            written = self._write_vectors(kind, results, model, dims)
            # the others' texts changed since the claim: release them for their new text
            self.db.executemany(
                sql(f"UPDATE {kind.table} SET claimed_until = 0 WHERE project = ? AND id = ?"),
                [(r.project, r.id) for r in results if (r.project, r.id) not in written],
            )
            if record_stats:
                self.db.write(
                    sql(
                        "INSERT INTO embed_stats (kind, texts, ms) VALUES (?, ?, ?) "
                        "ON CONFLICT (kind) DO UPDATE SET texts = embed_stats.texts + "
                        "excluded.texts, ms = embed_stats.ms + excluded.ms"
                    ),
                    (kind.value, len(results), elapsed_ms),
                )
            self._changed(kind, texts=False)
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
        # only pending and failed rows: a runner whose lease expired must not downgrade
        # a row another runner has embedded meanwhile
        message = error_text(error[:2000])
        rows = []
        for c in claims:
            status, attempts, due = retry_state(
                c.attempts, now=now, max_attempts=max_attempts, backoff_seconds=backoff_seconds
            )
            rows.append((status, attempts, message, due, c.project, c.id, c.text_hash))
        with self.db.transaction():
            self.db.executemany(
                self.dialect.sql(
                    f"UPDATE {kind.table} SET status = ?, attempts = ?, last_error = ?, "
                    "next_attempt_at = ?, claimed_until = 0 WHERE project = ? AND id = ? "
                    "AND text_hash = ? AND status IN ('pending', 'failed')"
                ),
                rows,
            )

    def requeue(self, kind: Kind, *, project: str | None, statuses: Sequence[str]) -> int:
        with self.db.transaction():
            count = self._requeue(kind.table, "deleted_at IS NULL", (), project, statuses)
            if count:
                self._changed(kind, texts=False)
        return count

    def set_skipped(self, project: str, kind: Kind, ids: Sequence[str], *, skipped: bool) -> int:
        # skipped → pending, or embedded at once when its text is the one embedded before
        assign = (
            "status = 'skipped', attempts = 0, last_error = NULL, claimed_until = 0"
            if skipped
            else "status = CASE WHEN text_hash = embedded_hash AND vector IS NOT NULL "
            "THEN 'embedded' ELSE 'pending' END"
        )
        wanted = "status IN ('pending', 'failed')" if skipped else "status = 'skipped'"
        changed = 0
        with self.db.transaction():
            for part in batched(ids):
                listed, params = self.dialect.listed("id", part)
                changed += self.db.write(
                    self.dialect.sql(
                        f"UPDATE {kind.table} SET {assign}, next_attempt_at = 0 "
                        f"WHERE project = ? AND {listed} AND {wanted} AND deleted_at IS NULL"
                    ),
                    (project, *params),
                )
            if changed:
                self._changed(kind, texts=False)
        return changed

    def next_retry_at(self, kind: Kind, *, project: str | None) -> float | None:
        # a failed row's backoff ends or another runner's lease expires (a runner killed
        # mid-batch leaves such leases)
        return self._next_due(kind.table, _WAITING, project, ())

    def embedding_counts(self, project: str | None) -> list[EmbeddingCounts]:
        scope, params = self.dialect.scope(project)
        return embedding_counts(
            (kind, row)
            for kind in Kind
            for row in self.db.all(
                self.dialect.sql(embedding_counts_sql(kind.table, scope)), params
            )
        )

    def not_embedded(self, project: str) -> int:
        total = 0
        for kind in Kind:
            row = self.db.one(self.dialect.sql(not_embedded_sql(kind.table)), (project,))
            total += int(row["n"]) if row else 0
        return total

    def embedding_latency(self) -> tuple[int, float]:
        row = self.db.one(LATENCY_SQL)
        return (int(row["n"]), float(row["ms"])) if row else (0, 0.0)

    def _forget_vectors(self) -> None:
        """Forget every vector (an explicit model migration re-embeds everything);
        call inside the transaction that records the new model."""
        for kind in Kind:
            self.db.write(
                f"UPDATE {kind.table} SET status = 'pending', attempts = 0, last_error = NULL, "
                "next_attempt_at = 0, claimed_until = 0, vector = NULL, embedded_hash = NULL, "
                "embedded_text = NULL, model = NULL, dims = NULL, embedded_at = NULL"
            )
        self._vectors_forgotten()


class TaskQueueCore(_Queue):
    """``TaskQueue`` over a backend's claims: the statements are the same on both."""

    def enqueue_tasks(self, project: str, job: str, items: Sequence[TaskIn]) -> int:
        latest = {item.row_id: item.input_hash for item in items}
        if not latest:
            return 0
        d, text, stamp = self.dialect, self.dialect.text, self.dialect.stamp()
        listed, params = d.listed("row_id", list(latest))
        with self.db.transaction():
            known = {
                r["row_id"]: r["input_hash"]
                for r in self.db.all(
                    d.sql(
                        f"SELECT row_id, input_hash FROM tasks WHERE project = ? AND job = ? "
                        f"AND {listed} ORDER BY row_id{d.lock}"
                    ),
                    (project, job, *params),
                )
            }
            self.db.executemany(
                d.sql(
                    "INSERT INTO tasks AS tasks (project, job, row_id, input_hash, payload, "
                    "created_at, updated_at) VALUES (?,?,?,?,?,?,?) "
                    "ON CONFLICT (project, job, row_id) DO UPDATE SET " + TASK_ON_CONFLICT
                ),
                [
                    (
                        project,
                        job,
                        text(i.row_id),
                        text(i.input_hash),
                        dumps(i.payload),
                        stamp,
                        stamp,
                    )
                    for i in items
                ],
            )
        return sum(1 for row_id, digest in latest.items() if known.get(row_id) != digest)

    def claim_tasks(
        self,
        job: str,
        *,
        project: str | None,
        limit: int,
        now: float,
        lease_seconds: float = 300.0,
        row_ids: Sequence[str] | None = None,
    ) -> list[Task]:
        if project is None and self.claims_by_project:
            return self._each_project(
                "tasks",
                f"job = ? AND {TASK_OPEN} AND next_attempt_at <= ? AND claimed_until <= ?",
                (job, now, now),
                limit,
                lambda p, n: self.claim_tasks(
                    job, project=p, limit=n, now=now, lease_seconds=lease_seconds, row_ids=row_ids
                ),
            )
        scope, params = self.dialect.scope(project)
        if row_ids is not None:
            listed, listed_params = self.dialect.listed("row_id", list(row_ids))
            scope += f" AND {listed}"
            params = [*params, *listed_params]
        rows = self._claim_rows(
            ClaimSql(
                "tasks",
                "project, row_id, input_hash, attempts, payload",
                f"job = ? AND {TASK_OPEN} AND next_attempt_at <= ? AND claimed_until <= ? {scope}",
                (job, now, now, *params),
                limit,
                "status = 'running', claimed_until = ?, updated_at = ?",
                (now + lease_seconds, self.dialect.stamp()),
            )
        )
        return [to_task(r) for r in rows]

    def complete_tasks(
        self,
        job: str,
        tasks: Sequence[Task],
        *,
        results: Sequence[dict[str, Any] | None] | None = None,
    ) -> int:
        stamp = self.dialect.stamp()
        given = results or [None] * len(tasks)
        done = 0
        with self.db.transaction():
            for task, result in zip(tasks, given, strict=True):
                changed = self.db.write(
                    self.dialect.sql(
                        "UPDATE tasks SET status = 'done', result = ?, attempts = 0, "
                        "last_error = NULL, next_attempt_at = 0, claimed_until = 0, "
                        "updated_at = ? WHERE project = ? AND job = ? AND row_id = ? "
                        "AND input_hash = ? AND status = 'running'"
                    ),
                    (
                        None if result is None else dumps(result),
                        stamp,
                        task.project,
                        job,
                        task.row_id,
                        task.input_hash,
                    ),
                )
                done += changed
                if not changed:
                    self._release(job, task)
        return done

    def fail_tasks(
        self,
        job: str,
        tasks: Sequence[Task],
        error: str,
        *,
        now: float,
        max_attempts: int,
        backoff_seconds: float,
    ) -> None:
        message, stamp = error_text(error), self.dialect.stamp()
        with self.db.transaction():
            for task in tasks:
                status, attempts, due = retry_state(
                    task.attempts,
                    now=now,
                    max_attempts=max_attempts,
                    backoff_seconds=backoff_seconds,
                )
                changed = self.db.write(
                    self.dialect.sql(
                        "UPDATE tasks SET status = ?, attempts = ?, last_error = ?, "
                        "next_attempt_at = ?, claimed_until = 0, updated_at = ? "
                        "WHERE project = ? AND job = ? AND row_id = ? AND input_hash = ? "
                        "AND status = 'running'"
                    ),
                    (
                        status,
                        attempts,
                        message,
                        due,
                        stamp,
                        task.project,
                        job,
                        task.row_id,
                        task.input_hash,
                    ),
                )
                if not changed:
                    self._release(job, task)

    def release_tasks(self, job: str, tasks: Sequence[Task]) -> int:
        stamp = self.dialect.stamp()
        released = 0
        with self.db.transaction():
            for task in tasks:
                released += self.db.write(
                    self.dialect.sql(
                        "UPDATE tasks SET status = CASE WHEN attempts > 0 THEN 'failed' "
                        "ELSE 'pending' END, claimed_until = 0, updated_at = ? "
                        "WHERE project = ? AND job = ? AND row_id = ? AND input_hash = ? "
                        "AND status = 'running'"
                    ),
                    (stamp, task.project, job, task.row_id, task.input_hash),
                )
        return released

    def _release(self, job: str, task: Task) -> None:
        """Drop a finished claim's lease from a task queued again with new input, so
        the new input can be claimed at once."""
        self.db.write(
            self.dialect.sql(
                "UPDATE tasks SET claimed_until = 0 WHERE project = ? AND job = ? "
                "AND row_id = ? AND input_hash != ? AND status = 'pending'"
            ),
            (task.project, job, task.row_id, task.input_hash),
        )

    def requeue_tasks(self, job: str, *, project: str | None, statuses: Sequence[str]) -> int:
        stamp = self.dialect.stamp()
        with self.db.transaction():
            return self._requeue("tasks", "job = ?", (job,), project, statuses, stamp)

    def list_tasks(
        self, job: str, *, project: str | None, statuses: Sequence[str] = (), limit: int = 100
    ) -> list[TaskState]:
        scope, params = self.dialect.scope(project)
        if statuses:
            listed, listed_params = self.dialect.listed("status", list(statuses))
            scope += f" AND {listed}"
            params = [*params, *listed_params]
        rows = self.db.all(
            self.dialect.sql(
                f"SELECT {TASK_COLUMNS} FROM tasks WHERE job = ? {scope} "
                f"ORDER BY {self.dialect.position} LIMIT ?"
            ),
            (job, *params, limit),
        )
        return [to_task_state(r) for r in rows]

    def get_tasks(self, project: str, job: str, row_ids: Sequence[str]) -> list[TaskState]:
        wanted = list(dict.fromkeys(row_ids))
        listed, params = self.dialect.listed("row_id", wanted)
        rows = self.db.all(
            self.dialect.sql(
                f"SELECT {TASK_COLUMNS} FROM tasks WHERE project = ? AND job = ? AND {listed}"
            ),
            (project, job, *params),
        )
        found = {state.row_id: state for state in map(to_task_state, rows)}
        return [found[r] for r in wanted if r in found]

    def task_counts(self, job: str, *, project: str | None) -> dict[str, int]:
        scope, params = self.dialect.scope(project)
        found = {
            row["status"]: int(row["n"])
            for row in self.db.all(
                self.dialect.sql(
                    f"SELECT status, count(*) AS n FROM tasks WHERE job = ? {scope} GROUP BY status"
                ),
                (job, *params),
            )
        }
        return {status: found.get(status, 0) for status in TASK_STATUSES}

    def next_task_retry_at(self, job: str, *, project: str | None) -> float | None:
        # its backoff ends or its lease expires
        return self._next_due("tasks", f"job = ? AND {TASK_OPEN}", project, (job,))

    def delete_tasks(self, project: str, job: str, row_ids: Sequence[str]) -> int:
        listed, params = self.dialect.listed("row_id", list(row_ids))
        with self.db.transaction():
            return self.db.write(
                self.dialect.sql(f"DELETE FROM tasks WHERE project = ? AND job = ? AND {listed}"),
                (project, job, *params),
            )
