"""The embedding lifecycle runner: claim due rows, embed outside any write, record.

``run_embedding`` is what ``embed generate``, ``embed backfill``, the library's
``embed_pending`` and a worker all call. It never holds a write transaction while
the embedder runs; it terminates because every failure either succeeds later or
reaches ``dead`` after a bounded number of attempts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgsearch.embed.base import Embedder
from kgsearch.errors import DimensionMismatch, KgsearchError, StoreError
from kgsearch.model import Kind
from kgsearch.store.base import Claim, EmbeddingResult, Store
from kgsearch.text import TEXT_VERSION

__all__ = ["EmbedReport", "RetryPolicy", "run_embedding", "run_worker", "status_report"]

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


@dataclass
class EmbedReport:
    """What one run did, per kind and in total."""

    processed: int = 0
    embedded: int = 0
    failed: int = 0
    dead: int = 0
    skipped_changed: int = 0
    batches: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """Plain dict for JSON output."""
        return {
            "processed": self.processed,
            "embedded": self.embedded,
            "failed": self.failed,
            "dead": self.dead,
            "skipped_changed": self.skipped_changed,
            "batches": self.batches,
            "seconds": round(self.seconds, 3),
            "errors": self.errors[:MAX_ERRORS],
        }


Progress = Callable[[Kind, int], None]


def _embed_batch(
    store: Store,
    embedder: Embedder,
    kind: Kind,
    claims: Sequence[Claim],
    policy: RetryPolicy,
    report: EmbedReport,
) -> None:
    started = time.perf_counter()
    try:
        vectors = embedder.embed_documents([c.text for c in claims])
        if len(vectors) != len(claims):
            raise KgsearchError(f"embedder returned {len(vectors)} vectors for {len(claims)}")
        if claims and all(np.shape(v)[-1:] != (embedder.dims,) for v in vectors):
            raise DimensionMismatch(
                f"embedder {embedder.model_id} returned vectors of shape "
                f"{np.shape(vectors[0])}, declared {embedder.dims} dims"
            )
    except DimensionMismatch:
        raise
    except Exception as exc:  # any provider failure is recorded on the rows, never raised
        _fail(store, kind, claims, f"{type(exc).__name__}: {exc}", policy, report)
        return
    elapsed_ms = (time.perf_counter() - started) * 1000
    # One bad vector (NaN, Inf, wrong length) fails its own row, never the batch: a
    # store may reject it (PostgreSQL refuses NaN), and search would rank it wrongly.
    results: list[EmbeddingResult] = []
    rejected: dict[str, list[Claim]] = {}
    for claim, vector in zip(claims, vectors, strict=True):
        array = np.asarray(vector, dtype=np.float32)
        if array.shape != (embedder.dims,):
            message = (
                f"embedder returned a vector of shape {array.shape}, expected ({embedder.dims},)"
            )
            rejected.setdefault(message, []).append(claim)
        elif not np.isfinite(array).all():
            rejected.setdefault("embedder returned a non-finite vector", []).append(claim)
        else:
            results.append(
                EmbeddingResult(claim.project, claim.id, claim.text, claim.text_hash, array)
            )
    for message, bad in rejected.items():
        _fail(store, kind, bad, message, policy, report)
    if not results:
        return
    done = store.complete(
        kind,
        results,
        model=embedder.model_id,
        dims=embedder.dims,
        text_version=TEXT_VERSION,
        elapsed_ms=elapsed_ms,
    )
    report.embedded += done
    report.skipped_changed += len(results) - done


def _fail(
    store: Store,
    kind: Kind,
    claims: Sequence[Claim],
    message: str,
    policy: RetryPolicy,
    report: EmbedReport,
) -> None:
    """Record a failed attempt on ``claims`` and count it in ``report``."""
    store.fail(
        kind,
        claims,
        message,
        now=time.time(),
        max_attempts=policy.max_attempts,
        backoff_seconds=policy.backoff_seconds,
    )
    report.failed += len(claims)
    report.dead += sum(1 for c in claims if c.attempts + 1 >= policy.max_attempts)
    _note(report, message)


def _note(report: EmbedReport, message: str) -> None:
    """Keep the first ``MAX_ERRORS`` distinct error messages of a run."""
    if len(report.errors) < MAX_ERRORS and message not in report.errors:
        report.errors.append(message)


def run_embedding(
    store: Store,
    embedder: Embedder,
    *,
    kinds: Sequence[Kind] = tuple(Kind),
    project: str | None = None,
    batch_size: int = 512,
    delay_ms: int = 0,
    policy: RetryPolicy | None = None,
    progress: Progress | None = None,
    limit: int | None = None,
    wait_for_retries: bool = True,
) -> EmbedReport:
    """Embed every due row of the given kinds, batch by batch, until none is due.

    Args:
        store: Where rows and vectors live.
        embedder: The provider; its model and dims are checked against the store first.
        kinds: Which row kinds to embed.
        project: Restrict to one project (None = all).
        batch_size: Rows per claim and per embedder call.
        delay_ms: Pause between batches (throttling for rate-limited providers).
        policy: Retry/backoff policy.
        progress: Called with (kind, rows done) after each batch.
        limit: Stop after about this many rows (None = until done).
        wait_for_retries: When nothing is due but a backoff or another runner's lease
            ends within ``policy.max_wait_seconds``, sleep until then (a worker that
            polls anyway passes False).

    Returns:
        Counts of what happened.

    Raises:
        DimensionMismatch: The embedder's dims differ from the store's.
        ConfigError: The store was embedded with another model.
    """
    report = EmbedReport()
    _run_embedding(
        store,
        embedder,
        report,
        kinds=kinds,
        project=project,
        batch_size=batch_size,
        delay_ms=delay_ms,
        policy=policy or RetryPolicy(),
        progress=progress,
        limit=limit,
        wait_for_retries=wait_for_retries,
    )
    return report


def _run_embedding(
    store: Store,
    embedder: Embedder,
    report: EmbedReport,
    *,
    kinds: Sequence[Kind],
    project: str | None,
    batch_size: int,
    delay_ms: int,
    policy: RetryPolicy,
    progress: Progress | None,
    limit: int | None,
    wait_for_retries: bool,
) -> None:
    """The body of :func:`run_embedding`, counting into ``report`` as it goes (so a
    caller that catches an error still has the counts of the batches done before it)."""
    store.set_embedding_model(embedder.model_id, embedder.dims)
    started = time.perf_counter()
    for kind in kinds:
        while limit is None or report.processed < limit:
            claims = store.claim(
                kind,
                project=project,
                limit=batch_size,
                now=time.time(),
                lease_seconds=policy.lease_seconds,
            )
            if not claims:
                if not wait_for_retries or not _wait_for_retry(store, kind, project, policy):
                    break
                continue
            _embed_batch(store, embedder, kind, claims, policy, report)
            report.processed += len(claims)
            report.batches += 1
            if progress is not None:
                progress(kind, len(claims))
            if delay_ms:
                time.sleep(delay_ms / 1000)
    report.seconds = time.perf_counter() - started
    if report.embedded:
        store.build_indexes()


def run_worker(
    store: Store,
    embedder: Embedder,
    *,
    kinds: Sequence[Kind] = tuple(Kind),
    project: str | None = None,
    batch_size: int = 512,
    policy: RetryPolicy | None = None,
    poll_seconds: float = 5.0,
    until_idle: bool = False,
    should_stop: Callable[[], bool] = lambda: False,
    on_batch: Callable[[EmbedReport], None] | None = None,
) -> EmbedReport:
    """A long-lived embedding worker: one batch at a time until stopped.

    Any number of workers may run against one store at once: each batch is claimed
    atomically (``FOR UPDATE SKIP LOCKED`` on PostgreSQL, one writer at a time on
    SQLite), so no row is embedded twice, and rows claimed by a worker that died are
    claimable again once its lease ends. ``should_stop`` is checked between batches,
    so a stop request never abandons a batch half-written. A store error (the
    database restarting, say) is recorded in the report's errors and the worker
    tries again after ``poll_seconds``; rows of a batch it could not record are
    claimable again once their lease ends.

    Args:
        poll_seconds: Sleep this long when nothing is due, or after a store error,
            then look again.
        until_idle: Return as soon as nothing is due instead of polling; a store
            error is raised instead of retried.
        should_stop: Return True to end the loop after the current batch.
        on_batch: Called with the running totals after each batch.

    Raises:
        StoreError: Only with ``until_idle``.
    """
    policy = policy or RetryPolicy()
    total = EmbedReport()
    started = time.perf_counter()
    while not should_stop():
        step = EmbedReport()
        try:
            _run_embedding(
                store,
                embedder,
                step,
                kinds=kinds,
                project=project,
                batch_size=batch_size,
                delay_ms=0,
                policy=policy,
                progress=None,
                limit=batch_size,
                wait_for_retries=False,
            )
        except StoreError as exc:
            _add(total, step)
            if until_idle:
                total.seconds = time.perf_counter() - started
                raise
            _note(total, f"{type(exc).__name__}: {exc}")
            _sleep(poll_seconds, should_stop)
            continue
        _add(total, step)
        if step.processed:
            if on_batch is not None:
                on_batch(total)
            continue
        if until_idle:
            break
        _sleep(poll_seconds, should_stop)
    total.seconds = time.perf_counter() - started
    return total


def _add(total: EmbedReport, step: EmbedReport) -> None:
    """Add the counts and errors of ``step`` to ``total``."""
    for name in ("processed", "embedded", "failed", "dead", "skipped_changed", "batches"):
        setattr(total, name, getattr(total, name) + getattr(step, name))
    for message in step.errors:
        _note(total, message)


def _sleep(seconds: float, should_stop: Callable[[], bool]) -> None:
    """Sleep ``seconds``, waking early once ``should_stop`` returns True."""
    deadline = time.monotonic() + seconds
    while not should_stop() and time.monotonic() < deadline:
        time.sleep(max(0.0, min(0.2, seconds, deadline - time.monotonic())))


def _wait_for_retry(store: Store, kind: Kind, project: str | None, policy: RetryPolicy) -> bool:
    """Sleep until the next failed or leased row is due if that is soon; False if none."""
    due = store.next_retry_at(kind, project=project)
    if due is None:
        return False
    wait = due - time.time()
    if wait > policy.max_wait_seconds:
        return False
    if wait > 0:
        time.sleep(wait)
    return True


def status_report(store: Store, project: str | None) -> dict[str, Any]:
    """Counts by status per project and kind, percent embedded, stale, failure rate."""
    rows = []
    totals: dict[str, int] = {}
    stale = 0
    for c in store.embedding_counts(project):
        embedded = c.by_status.get("embedded", 0)
        rows.append(
            {
                "project": c.project,
                "kind": c.kind.value,
                "total": c.total,
                **{s: c.by_status.get(s, 0) for s in ("pending", "embedded", "failed", "dead")},
                "stale": c.stale,
                "percent_embedded": round(100.0 * embedded / c.total, 2) if c.total else 100.0,
            }
        )
        for status, n in c.by_status.items():
            totals[status] = totals.get(status, 0) + n
        stale += c.stale
    total = sum(totals.values())
    texts, ms = store.embedding_latency()
    info = store.info()
    bad = totals.get("failed", 0) + totals.get("dead", 0)
    return {
        "model": info.embedding_model,
        "dims": info.dims,
        "rows": rows,
        "total": total,
        "embedded": totals.get("embedded", 0),
        "pending": totals.get("pending", 0),
        "failed": totals.get("failed", 0),
        "dead": totals.get("dead", 0),
        "stale": stale,
        "percent_embedded": round(100.0 * totals.get("embedded", 0) / total, 2) if total else 100.0,
        "failure_rate": round(bad / total, 4) if total else 0.0,
        "mean_latency_ms_per_text": round(ms / texts, 3) if texts else None,
    }
