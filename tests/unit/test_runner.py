"""The job runner on its own, over an in-memory queue: claims, leases, backoff, dead rows,
per-row failures, fatal errors, skipped results and the worker loop."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from kgsearch.errors import DimensionMismatch, StoreError
from kgsearch.lifecycle.runner import (
    JobQueue,
    Outcome,
    Report,
    RetryPolicy,
    run_batches,
    run_worker,
)

FAST = RetryPolicy(max_attempts=3, backoff_seconds=0.0)


@dataclass(frozen=True)
class Task:
    """A claimed row: its id, the version claimed and earlier failed attempts."""

    id: str
    version: int
    attempts: int


@dataclass
class Row:
    status: str = "pending"
    attempts: int = 0
    version: int = 0
    due_at: float = 0.0
    claimed_until: float = 0.0
    result: str | None = None
    last_error: str | None = None


@dataclass
class MemoryQueue:
    """A task queue in a dict, with the semantics the stores' queues have."""

    rows: dict[str, Row] = field(default_factory=dict)
    completed: list[float] = field(default_factory=list)

    @classmethod
    def of(cls, n: int) -> MemoryQueue:
        return cls({f"t{i:02}": Row() for i in range(n)})

    def _due(self, row: Row, now: float) -> bool:
        if row.claimed_until > now:
            return False
        return row.status == "pending" or (row.status == "failed" and row.due_at <= now)

    def claim(self, limit: int, now: float, lease_seconds: float) -> list[Task]:
        due = [(i, r) for i, r in self.rows.items() if self._due(r, now)][:limit]
        for _, row in due:
            row.claimed_until = now + lease_seconds
        return [Task(i, r.version, r.attempts) for i, r in due]

    def complete(self, results: Sequence[tuple[Task, str]], *, seconds: float) -> int:
        self.completed.append(seconds)
        done = 0
        for task, value in results:
            row = self.rows[task.id]
            row.claimed_until = 0.0
            if row.version == task.version:  # a row edited since the claim stays pending
                row.status, row.result, row.last_error = "done", value, None
                done += 1
        return done

    def fail(self, claims: Sequence[Task], error: str, now: float, policy: RetryPolicy) -> None:
        for task in claims:
            row = self.rows[task.id]
            if row.status == "done":
                continue
            row.attempts += 1
            row.claimed_until = 0.0
            row.last_error = error
            row.status = "dead" if row.attempts >= policy.max_attempts else "failed"
            row.due_at = now + policy.backoff_seconds * 2 ** (row.attempts - 1)

    def next_retry_at(self) -> float | None:
        times = [r.due_at for r in self.rows.values() if r.status == "failed"]
        times += [r.claimed_until for r in self.rows.values() if r.claimed_until]
        return min(times, default=None)

    def statuses(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in self.rows.values():
            counts[row.status] = counts.get(row.status, 0) + 1
        return counts


def upper(claims: Sequence[Task]) -> Outcome[Task, tuple[Task, str]]:
    return Outcome([(c, c.id.upper()) for c in claims])


def failing(claims: Sequence[Task]) -> Outcome[Task, tuple[Task, str]]:
    raise RuntimeError("provider down")


Work = Callable[[Sequence[Task]], Outcome[Task, tuple[Task, str]]]


def run(queue: MemoryQueue, work: Work = upper, **options: Any) -> Report:
    report = Report()
    run_batches(queue, work, report, **{"policy": FAST, "batch_size": 10, **options})
    return report


def counts(report: Report) -> tuple[int, int, int, int, int, int]:
    return (
        report.processed,
        report.done,
        report.failed,
        report.dead,
        report.skipped,
        report.batches,
    )


def test_the_memory_queue_is_a_job_queue() -> None:
    queue: JobQueue[Task, tuple[Task, str]] = MemoryQueue.of(1)

    assert queue.next_retry_at() is None


def test_every_due_row_is_completed_batch_by_batch() -> None:
    queue = MemoryQueue.of(25)

    report = run(queue)

    assert counts(report) == (25, 25, 0, 0, 0, 3)
    assert queue.statuses() == {"done": 25}
    assert queue.rows["t07"].result == "T07"
    assert len(queue.completed) == 3


def test_a_failing_work_function_ends_every_row_dead_after_max_attempts() -> None:
    queue = MemoryQueue.of(4)

    report = run(queue, failing)

    assert counts(report) == (12, 0, 12, 4, 0, 3)
    assert report.errors == ["RuntimeError: provider down"]
    assert queue.statuses() == {"dead": 4}
    assert {r.attempts for r in queue.rows.values()} == {3}


def test_a_run_after_every_row_died_claims_nothing() -> None:
    queue = MemoryQueue.of(4)
    run(queue, failing)

    assert counts(run(queue)) == (0, 0, 0, 0, 0, 0)


def test_a_row_failure_fails_only_its_row() -> None:
    queue = MemoryQueue.of(3)

    def picky(claims: Sequence[Task]) -> Outcome[Task, tuple[Task, str]]:
        bad = [c for c in claims if c.id == "t01"]
        return Outcome([(c, "ok") for c in claims if c not in bad], {"t01 is bad": bad})

    report = run(queue, picky)

    assert counts(report) == (5, 2, 3, 1, 0, 3)
    assert report.errors == ["t01 is bad"]
    assert {i: r.status for i, r in queue.rows.items()} == {
        "t00": "done",
        "t01": "dead",
        "t02": "done",
    }


def test_a_fatal_error_propagates_and_leaves_its_batch_claimed() -> None:
    queue = MemoryQueue.of(3)

    def wrong_model(claims: Sequence[Task]) -> Outcome[Task, tuple[Task, str]]:
        raise DimensionMismatch("64 dims, the store holds 32")

    with pytest.raises(DimensionMismatch):
        run(queue, wrong_model, fatal=(DimensionMismatch,))

    assert queue.statuses() == {"pending": 3}
    assert {r.attempts for r in queue.rows.values()} == {0}
    assert all(r.claimed_until > time.time() for r in queue.rows.values())


def test_a_result_for_a_row_changed_since_its_claim_is_skipped() -> None:
    queue = MemoryQueue.of(2)

    def edited_meanwhile(claims: Sequence[Task]) -> Outcome[Task, tuple[Task, str]]:
        queue.rows["t00"].version += 1
        return upper(claims)

    report = run(queue, edited_meanwhile, limit=2)

    assert counts(report) == (2, 1, 0, 0, 1, 1)
    assert queue.rows["t00"].status == "pending"


def test_a_row_under_a_live_lease_is_not_claimed() -> None:
    queue = MemoryQueue.of(2)
    queue.claim(1, time.time(), 30.0)

    report = run(queue, wait_for_retries=False)

    assert counts(report) == (1, 1, 0, 0, 0, 1)
    assert queue.statuses() == {"pending": 1, "done": 1}


def test_a_row_whose_lease_ended_is_claimed_again() -> None:
    queue = MemoryQueue.of(2)
    queue.claim(1, time.time() - 31.0, 30.0)  # a runner that died holding t00

    report = run(queue, wait_for_retries=False)

    assert counts(report) == (2, 2, 0, 0, 0, 1)


def test_a_retry_due_soon_is_waited_for() -> None:
    queue = MemoryQueue.of(2)
    calls: list[int] = []

    def flaky(claims: Sequence[Task]) -> Outcome[Task, tuple[Task, str]]:
        calls.append(len(claims))
        if len(calls) == 1:
            raise TimeoutError("slow provider")
        return upper(claims)

    report = run(queue, flaky, policy=RetryPolicy(max_attempts=3, backoff_seconds=0.05))

    assert counts(report) == (4, 2, 2, 0, 0, 2)
    assert queue.statuses() == {"done": 2}


def test_a_retry_due_later_than_max_wait_is_left_to_the_next_run() -> None:
    queue = MemoryQueue.of(2)
    policy = RetryPolicy(max_attempts=3, backoff_seconds=100.0, max_wait_seconds=1.0)

    report = run(queue, failing, policy=policy)

    assert counts(report) == (2, 0, 2, 0, 0, 1)
    assert queue.statuses() == {"failed": 2}


def test_limit_stops_after_the_batch_that_reaches_it() -> None:
    queue = MemoryQueue.of(25)

    report = run(queue, limit=15)

    assert counts(report) == (20, 20, 0, 0, 0, 2)


def test_progress_is_called_with_each_batch_size() -> None:
    seen: list[int] = []

    run(MemoryQueue.of(25), progress=seen.append)

    assert seen == [10, 10, 5]


def test_a_report_keeps_the_first_ten_distinct_errors() -> None:
    report = Report()
    for message in [f"e{i}" for i in range(15)] + ["e0"]:
        report.note(message)

    assert report.errors == [f"e{i}" for i in range(10)]


def test_reports_add_up() -> None:
    total = Report(processed=1, done=1, errors=["a"])

    total.add(
        Report(processed=2, failed=2, dead=1, skipped=1, batches=1, seconds=0.5, errors=["a", "b"])
    )

    assert total == Report(
        processed=3, done=1, failed=2, dead=1, skipped=1, batches=1, seconds=0.5, errors=["a", "b"]
    )


def test_a_worker_runs_steps_until_stopped_and_sums_them() -> None:
    queue = MemoryQueue.of(25)
    totals: list[int] = []

    def step(report: Report) -> None:
        run_batches(queue, upper, report, policy=FAST, batch_size=10, limit=10)

    report = run_worker(
        step,
        poll_seconds=0.01,
        should_stop=lambda: queue.statuses() == {"done": 25},
        on_batch=lambda total: totals.append(total.done),
    )

    assert counts(report) == (25, 25, 0, 0, 0, 3)
    assert totals == [10, 20, 25]


def test_a_worker_until_idle_returns_once_nothing_is_due() -> None:
    queue = MemoryQueue.of(5)

    report = run_worker(
        lambda r: run_batches(queue, upper, r, policy=FAST, batch_size=2, limit=2),
        until_idle=True,
    )

    assert counts(report) == (5, 5, 0, 0, 0, 3)


def test_a_worker_survives_store_errors_and_keeps_its_totals() -> None:
    queue = MemoryQueue.of(3)
    errors = [StoreError("server closed the connection")]

    def step(report: Report) -> None:
        run_batches(queue, upper, report, policy=FAST, batch_size=2, limit=2)
        if errors:
            raise errors.pop()

    report = run_worker(
        step, poll_seconds=0.01, should_stop=lambda: not queue.statuses().get("pending")
    )

    assert counts(report) == (3, 3, 0, 0, 0, 2)
    assert report.errors == ["StoreError: server closed the connection"]


def test_a_worker_until_idle_raises_store_errors() -> None:
    def step(report: Report) -> None:
        raise StoreError("server closed the connection")

    with pytest.raises(StoreError, match="server closed"):
        run_worker(step, until_idle=True)
