"""The ``TaskQueue`` capability (re-exported by :mod:`kgsearch.store.base`, where
``Store`` unites it with the others): kept in a module of its own so ``base.py`` stays
small."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from kgsearch.store.records import Task, TaskIn, TaskState

__all__ = ["TaskQueue"]


class TaskQueue(Protocol):
    """Generic per-row tasks of named jobs (extraction, summaries…), keyed by
    (project, job, row id), with the embedding queue's rules: claim under a lease,
    work outside any transaction, complete or fail; exponential backoff, then
    ``dead`` after ``max_attempts``. A task whose ``input_hash`` is unchanged is
    never run again; concurrent claimers never get the same task."""

    def enqueue_tasks(self, project: str, job: str, items: Sequence[TaskIn]) -> int:
        """Queue tasks; an unchanged ``input_hash`` keeps the task as it is (done stays
        done), a new one makes it pending with attempts reset. Return tasks made pending."""
        ...

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
        """Claim up to ``limit`` due tasks (pending, failed past backoff, or running
        with an expired lease) in queueing order, only those of ``row_ids`` when given;
        they become ``running``."""
        ...

    def complete_tasks(
        self,
        job: str,
        tasks: Sequence[Task],
        *,
        results: Sequence[dict[str, Any] | None] | None = None,
    ) -> int:
        """Mark claimed tasks done, each with its result (``results`` runs parallel to
        ``tasks``; None: no results), unless re-queued with another input since the
        claim, which stay pending; return how many are done."""
        ...

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
        """Record a failed attempt and the whole error; past ``max_attempts``, dead."""
        ...

    def requeue_tasks(self, job: str, *, project: str | None, statuses: Sequence[str]) -> int:
        """Make tasks in ``statuses`` pending with attempts reset; return count."""
        ...

    def release_tasks(self, job: str, tasks: Sequence[Task]) -> int:
        """Give claims back unfinished: tasks still ``running`` with the claimed input
        become claimable at once (``failed`` if they had failed before, else
        ``pending``), attempts unchanged; return how many."""
        ...

    def list_tasks(
        self, job: str, *, project: str | None, statuses: Sequence[str] = (), limit: int = 100
    ) -> list[TaskState]:
        """Up to ``limit`` tasks in queueing order, of ``statuses`` (all when empty)."""
        ...

    def get_tasks(self, project: str, job: str, row_ids: Sequence[str]) -> list[TaskState]:
        """The tasks of these rows that exist, in the order of ``row_ids``."""
        ...

    def task_counts(self, job: str, *, project: str | None) -> dict[str, int]:
        """Tasks per status, every status present (see ``TASK_STATUSES``)."""
        ...

    def next_task_retry_at(self, job: str, *, project: str | None) -> float | None:
        """When the next unfinished task becomes claimable (None: none left)."""
        ...

    def delete_tasks(self, project: str, job: str, row_ids: Sequence[str]) -> int:
        """Forget the tasks of these rows; return how many were removed."""
        ...
