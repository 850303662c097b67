"""The generic task queue of the PostgreSQL store (table of migration ``m003_create_tasks``).

:class:`PostgresTaskQueue` is the ``TaskQueue`` slice of
:class:`~kgsearch.store.postgres.store.PostgresStore`: one row per (project, job, row
id) with its input hash, state, attempts, lease and JSON payload and result.
``claim_tasks`` takes due tasks with ``FOR UPDATE SKIP LOCKED`` and marks them running
under a lease in the same statement, so any number of runners, on any machine, can
claim at once without taking the same task. Batches go to the server as arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgsearch.store.common import (
    TASK_COLUMNS,
    TASK_ON_CONFLICT,
    TASK_OPEN,
    error_text,
    project_scope,
    retry_state,
    to_task,
    to_task_state,
)
from kgsearch.store.postgres.citus import claim_each_project
from kgsearch.store.postgres.connection import Connection
from kgsearch.store.postgres.sql import clean
from kgsearch.store.records import TASK_STATUSES, Task, TaskIn, TaskState
from kgsearch.store.values import dumps

__all__ = ["PostgresTaskQueue"]


class PostgresTaskQueue:
    """The ``TaskQueue`` capability over PostgreSQL."""

    db: Connection
    citus: bool = False  # the store is laid out on Citus (store/postgres/citus.py)

    def enqueue_tasks(self, project: str, job: str, items: Sequence[TaskIn]) -> int:
        """Queue tasks; an unchanged ``input_hash`` keeps a task as it is (a done task
        stays done), a new one makes it pending with attempts reset. Returns how many
        tasks were made pending (new ones included)."""
        latest = {item.row_id: item.input_hash for item in items}
        if not latest:
            return 0
        with self.db.transaction():
            known = {
                r["row_id"]: r["input_hash"]
                for r in self.db.all(
                    "SELECT row_id, input_hash FROM tasks WHERE project = %s AND job = %s "
                    # locked in key order, so that two enqueuers of the same rows
                    # wait for each other rather than deadlock
                    "AND row_id = ANY(%s) ORDER BY row_id FOR UPDATE",
                    (project, job, list(latest)),
                )
            }
            self.db.executemany(
                "INSERT INTO tasks AS tasks (project, job, row_id, input_hash, payload, "
                "updated_at) VALUES (%s,%s,%s,%s,%s,now()) "
                "ON CONFLICT (project, job, row_id) DO UPDATE SET " + TASK_ON_CONFLICT,
                [
                    (project, job, clean(i.row_id), clean(i.input_hash), dumps(i.payload))
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
        """Claim up to ``limit`` due tasks in queueing order: pending, failed past their
        backoff, or running under an expired lease (its runner died), only those of
        ``row_ids`` when given. They become ``running`` under a lease of
        ``lease_seconds``; concurrent claimers skip rows another one holds."""
        if project is None and self.citus:
            return claim_each_project(
                self.db,
                "tasks",
                (
                    f"job = %s AND {TASK_OPEN} AND next_attempt_at <= %s AND claimed_until <= %s",
                    (job, now, now),
                ),
                limit,
                lambda p, n: self.claim_tasks(
                    job, project=p, limit=n, now=now, lease_seconds=lease_seconds, row_ids=row_ids
                ),
            )
        scope, params = project_scope(project, "%s")
        if row_ids is not None:
            scope += " AND row_id = ANY(%s)"
            params = [*params, list(row_ids)]
        with self.db.transaction():
            rows = self.db.all(
                f"""UPDATE tasks t SET status = 'running', claimed_until = %s, updated_at = now()
                FROM (SELECT project, seq FROM tasks WHERE job = %s AND {TASK_OPEN}
                      AND next_attempt_at <= %s AND claimed_until <= %s {scope}
                      ORDER BY seq LIMIT %s FOR UPDATE SKIP LOCKED) due
                WHERE t.project = due.project AND t.seq = due.seq
                RETURNING t.seq, t.project, t.row_id, t.input_hash, t.attempts, t.payload""",
                (now + lease_seconds, job, now, now, *params, limit),
            )
        rows.sort(key=lambda r: r["seq"])
        return [to_task(r) for r in rows]

    def complete_tasks(
        self,
        job: str,
        tasks: Sequence[Task],
        *,
        results: Sequence[dict[str, Any] | None] | None = None,
    ) -> int:
        """Mark claimed tasks done, each with its result; a task queued again with
        another input since its claim stays pending (its lease released). Returns tasks
        done."""
        if not tasks:
            return 0
        given = results or [None] * len(tasks)
        stored = [None if r is None else dumps(r) for _, r in zip(tasks, given, strict=True)]
        with self.db.transaction():
            done = self.db.all(
                """UPDATE tasks t SET status = 'done', result = u.result, attempts = 0,
                    last_error = NULL, next_attempt_at = 0, claimed_until = 0, updated_at = now()
                FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[])
                    AS u(project, row_id, input_hash, result)
                WHERE t.project = u.project AND t.job = %s AND t.row_id = u.row_id
                    AND t.input_hash = u.input_hash AND t.status = 'running'
                RETURNING t.project, t.row_id""",
                (
                    [t.project for t in tasks],
                    [t.row_id for t in tasks],
                    [t.input_hash for t in tasks],
                    stored,
                    job,
                ),
            )
            finished = {(r["project"], r["row_id"]) for r in done}
            self._release(job, [t for t in tasks if (t.project, t.row_id) not in finished])
        return len(finished)

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
        """Count a failed attempt with the whole error: exponential backoff, then
        ``dead`` after ``max_attempts``. A task queued again with another input since
        its claim stays pending."""
        if not tasks:
            return
        states = [
            retry_state(
                t.attempts, now=now, max_attempts=max_attempts, backoff_seconds=backoff_seconds
            )
            for t in tasks
        ]
        with self.db.transaction():
            failed = self.db.all(
                """UPDATE tasks t SET status = u.status, attempts = u.attempts,
                    last_error = %s, next_attempt_at = u.due, claimed_until = 0,
                    updated_at = now()
                FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::int[],
                            %s::float8[]) AS u(project, row_id, input_hash, status, attempts, due)
                WHERE t.project = u.project AND t.job = %s AND t.row_id = u.row_id
                    AND t.input_hash = u.input_hash AND t.status = 'running'
                RETURNING t.project, t.row_id""",
                (
                    error_text(error),
                    [t.project for t in tasks],
                    [t.row_id for t in tasks],
                    [t.input_hash for t in tasks],
                    [s[0] for s in states],
                    [s[1] for s in states],
                    [s[2] for s in states],
                    job,
                ),
            )
            recorded = {(r["project"], r["row_id"]) for r in failed}
            self._release(job, [t for t in tasks if (t.project, t.row_id) not in recorded])

    def _release(self, job: str, tasks: Sequence[Task]) -> None:
        """Drop finished claims' leases from tasks queued again with new input, so the
        new input can be claimed at once."""
        if not tasks:
            return
        self.db.execute(
            "UPDATE tasks t SET claimed_until = 0 "
            "FROM unnest(%s::text[], %s::text[], %s::text[]) AS u(project, row_id, input_hash) "
            "WHERE t.project = u.project AND t.job = %s AND t.row_id = u.row_id "
            "AND t.input_hash != u.input_hash AND t.status = 'pending'",
            (
                [t.project for t in tasks],
                [t.row_id for t in tasks],
                [t.input_hash for t in tasks],
                job,
            ),
        )

    def requeue_tasks(self, job: str, *, project: str | None, statuses: Sequence[str]) -> int:
        """Make tasks in ``statuses`` pending with attempts reset; return how many."""
        if not statuses:
            return 0
        scope, params = project_scope(project, "%s")
        return self.db.execute(
            "UPDATE tasks SET status = 'pending', attempts = 0, last_error = NULL, "
            "next_attempt_at = 0, claimed_until = 0, updated_at = now() "
            f"WHERE job = %s AND status = ANY(%s) {scope}",
            (job, list(statuses), *params),
        )

    def list_tasks(
        self, job: str, *, project: str | None, statuses: Sequence[str] = (), limit: int = 100
    ) -> list[TaskState]:
        """Up to ``limit`` tasks in queueing order, of ``statuses`` (all when empty)."""
        scope, params = project_scope(project, "%s")
        if statuses:
            scope += " AND status = ANY(%s)"
            params = [*params, list(statuses)]
        rows = self.db.all(
            f"SELECT {TASK_COLUMNS} FROM tasks WHERE job = %s {scope} ORDER BY seq LIMIT %s",
            (job, *params, limit),
        )
        return [to_task_state(r) for r in rows]

    def get_tasks(self, project: str, job: str, row_ids: Sequence[str]) -> list[TaskState]:
        """The tasks of these rows that exist, in the order of ``row_ids``."""
        wanted = list(dict.fromkeys(row_ids))
        rows = self.db.all(
            f"SELECT {TASK_COLUMNS} FROM tasks WHERE project = %s AND job = %s "
            "AND row_id = ANY(%s)",
            (project, job, wanted),
        )
        found = {state.row_id: state for state in map(to_task_state, rows)}
        return [found[r] for r in wanted if r in found]

    def task_counts(self, job: str, *, project: str | None) -> dict[str, int]:
        """Tasks per status, every status present, in ``TASK_STATUSES`` order."""
        scope, params = project_scope(project, "%s")
        found = {
            row["status"]: int(row["n"])
            for row in self.db.all(
                f"SELECT status, count(*) AS n FROM tasks WHERE job = %s {scope} GROUP BY status",
                (job, *params),
            )
        }
        return {status: found.get(status, 0) for status in TASK_STATUSES}

    def next_task_retry_at(self, job: str, *, project: str | None) -> float | None:
        """When the next unfinished task becomes claimable (its backoff ends or its
        lease expires); None when every task is done or dead."""
        scope, params = project_scope(project, "%s")
        row = self.db.one(
            "SELECT min(greatest(claimed_until, next_attempt_at)) AS at FROM tasks "
            f"WHERE job = %s AND {TASK_OPEN} {scope}",
            (job, *params),
        )
        return None if row is None or row["at"] is None else float(row["at"])

    def delete_tasks(self, project: str, job: str, row_ids: Sequence[str]) -> int:
        """Forget the tasks of these rows; return how many were removed."""
        return self.db.execute(
            "DELETE FROM tasks WHERE project = %s AND job = %s AND row_id = ANY(%s)",
            (project, job, list(row_ids)),
        )
