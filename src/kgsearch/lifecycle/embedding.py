"""The embedding lifecycle: embedding texts, runs over the queue, and status.

Rows are written ``pending`` with their embedding text; this module embeds them
through the job runner (:mod:`kgsearch.lifecycle.runner`), one adapter per row
kind over the store's embedding queue. ``embed generate``, ``embed backfill``, the
library's ``embed_pending``, the servers' background steps and ``embed worker`` all
end in :func:`run_embedding`, which never holds a write transaction while the
embedder runs. The module also keeps the stored texts in step with the text rules
(:func:`refresh_texts`), shows the text a row is embedded as (:func:`preview`) and
reports progress (:func:`status_report`, :func:`embedding_todo`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from kgsearch.embed.base import Embedder
from kgsearch.errors import DimensionMismatch, InvalidRequest, KgsearchError, NotFound
from kgsearch.lifecycle.runner import (
    MAX_ERRORS,
    Outcome,
    Report,
    RetryPolicy,
    run_batches,
    run_worker,
)
from kgsearch.model import (
    EmbeddingStatusReport,
    EmbeddingTodo,
    EmbedReport,
    Kind,
    Preview,
)
from kgsearch.store.base import (
    Claim,
    EmbeddingQueue,
    EmbeddingResult,
    GraphReads,
    Lifecycle,
    SearchIndex,
    TextUpdate,
)
from kgsearch.store.counts import status_figures
from kgsearch.text import TEXT_VERSION, EnrichmentConfig, config_fingerprint, text_hash
from kgsearch.writes.rows import Rules, TextRules, refresh_relationship_texts


class TextRefresh(Lifecycle, EmbeddingQueue, GraphReads, Protocol):
    """What rebuilding stored texts reads and writes: meta, rows, endpoints, texts."""


class VectorStore(Lifecycle, EmbeddingQueue, SearchIndex, Protocol):
    """What an embedding run uses: the queue, the recorded model, the vector indexes."""


class StatusStore(Lifecycle, EmbeddingQueue, Protocol):
    """What the embedding status report counts."""


__all__ = [
    "EmbeddingContext",
    "EmbeddingKindQueue",
    "Progress",
    "check_batch_size",
    "embed_pending",
    "embed_step",
    "embedding_todo",
    "preview",
    "record_texts_of_new_store",
    "recorded_graph_aware",
    "refresh_texts",
    "retry_failed",
    "run_embedding",
    "run_embedding_worker",
    "status_report",
    "texts_fingerprint",
]

Progress = Callable[[Kind, int], None]
"""Called as ``progress(kind, rows)`` after each batch."""

# The store meta key recording the rules the stored texts were built with.
_TEXTS_META = "texts"


# texts -------------------------------------------------------------------------------
def texts_fingerprint(enrichment: EnrichmentConfig, graph_aware: bool) -> dict[str, Any]:
    """What the embedding texts depend on: mode, template version and enrichment config."""
    return {
        "graph_aware": graph_aware,
        "version": TEXT_VERSION,
        "enrichment": config_fingerprint(enrichment),
    }


def _recorded(store: Lifecycle) -> dict[str, Any]:
    raw = store.get_meta(_TEXTS_META)
    return dict(json.loads(raw)) if raw else {}


def recorded_graph_aware(store: Lifecycle) -> bool:
    """Whether the store's texts were last built graph-aware (True for a new store)."""
    return bool(_recorded(store).get("graph_aware", True))


def record_texts_of_new_store(store: Lifecycle, wanted: dict[str, Any]) -> None:
    """Record ``wanted`` as the store's text rules if the store holds nothing yet.

    Its rows will all be written with these rules, so no later ``embed generate``
    needs to rebuild their texts.
    """
    if not _recorded(store) and not store.projects():
        store.set_meta(_TEXTS_META, json.dumps(wanted, sort_keys=True))


def refresh_texts(store: TextRefresh, rules: Rules, wanted: dict[str, Any], *, force: bool) -> int:
    """Rebuild stored texts when the rules changed (config, mode, template version).

    Rows whose text changes become pending; unchanged rows are untouched.

    Args:
        store: Whose texts are rebuilt.
        rules: Returns the current text rules (called only when a row is rebuilt).
        wanted: The fingerprint of those rules (:func:`texts_fingerprint`).
        force: Rebuild even when the recorded fingerprint equals ``wanted``.

    Returns:
        The number of rows whose text changed.
    """
    if not force and _recorded(store) == wanted:
        return 0
    changed = 0
    for project in store.projects():
        for batch in store.iter_text_rows(project, Kind.OBJECT):
            text_rules = rules()
            updates = []
            for o in batch:
                text = text_rules.object_text(o.type, o.key, dict(o.properties), o.tags)
                updates.append(TextUpdate(o.id, text, text_hash(text), TEXT_VERSION))
            changed += store.set_texts(project, Kind.OBJECT, updates)
        for rels in store.iter_text_rows(project, Kind.RELATIONSHIP):
            changed += refresh_relationship_texts(store, project, rels)
    store.set_meta(_TEXTS_META, json.dumps(wanted, sort_keys=True))
    return changed


def preview(store: GraphReads, rules: Rules, project: str, id: str) -> Preview:
    """Return the text that is (or would be) embedded for a row, and its status.

    Raises:
        NotFound: No live object, relationship or chunk has this id.
    """
    objects = store.get_objects(project, [id])
    if objects:
        o = objects[0]
        text_rules = rules()
        return Preview(
            kind=Kind.OBJECT,
            id=id,
            text=text_rules.object_text(o.type, o.key, dict(o.properties), o.tags),
            graph_aware=text_rules.graph_aware,
            status=o.embedding.status,
        )
    rels = store.get_relationships(project, [id])
    if rels:
        r = rels[0]
        ends = store.endpoints(project, [r.source_id, r.target_id])
        text = TextRules.relationship_text(
            r.type, ends[r.source_id], ends[r.target_id], r.label, r.description
        )
        return Preview(kind=Kind.RELATIONSHIP, id=id, text=text, status=r.embedding.status)
    chunks = store.get_chunks(project, [id])
    if chunks:
        state = chunks[0].embedding
        return Preview(kind=Kind.CHUNK, id=id, text=state.text, status=state.status)
    raise NotFound(f"no object, relationship or chunk {id!r} in project {project!r}")


# runs --------------------------------------------------------------------------------
@dataclass(frozen=True)
class EmbeddingKindQueue:
    """The runner's view of the store's embedding queue for one row kind.

    Attributes:
        store: Where rows and vectors live.
        kind: The row kind claimed.
        project: Restrict to one project (None: all).
        model: The embedder's model id, recorded with each vector.
        dims: Its dimensions.
    """

    store: EmbeddingQueue
    kind: Kind
    project: str | None
    model: str
    dims: int

    def claim(self, limit: int, now: float, lease_seconds: float) -> list[Claim]:
        """Claim up to ``limit`` due rows of this kind."""
        return self.store.claim(
            self.kind, project=self.project, limit=limit, now=now, lease_seconds=lease_seconds
        )

    def complete(self, results: Sequence[EmbeddingResult], *, seconds: float) -> int:
        """Write vectors; rows whose text changed since the claim are skipped."""
        return self.store.complete(
            self.kind,
            results,
            model=self.model,
            dims=self.dims,
            text_version=TEXT_VERSION,
            elapsed_ms=seconds * 1000,
        )

    def fail(self, claims: Sequence[Claim], error: str, now: float, policy: RetryPolicy) -> None:
        """Record a failed attempt (backoff, then dead)."""
        self.store.fail(
            self.kind,
            claims,
            error,
            now=now,
            max_attempts=policy.max_attempts,
            backoff_seconds=policy.backoff_seconds,
        )

    def next_retry_at(self) -> float | None:
        """When the next failed or leased row of this kind is due."""
        return self.store.next_retry_at(self.kind, project=self.project)


@dataclass(frozen=True)
class _EmbedBatch:
    """The work function: embed a batch of claimed texts."""

    embedder: Embedder

    def __call__(self, claims: Sequence[Claim]) -> Outcome[Claim, EmbeddingResult]:
        dims = self.embedder.dims
        vectors = self.embedder.embed_documents([c.text for c in claims])
        if len(vectors) != len(claims):
            raise KgsearchError(f"embedder returned {len(vectors)} vectors for {len(claims)}")
        if claims and all(np.shape(v)[-1:] != (dims,) for v in vectors):
            raise DimensionMismatch(
                f"embedder {self.embedder.model_id} returned vectors of shape "
                f"{np.shape(vectors[0])}, declared {dims} dims"
            )
        # One bad vector (NaN, Inf, wrong length) fails its own row, never the batch: a
        # store may reject it (PostgreSQL refuses NaN), and search would rank it wrongly.
        results: list[EmbeddingResult] = []
        rejected: dict[str, list[Claim]] = {}
        for claim, vector in zip(claims, vectors, strict=True):
            array = np.asarray(vector, dtype=np.float32)
            if array.shape != (dims,):
                message = f"embedder returned a vector of shape {array.shape}, expected ({dims},)"
                rejected.setdefault(message, []).append(claim)
            elif not np.isfinite(array).all():
                rejected.setdefault("embedder returned a non-finite vector", []).append(claim)
            else:
                results.append(
                    EmbeddingResult(claim.project, claim.id, claim.text, claim.text_hash, array)
                )
        return Outcome(results, rejected)


@dataclass(frozen=True)
class _Raise:
    """A work function that fails every batch with the embedder's probe error."""

    error: KgsearchError

    def __call__(self, claims: Sequence[Claim]) -> Outcome[Claim, EmbeddingResult]:
        raise self.error


def check_batch_size(batch_size: int) -> None:
    """Reject batch sizes outside 1..10000.

    Raises:
        InvalidRequest: ``batch_size`` is out of range.
    """
    if not 1 <= batch_size <= 10_000:
        raise InvalidRequest("batch size must be between 1 and 10000")


def run_embedding(
    store: VectorStore,
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
            ends within ``policy.max_wait_seconds``, sleep until then.

    Returns:
        Counts of what happened.

    Raises:
        DimensionMismatch: The embedder's dims differ from the store's.
        ConfigError: The store was embedded with another model.
    """
    report = Report()
    _embed_into(
        report,
        store,
        embedder,
        kinds=kinds,
        project=project,
        batch_size=batch_size,
        delay_ms=delay_ms,
        policy=policy or RetryPolicy(),
        progress=progress,
        limit=limit,
        wait_for_retries=wait_for_retries,
    )
    return _embed_report(report)


def _embed_into(
    report: Report,
    store: VectorStore,
    embedder: Embedder,
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
    """The body of :func:`run_embedding`, counting into ``report`` as it goes.

    An embedder that must be asked its dimensions (a remote one, before its first
    answer) and fails to say fails one batch of each kind with its error, so the
    rows' attempts are recorded as for any other provider failure.
    """
    started = time.perf_counter()
    try:
        dims = embedder.dims
    except DimensionMismatch:
        raise
    except KgsearchError as exc:
        unprobed = _Raise(exc)
        for kind in kinds:
            run_batches(
                EmbeddingKindQueue(store, kind, project, embedder.model_id, 0),
                unprobed,
                report,
                policy=policy,
                batch_size=batch_size,
                limit=report.processed + batch_size,
                wait_for_retries=False,
            )
        report.seconds = time.perf_counter() - started
        return
    store.set_embedding_model(embedder.model_id, dims)
    work = _EmbedBatch(embedder)
    for kind in kinds:
        run_batches(
            EmbeddingKindQueue(store, kind, project, embedder.model_id, dims),
            work,
            report,
            policy=policy,
            batch_size=batch_size,
            limit=limit,
            delay_ms=delay_ms,
            wait_for_retries=wait_for_retries,
            progress=_per_kind(progress, kind),
            fatal=(DimensionMismatch,),
        )
    report.seconds = time.perf_counter() - started
    if report.done:
        store.build_indexes()


def _per_kind(progress: Progress | None, kind: Kind) -> Callable[[int], None] | None:
    if progress is None:
        return None
    return lambda rows: progress(kind, rows)


def _embed_report(report: Report) -> EmbedReport:
    return EmbedReport(
        processed=report.processed,
        embedded=report.done,
        failed=report.failed,
        dead=report.dead,
        skipped_changed=report.skipped,
        batches=report.batches,
        seconds=report.seconds,
        errors=report.errors[:MAX_ERRORS],
    )


@dataclass(frozen=True)
class EmbeddingContext:
    """What an embedding run needs besides its options.

    Attributes:
        store: Where the rows and vectors live.
        embedder: The model that embeds them.
        policy: Lease, backoff and attempt limit.
    """

    store: VectorStore
    embedder: Embedder
    policy: RetryPolicy


def embed_pending(
    ctx: EmbeddingContext,
    *,
    kinds: Sequence[Kind],
    project: str | None,
    batch_size: int,
    delay_ms: int,
    force: bool,
    progress: Progress | None,
    limit: int | None,
) -> EmbedReport:
    """Embed every due row; with ``force``, re-queue every row of ``kinds`` first.

    See :func:`run_embedding` for the arguments.
    """
    if force:
        for kind in kinds:
            ctx.store.requeue(kind, project=project, statuses=["embedded", "failed", "dead"])
    return run_embedding(
        ctx.store,
        ctx.embedder,
        kinds=kinds,
        project=project,
        batch_size=batch_size,
        delay_ms=delay_ms,
        policy=ctx.policy,
        progress=progress,
        limit=limit,
    )


def embed_step(
    ctx: EmbeddingContext,
    *,
    project: str | None,
    kinds: Sequence[Kind],
    batch_size: int,
) -> EmbedReport:
    """Embed at most one batch of due rows per kind and return at once.

    It never sleeps waiting for a failed row's backoff (a retry due now is still
    taken), so a server's background loop can stop between steps.
    """
    no_wait = replace(ctx.policy, max_wait_seconds=0.0)
    total = Report()
    for kind in kinds:
        step = Report()
        # one run per kind, so each kind gets its own batch (the limit counts a run's rows)
        _embed_into(
            step,
            ctx.store,
            ctx.embedder,
            kinds=[kind],
            project=project,
            batch_size=batch_size,
            delay_ms=0,
            policy=no_wait,
            progress=None,
            limit=batch_size,
            wait_for_retries=True,
        )
        total.add(step)
    return _embed_report(total)


def run_embedding_worker(
    ctx: EmbeddingContext,
    *,
    kinds: Sequence[Kind] = tuple(Kind),
    project: str | None = None,
    batch_size: int = 512,
    poll_seconds: float = 5.0,
    until_idle: bool = False,
    should_stop: Callable[[], bool] = lambda: False,
    on_batch: Callable[[EmbedReport], None] | None = None,
) -> EmbedReport:
    """A long-lived embedding worker: one batch at a time until stopped.

    Any number of workers may run against one store at once: each batch is claimed
    atomically (``FOR UPDATE SKIP LOCKED`` on PostgreSQL, one writer at a time on
    SQLite), so no row is embedded twice. See :func:`kgsearch.lifecycle.runner.run_worker`
    for stopping, leases and store errors.

    Args:
        ctx: The store, the embedder and the retry policy.
        kinds: Which row kinds to embed.
        project: Restrict to one project (None = all).
        batch_size: Rows per claim and per embedder call.
        poll_seconds: Sleep this long when nothing is due, or after a store error.
        until_idle: Return as soon as nothing is due; a store error is raised.
        should_stop: Return True to end the loop after the current batch.
        on_batch: Called with the running totals after each batch.

    Raises:
        StoreError: Only with ``until_idle``.
    """

    def step(report: Report) -> None:
        _embed_into(
            report,
            ctx.store,
            ctx.embedder,
            kinds=kinds,
            project=project,
            batch_size=batch_size,
            delay_ms=0,
            policy=ctx.policy,
            progress=None,
            limit=batch_size,
            wait_for_retries=False,
        )

    def report_batch(total: Report) -> None:
        if on_batch is not None:
            on_batch(_embed_report(total))

    return _embed_report(
        run_worker(
            step,
            poll_seconds=poll_seconds,
            until_idle=until_idle,
            should_stop=should_stop,
            on_batch=report_batch,
        )
    )


def retry_failed(store: EmbeddingQueue, project: str | None, *, dead: bool) -> int:
    """Re-queue failed rows now (and dead ones with ``dead``); returns how many."""
    statuses = ["failed", "dead"] if dead else ["failed"]
    return sum(store.requeue(k, project=project, statuses=statuses) for k in Kind)


# status ------------------------------------------------------------------------------
def embedding_todo(
    store: EmbeddingQueue, project: str | None, kinds: Sequence[Kind]
) -> EmbeddingTodo:
    """Rows due for embedding (pending or failed) per kind, of one project or all."""
    todo = {k.value: 0 for k in kinds}
    for c in store.embedding_counts(project):
        if c.kind.value in todo and (project is None or c.project == project):
            todo[c.kind.value] += c.by_status.get("pending", 0) + c.by_status.get("failed", 0)
    return EmbeddingTodo(by_kind=todo, total=sum(todo.values()))


def status_report(store: StatusStore, project: str | None) -> EmbeddingStatusReport:
    """Counts by status per project and kind, percent embedded, stale, failure rate."""
    info = store.info()
    counts = [
        (c.project, c.kind.value, c.by_status, c.stale) for c in store.embedding_counts(project)
    ]
    figures = status_figures(counts, store.embedding_latency(), info.embedding_model, info.dims)
    return EmbeddingStatusReport.model_validate(figures)
