"""The one job runner: claim due rows, work outside any transaction, complete or fail.

Every background job over the store (embedding today; extraction and community
summaries next) is the same loop: claim a batch of due rows under a lease, do the
slow work (a model call) with no transaction open, then record the results or the
failure. A failed row is retried after an exponential backoff and becomes ``dead``
after :attr:`RetryPolicy.max_attempts`, so every run terminates; a row whose runner
died is claimable again once its lease ends, so nothing stays stuck.

Claims are never left to their lease when the runner knows it is giving them up: an
interruption (Ctrl-C, SIGTERM turned into one by the CLI) or a provider's open
breaker releases the batch's claims (no attempt counted) before the run ends, when
the queue can release (:class:`Releasing`). Error messages are stored as any store
keeps them (lone surrogates and NUL escaped), so recording a failure cannot fail.

The runner knows nothing about what it claims. A :class:`JobQueue` binds it to one
queue of the store (a row kind of the embedding queue, or one job of a task queue)
and a work function turns a batch of claims into an :class:`Outcome`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar, runtime_checkable

from kgsearch.errors import StoreError
from kgsearch.http import ProviderSkipped

__all__ = [
    "MAX_ERRORS",
    "Claimed",
    "JobQueue",
    "Outcome",
    "Releasing",
    "Report",
    "RetryPolicy",
    "run_batches",
    "run_worker",
]

# Distinct error messages a report keeps (a long-lived worker would grow without bound).
MAX_ERRORS = 10


@dataclass(frozen=True)
class RetryPolicy:
    """How failures are retried: exponential backoff, then dead."""

    max_attempts: int = 5
    backoff_seconds: float = 1.0
    # A run waits for a retry only when it is due this soon; later retries are left
    # to the next run (a row still ends dead after max_attempts).
    max_wait_seconds: float = 60.0
    lease_seconds: float = 30.0


class Claimed(Protocol):
    """What the runner reads of a claimed row: how often it was attempted before."""

    @property
    def attempts(self) -> int:
        """Failed attempts recorded before this claim."""
        ...


ClaimT = TypeVar("ClaimT", bound=Claimed)
ResultT = TypeVar("ResultT")
ResultT_contra = TypeVar("ResultT_contra", contravariant=True)


class JobQueue(Protocol[ClaimT, ResultT_contra]):
    """One queue of due rows, as the runner sees it.

    An adapter binds a store's queue to one stream of work (say, the embedding
    queue's objects of one project, or the ``extract`` job of a task queue) and
    translates these calls into the store's.
    """

    def claim(self, limit: int, now: float, lease_seconds: float) -> Sequence[ClaimT]:
        """Atomically claim up to ``limit`` due rows for ``lease_seconds`` from ``now``.

        Due means pending, or failed with its backoff over, or claimed under a lease
        that has ended. An empty result means nothing is due now.
        """
        ...

    def complete(self, results: Sequence[ResultT_contra], *, seconds: float) -> int:
        """Record finished work; ``seconds`` is how long the batch's work took.

        Returns how many results were recorded: a row that changed since it was
        claimed is left for its next claim and not counted.
        """
        ...

    def fail(self, claims: Sequence[ClaimT], error: str, now: float, policy: RetryPolicy) -> None:
        """Record a failed attempt on ``claims``: due again after the policy's backoff,
        or ``dead`` once they reach ``policy.max_attempts``."""
        ...

    def next_retry_at(self) -> float | None:
        """When the next failed or leased row becomes due (epoch seconds), or None."""
        ...


@runtime_checkable
class Releasing(Protocol):
    """A queue that can give claims back without counting an attempt."""

    def release(self, claims: Sequence[Claimed]) -> int:
        """Make ``claims`` claimable at once, their attempts unchanged; returns how
        many were still held."""
        ...


@dataclass(frozen=True)
class Outcome(Generic[ClaimT, ResultT]):
    """What a work function made of a batch.

    Attributes:
        results: Finished work, handed to :meth:`JobQueue.complete`.
        failures: Claims that failed on their own, by error message; the rest of
            the batch still completes.
    """

    results: Sequence[ResultT] = ()
    failures: Mapping[str, Sequence[ClaimT]] = field(default_factory=dict)


@dataclass
class Report:
    """Counts of what a run did, updated as it goes (so a caller that catches an
    error still has the counts of the batches done before it).

    Attributes:
        processed: Rows claimed and attempted.
        done: Results recorded.
        failed: Failed attempts recorded.
        dead: Rows that reached the attempt limit.
        skipped: Results not recorded because their row changed since the claim.
        batches: Batches claimed.
        seconds: Wall-clock duration.
        errors: The first :data:`MAX_ERRORS` distinct error messages.
    """

    processed: int = 0
    done: int = 0
    failed: int = 0
    dead: int = 0
    skipped: int = 0
    batches: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    def note(self, message: str) -> None:
        """Keep ``message`` if it is new and fewer than ``MAX_ERRORS`` are kept."""
        if len(self.errors) < MAX_ERRORS and message not in self.errors:
            self.errors.append(message)

    def add(self, other: Report) -> None:
        """Add the counts, duration and error messages of ``other``."""
        self.processed += other.processed
        self.done += other.done
        self.failed += other.failed
        self.dead += other.dead
        self.skipped += other.skipped
        self.batches += other.batches
        self.seconds += other.seconds
        for message in other.errors:
            self.note(message)


def run_batches(
    queue: JobQueue[ClaimT, ResultT],
    work: Callable[[Sequence[ClaimT]], Outcome[ClaimT, ResultT]],
    report: Report,
    *,
    policy: RetryPolicy,
    batch_size: int,
    limit: int | None = None,
    delay_ms: int = 0,
    wait_for_retries: bool = True,
    progress: Callable[[int], None] | None = None,
    fatal: tuple[type[Exception], ...] = (),
) -> None:
    """Claim, work and record batch by batch until nothing is due, counting into ``report``.

    The work runs with no transaction open. An exception from ``work`` fails the
    whole batch with ``"<ExceptionType>: <message>"`` (a provider failure is recorded
    on the rows, never raised), unless it is one of ``fatal``: those mean no batch
    can succeed (the wrong model, say) and propagate. A
    :class:`~kgsearch.http.ProviderSkipped` (the provider's breaker is open: nothing
    was attempted) ends the run with the message in ``report.errors`` and the batch's
    attempts untouched; its rows are claimable again once their lease ends.

    Args:
        queue: Where the rows are claimed and recorded.
        work: Turns a batch of claims into results and per-row failures.
        report: Counts what happens; shared across calls to sum several queues.
        policy: Lease, backoff and attempt limit.
        batch_size: Rows per claim.
        limit: Stop once ``report.processed`` reaches this (None: until none is due).
        delay_ms: Pause between batches (throttling for rate-limited providers).
        wait_for_retries: When nothing is due but a backoff or another runner's
            lease ends within ``policy.max_wait_seconds``, sleep until then.
        progress: Called with the batch size after each batch.
        fatal: Exception types that stop the run instead of failing the batch.
    """
    while limit is None or report.processed < limit:
        claims = queue.claim(batch_size, time.time(), policy.lease_seconds)
        if not claims:
            if not wait_for_retries or not _wait_for_retry(queue, policy):
                break
            continue
        if not _run_batch(queue, work, claims, policy, report, fatal):
            break
        report.processed += len(claims)
        report.batches += 1
        if progress is not None:
            progress(len(claims))
        if delay_ms:
            time.sleep(delay_ms / 1000)


def _run_batch(
    queue: JobQueue[ClaimT, ResultT],
    work: Callable[[Sequence[ClaimT]], Outcome[ClaimT, ResultT]],
    claims: Sequence[ClaimT],
    policy: RetryPolicy,
    report: Report,
    fatal: tuple[type[Exception], ...],
) -> bool:
    """Work one batch and record it; False when the provider was skipped (stop).

    Whatever ends it early (Ctrl-C, SIGTERM turned into one, a fatal error) gives
    back the claims not yet recorded."""
    try:
        return _work_and_record(queue, work, claims, policy, report, fatal)
    except BaseException:
        _release(queue, claims)  # only claims still held: recorded ones are untouched
        raise


def _work_and_record(
    queue: JobQueue[ClaimT, ResultT],
    work: Callable[[Sequence[ClaimT]], Outcome[ClaimT, ResultT]],
    claims: Sequence[ClaimT],
    policy: RetryPolicy,
    report: Report,
    fatal: tuple[type[Exception], ...],
) -> bool:
    started = time.perf_counter()
    try:
        outcome = work(claims)
    except fatal:
        raise
    except ProviderSkipped as exc:  # nothing attempted: stop, and cost no row an attempt
        _release(queue, claims)
        report.note(f"{type(exc).__name__}: {exc}; the rest stays queued")
        return False
    except Exception as exc:  # any provider failure is recorded on the rows, never raised
        _fail(queue, claims, f"{type(exc).__name__}: {exc}", policy, report)
        return True
    seconds = time.perf_counter() - started
    for message, failed in outcome.failures.items():
        _fail(queue, failed, message, policy, report)
    if outcome.results:
        try:
            done = queue.complete(outcome.results, seconds=seconds)
        except Exception as exc:  # a result the store refuses: an attempt, not a stuck claim
            _fail(queue, claims, f"{type(exc).__name__}: {exc}", policy, report)
            return True
        report.done += done
        report.skipped += len(outcome.results) - done
    return True


def _fail(
    queue: JobQueue[ClaimT, ResultT],
    claims: Sequence[ClaimT],
    message: str,
    policy: RetryPolicy,
    report: Report,
) -> None:
    """Record a failed attempt on ``claims`` and count it in ``report``."""
    message = message.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")
    queue.fail(claims, message, time.time(), policy)
    report.failed += len(claims)
    report.dead += sum(1 for c in claims if c.attempts + 1 >= policy.max_attempts)
    report.note(message)


def _release(queue: JobQueue[ClaimT, ResultT], claims: Sequence[ClaimT]) -> None:
    """Give ``claims`` back if the queue can (else they wait for their lease)."""
    if isinstance(queue, Releasing):
        queue.release(claims)


def _wait_for_retry(queue: JobQueue[ClaimT, ResultT], policy: RetryPolicy) -> bool:
    """Sleep until the next failed or leased row is due if that is soon; False if none."""
    due = queue.next_retry_at()
    if due is None:
        return False
    wait = due - time.time()
    if wait > policy.max_wait_seconds:
        return False
    if wait > 0:
        time.sleep(wait)
    return True


def run_worker(
    step: Callable[[Report], None],
    *,
    poll_seconds: float = 5.0,
    until_idle: bool = False,
    should_stop: Callable[[], bool] = lambda: False,
    on_batch: Callable[[Report], None] | None = None,
) -> Report:
    """A long-lived worker: run ``step`` again and again until stopped.

    ``step`` does one bounded pass (typically :func:`run_batches` with a ``limit`` of
    one batch and ``wait_for_retries=False``) and counts into the report it is given.
    Any number of workers may share a store, because claims are atomic.
    ``should_stop`` is checked between steps, so a stop request never abandons a
    batch half-written. A :class:`StoreError` (the database restarting, say) is
    recorded in the report's errors and the worker tries again after
    ``poll_seconds``; rows of a batch it could not record are claimable again once
    their lease ends.

    Args:
        step: One pass over the due rows, counting into the report it is given.
        poll_seconds: Sleep this long when nothing was due, or after a store error,
            then look again.
        until_idle: Return as soon as a step finds nothing due instead of polling;
            a store error is raised instead of retried.
        should_stop: Return True to end the loop after the current step.
        on_batch: Called with the running totals after each step that did work.

    Returns:
        The totals of every step.

    Raises:
        StoreError: Only with ``until_idle``.
    """
    total = Report()
    started = time.perf_counter()
    while not should_stop():
        report = Report()
        try:
            step(report)
        except StoreError as exc:
            total.add(report)
            if until_idle:
                total.seconds = time.perf_counter() - started
                raise
            total.note(f"{type(exc).__name__}: {exc}")
            _sleep(poll_seconds, should_stop)
            continue
        total.add(report)
        if report.processed:
            if on_batch is not None:
                on_batch(total)
            continue
        if until_idle:
            break
        _sleep(poll_seconds, should_stop)
    total.seconds = time.perf_counter() - started
    return total


def _sleep(seconds: float, should_stop: Callable[[], bool]) -> None:
    """Sleep ``seconds``, waking early once ``should_stop`` returns True."""
    deadline = time.monotonic() + seconds
    while not should_stop() and time.monotonic() < deadline:
        time.sleep(max(0.0, min(0.2, seconds, deadline - time.monotonic())))
