"""The generic task queue of the SQLite store (table of migration ``m005_create_tasks``).

:class:`SQLiteTaskQueue` is the ``TaskQueue`` slice of
:class:`~kgsearch.store.sqlite.store.SQLiteStore`: one row per (project, job, row id)
with its input hash, state, attempts, lease and JSON payload and result. Every
state change runs in one write transaction, which SQLite gives one writer at a time
across threads and processes, so two runners never claim the same task.
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
from kgsearch.store.records import TASK_STATUSES, Task, TaskIn, TaskState
from kgsearch.store.sqlite.connection import Connection
from kgsearch.store.sqlite.sql import chunked, dumps, now_iso, placeholders

__all__ = ["SQLiteTaskQueue"]


class SQLiteTaskQueue:
    """The ``TaskQueue`` capability over SQLite."""

    db: Connection

    def enqueue_tasks(self, project: str, job: str, items: Sequence[TaskIn]) -> int:
        """Queue tasks; an unchanged ``input_hash`` keeps a task as it is (a done task
        stays done), a new one makes it pending with attempts reset. Returns how many
        tasks were made pending (new ones included)."""
        latest = {item.row_id: item.input_hash for item in items}
        now = now_iso()
        with self.db.transaction():
            known: dict[str, str] = {}
            for part in chunked(list(latest)):
                for row in self.db.all(
                    "SELECT row_id, input_hash FROM tasks WHERE project = ? AND job = ? "
                    f"AND row_id IN ({placeholders(len(part))})",
                    (project, job, *part),
                ):
                    known[row["row_id"]] = row["input_hash"]
            self.db.executemany(
                "INSERT INTO tasks (project, job, row_id, input_hash, payload, created_at, "
                "updated_at) VALUES (?,?,?,?,?,?,?) "
                "ON CONFLICT(project, job, row_id) DO UPDATE SET " + TASK_ON_CONFLICT,
                [(project, job, i.row_id, i.input_hash, dumps(i.payload), now, now) for i in items],
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
        ``lease_seconds``."""
        scope, params = project_scope(project, "?")
        if row_ids is not None:  # one JSON parameter, however many ids
            scope += " AND row_id IN (SELECT value FROM json_each(?))"
            params = [*params, dumps(list(row_ids))]
        with self.db.transaction():
            rows = self.db.all(
                "SELECT rowid AS r, project, row_id, input_hash, attempts, payload FROM tasks "
                f"WHERE job = ? AND {TASK_OPEN} AND next_attempt_at <= ? AND claimed_until <= ? "
                f"{scope} ORDER BY rowid LIMIT ?",
                (job, now, now, *params, limit),
            )
            stamp = now_iso()
            for part in chunked([r["r"] for r in rows]):
                self.db.execute(
                    "UPDATE tasks SET status = 'running', claimed_until = ?, updated_at = ? "
                    f"WHERE rowid IN ({placeholders(len(part))})",
                    (now + lease_seconds, stamp, *part),
                )
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
        stamp = now_iso()
        done = 0
        with self.db.transaction():
            for task, result in zip(tasks, results or [None] * len(tasks), strict=True):
                stored = None if result is None else dumps(result)
                cur = self.db.execute(
                    "UPDATE tasks SET status = 'done', result = ?, attempts = 0, "
                    "last_error = NULL, next_attempt_at = 0, claimed_until = 0, updated_at = ? "
                    "WHERE project = ? AND job = ? AND row_id = ? AND input_hash = ? "
                    "AND status = 'running'",
                    (stored, stamp, task.project, job, task.row_id, task.input_hash),
                )
                done += cur.rowcount
                if not cur.rowcount:
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
        """Count a failed attempt with the whole error: exponential backoff, then
        ``dead`` after ``max_attempts``. A task queued again with another input since
        its claim stays pending."""
        message = error_text(error)
        stamp = now_iso()
        with self.db.transaction():
            for task in tasks:
                status, attempts, due = retry_state(
                    task.attempts,
                    now=now,
                    max_attempts=max_attempts,
                    backoff_seconds=backoff_seconds,
                )
                cur = self.db.execute(
                    "UPDATE tasks SET status = ?, attempts = ?, last_error = ?, "
                    "next_attempt_at = ?, claimed_until = 0, updated_at = ? "
                    "WHERE project = ? AND job = ? AND row_id = ? AND input_hash = ? "
                    "AND status = 'running'",
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
                if not cur.rowcount:
                    self._release(job, task)

    def _release(self, job: str, task: Task) -> None:
        """Drop a finished claim's lease from a task queued again with new input, so
        the new input can be claimed at once."""
        self.db.execute(
            "UPDATE tasks SET claimed_until = 0 WHERE project = ? AND job = ? AND row_id = ? "
            "AND input_hash != ? AND status = 'pending'",
            (task.project, job, task.row_id, task.input_hash),
        )

    def release_tasks(self, job: str, tasks: Sequence[Task]) -> int:
        """Give claims back unfinished: still-``running`` tasks with the claimed input
        are claimable at once (``failed`` if they failed before, else ``pending``),
        attempts unchanged. Returns how many."""
        released = 0
        stamp = now_iso()
        with self.db.transaction():
            for task in tasks:
                cur = self.db.execute(
                    "UPDATE tasks SET status = CASE WHEN attempts > 0 THEN 'failed' "
                    "ELSE 'pending' END, claimed_until = 0, updated_at = ? "
                    "WHERE project = ? AND job = ? AND row_id = ? AND input_hash = ? "
                    "AND status = 'running'",
                    (stamp, task.project, job, task.row_id, task.input_hash),
                )
                released += cur.rowcount
        return released

    def requeue_tasks(self, job: str, *, project: str | None, statuses: Sequence[str]) -> int:
        """Make tasks in ``statuses`` pending with attempts reset; return how many."""
        if not statuses:
            return 0
        scope, params = project_scope(project, "?")
        with self.db.transaction():
            cur = self.db.execute(
                "UPDATE tasks SET status = 'pending', attempts = 0, last_error = NULL, "
                "next_attempt_at = 0, claimed_until = 0, updated_at = ? "
                f"WHERE job = ? AND status IN ({placeholders(len(statuses))}) {scope}",
                (now_iso(), job, *statuses, *params),
            )
        return cur.rowcount

    def list_tasks(
        self, job: str, *, project: str | None, statuses: Sequence[str] = (), limit: int = 100
    ) -> list[TaskState]:
        """Up to ``limit`` tasks in queueing order, of ``statuses`` (all when empty)."""
        scope, params = project_scope(project, "?")
        if statuses:
            scope += f" AND status IN ({placeholders(len(statuses))})"
            params = [*params, *statuses]
        rows = self.db.all(
            f"SELECT {TASK_COLUMNS} FROM tasks WHERE job = ? {scope} ORDER BY rowid LIMIT ?",
            (job, *params, limit),
        )
        return [to_task_state(r) for r in rows]

    def get_tasks(self, project: str, job: str, row_ids: Sequence[str]) -> list[TaskState]:
        """The tasks of these rows that exist, in the order of ``row_ids``."""
        found: dict[str, TaskState] = {}
        for part in chunked(list(dict.fromkeys(row_ids))):
            for row in self.db.all(
                f"SELECT {TASK_COLUMNS} FROM tasks WHERE project = ? AND job = ? "
                f"AND row_id IN ({placeholders(len(part))})",
                (project, job, *part),
            ):
                state = to_task_state(row)
                found[state.row_id] = state
        return [found[r] for r in dict.fromkeys(row_ids) if r in found]

    def task_counts(self, job: str, *, project: str | None) -> dict[str, int]:
        """Tasks per status, every status present, in ``TASK_STATUSES`` order."""
        scope, params = project_scope(project, "?")
        found = {
            row["status"]: int(row["n"])
            for row in self.db.all(
                f"SELECT status, count(*) AS n FROM tasks WHERE job = ? {scope} GROUP BY status",
                (job, *params),
            )
        }
        return {status: found.get(status, 0) for status in TASK_STATUSES}

    def next_task_retry_at(self, job: str, *, project: str | None) -> float | None:
        """When the next unfinished task becomes claimable (its backoff ends or its
        lease expires); None when every task is done or dead."""
        scope, params = project_scope(project, "?")
        row = self.db.one(
            f"SELECT min(max(claimed_until, next_attempt_at)) FROM tasks WHERE job = ? "
            f"AND {TASK_OPEN} {scope}",
            (job, *params),
        )
        return None if row is None or row[0] is None else float(row[0])

    def delete_tasks(self, project: str, job: str, row_ids: Sequence[str]) -> int:
        """Forget the tasks of these rows; return how many were removed."""
        removed = 0
        with self.db.transaction():
            for part in chunked(list(row_ids)):
                cur = self.db.execute(
                    "DELETE FROM tasks WHERE project = ? AND job = ? "
                    f"AND row_id IN ({placeholders(len(part))})",
                    (project, job, *part),
                )
                removed += cur.rowcount
        return removed
