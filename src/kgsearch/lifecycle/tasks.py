"""Jobs over the store's generic task queue, run by the one job runner.

Extraction of a chunk and a community's report are tasks of a named job, keyed by
(project, job, row id), in the store's :class:`~kgsearch.store.base.TaskQueue`.
:class:`TaskJobQueue` is the runner's view of one job, as
:class:`~kgsearch.lifecycle.embedding.EmbeddingKindQueue` is of one embedding row
kind, so both get the same claim → work outside any transaction → complete | fail →
dead rules, leases and backoff from :func:`~kgsearch.lifecycle.runner.run_batches`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kgsearch.lifecycle.runner import Outcome, Report, RetryPolicy, run_batches
from kgsearch.store.base import TaskQueue
from kgsearch.store.records import Task

__all__ = ["TaskDone", "TaskJobQueue", "TaskWork", "run_tasks"]

_OPEN = ("pending", "running", "failed")


@dataclass(frozen=True)
class TaskDone:
    """A finished task and what its work produced (kept with the task; None: nothing)."""

    task: Task
    result: dict[str, Any] | None = None


TaskWork = Callable[[Sequence[Task]], Outcome[Task, TaskDone]]
"""Turns a batch of claimed tasks into finished ones and per-task failures."""


@dataclass(frozen=True)
class TaskJobQueue:
    """The runner's view of one job of the store's task queue.

    Attributes:
        store: The task queue.
        job: The job's name (``"extract"``, ``"summarize"``…).
        project: Restrict to one project (None: all).
        row_ids: Restrict to these rows' tasks (None: all).
    """

    store: TaskQueue
    job: str
    project: str | None
    row_ids: Sequence[str] | None = None

    def claim(self, limit: int, now: float, lease_seconds: float) -> list[Task]:
        """Claim up to ``limit`` due tasks of this job (of ``row_ids`` when set)."""
        return self.store.claim_tasks(
            self.job,
            project=self.project,
            limit=limit,
            now=now,
            lease_seconds=lease_seconds,
            row_ids=self.row_ids,
        )

    def complete(self, results: Sequence[TaskDone], *, seconds: float) -> int:
        """Record finished tasks; one re-queued with new input since its claim is
        skipped (it runs again for the new input)."""
        tasks = [r.task for r in results]
        return self.store.complete_tasks(self.job, tasks, results=[r.result for r in results])

    def fail(self, claims: Sequence[Task], error: str, now: float, policy: RetryPolicy) -> None:
        """Record a failed attempt with the whole error (backoff, then dead)."""
        self.store.fail_tasks(
            self.job,
            claims,
            error,
            now=now,
            max_attempts=policy.max_attempts,
            backoff_seconds=policy.backoff_seconds,
        )

    def release(self, claims: Sequence[Task]) -> int:
        """Give claims back unfinished (an interrupted run): claimable at once, their
        attempts unchanged."""
        return self.store.release_tasks(self.job, claims)

    def next_retry_at(self) -> float | None:
        """When the next failed or leased task of this job (of ``row_ids``) is due."""
        if self.row_ids is None:
            return self.store.next_task_retry_at(self.job, project=self.project)
        if self.project is None:
            raise ValueError("restricting a run to some rows needs its project")
        due = [
            max(s.claimed_until, s.next_attempt_at)
            for s in self.store.get_tasks(self.project, self.job, self.row_ids)
            if s.status in _OPEN
        ]
        return min(due) if due else None


def run_tasks(
    store: TaskQueue,
    job: str,
    work: TaskWork,
    *,
    project: str | None = None,
    policy: RetryPolicy | None = None,
    batch_size: int = 16,
    limit: int | None = None,
    wait_for_retries: bool = True,
    progress: Callable[[int], None] | None = None,
    row_ids: Sequence[str] | None = None,
) -> Report:
    """Run ``work`` over every due task of ``job`` until none is due.

    ``work`` runs with no transaction open; an exception from it fails its whole
    batch with ``"<ExceptionType>: <message>"``, recorded on the tasks.

    Args:
        store: The task queue.
        job: The job whose tasks are claimed.
        work: Turns a batch of tasks into finished ones and per-task failures.
        project: One project, or None for all.
        policy: Lease, backoff and attempt limit (default :class:`RetryPolicy`).
        batch_size: Tasks per claim.
        limit: Stop after about this many tasks.
        wait_for_retries: Sleep for a retry or an expiring lease that is due soon.
        progress: Called with the batch size after each batch.
        row_ids: Only the tasks of these rows (None: every due task).

    Returns:
        What the run did.
    """
    report = Report()
    started = time.perf_counter()
    run_batches(
        TaskJobQueue(store, job, project, row_ids),
        work,
        report,
        policy=policy or RetryPolicy(),
        batch_size=batch_size,
        limit=limit,
        wait_for_retries=wait_for_retries,
        progress=progress,
    )
    report.seconds = time.perf_counter() - started
    return report
