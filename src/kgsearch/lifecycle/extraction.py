"""The extraction job: one task per chunk, run on the one job runner.

:func:`queue_chunks` queues a chunk under ``(project, "extract", chunk id)`` with an
input hash of its text and the extractor's version, so an unchanged chunk is never
extracted twice and a changed one (or a new model or prompt) is. :func:`run_extraction`
claims chunks, runs the extractor with no transaction open, writes what it kept into
the graph (:func:`kgsearch.writes.extracted.add_extractions`) and records the whole
extraction (entities, relationships, rejections with reasons, tokens, model, prompt)
as the task's result. A reply that cannot be used fails the chunk with the raw reply
in its error; after the policy's attempts it is ``dead`` until retried.

No chunk fails another: the extractor fails chunks one by one, and a batch whose graph
write fails (a store refusing a value) is written again chunk by chunk, so only the
chunk that cannot be written fails, with the store's reason.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kgsearch.errors import NotFound
from kgsearch.extract.glean import storable
from kgsearch.extract.schema import ChunkText, ExtractionResult, Extractor
from kgsearch.lifecycle.runner import Outcome, Report, RetryPolicy
from kgsearch.lifecycle.tasks import TaskDone, run_tasks
from kgsearch.llm.replies import chunk_texts
from kgsearch.model import Chunk
from kgsearch.reports import ExtractionRecord, ExtractionReport, ExtractionStatus
from kgsearch.resolve.match import MatchRules
from kgsearch.store.base import GraphReads, Lifecycle, TaskQueue
from kgsearch.store.records import Task, TaskIn
from kgsearch.text.chunking import mask_spans, unmined_spans
from kgsearch.text.sections import markdown_unmined
from kgsearch.writes.extracted import BuiltGraph, ChunkExtraction, add_extractions
from kgsearch.writes.forget import forget_chunks
from kgsearch.writes.graph import WriteContext

__all__ = [
    "EXTRACT_JOB",
    "ExtractionContext",
    "Totals",
    "extraction_record",
    "input_hash",
    "mined_text",
    "preview_text",
    "queue_chunks",
    "retry",
    "run_extraction",
    "status_report",
]

EXTRACT_JOB = "extract"
_RULES = MatchRules()
"""Entity resolution's type table: which extracted types may land on a stored type."""
_RAW_KEPT = 4000
_UNDONE = ("pending", "running", "failed")


def mined_text(chunk: Chunk) -> str:
    """The text an extractor reads: the chunk's text with its unmined ranges (code,
    tables; ``metadata["unmined"]``) blanked out, offsets kept."""
    return mask_spans(chunk.text, unmined_spans(chunk.text, chunk.metadata))


def preview_text(text: str) -> str:
    """What an extractor reads of text given directly, as ingest reads it: Markdown
    with its headings, code and tables blanked out."""
    return mask_spans(text, markdown_unmined(text))


def input_hash(text: str, extractor_version: str) -> str:
    """What a chunk's extraction depends on: its text and the extractor's version
    (model, prompt id and version, domain, settings)."""
    digest = hashlib.sha256()
    for part in (extractor_version, text):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


def queue_chunks(
    store: TaskQueue, project: str, chunks: Sequence[Chunk], extractor: Extractor, domain: str = ""
) -> int:
    """Queue chunks for extraction; returns how many became pending (unchanged ones
    already extracted with this extractor version stay done). The payload names the
    extractor and domain, so a later run (``kgsearch extract run``) uses the same."""
    version = extractor.version
    return store.enqueue_tasks(
        project,
        EXTRACT_JOB,
        [
            TaskIn(
                row_id=c.id,
                input_hash=input_hash(mined_text(c), version),
                payload={"extractor": extractor.name, "domain": domain, "version": version},
            )
            for c in chunks
        ],
    )


class ExtractionStore(Lifecycle, GraphReads, TaskQueue, Protocol):
    """What an extraction run reads beside its writes: the chunks and the task queue
    (and its write run, :meth:`~kgsearch.store.base.Lifecycle.write_run`)."""


@dataclass
class Totals:
    """Running totals of an extraction run, for progress bars and the report."""

    chunks: int = 0
    entities: int = 0
    relationships: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cost_usd: float | None = None

    def add(self, result: ExtractionResult) -> None:
        """Count one chunk's extraction."""
        self.chunks += 1
        self.entities += len(result.graph.entities)
        self.relationships += len(result.graph.relationships)
        self.rejected.update(r.reason for r in result.rejected)
        self.prompt_tokens += result.prompt_tokens
        self.completion_tokens += result.completion_tokens
        self.calls += result.calls
        if result.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + result.cost_usd

    @property
    def cost(self) -> float | None:
        """Estimated US dollars; 0 when no model was called, None when a called model
        has no known price."""
        return 0.0 if self.cost_usd is None and self.calls == 0 else self.cost_usd

    def report(self, run: Report, left: int = 0) -> ExtractionReport:
        """The public report of a run with these totals (``left``: chunks undone)."""
        return ExtractionReport(
            processed=run.processed,
            extracted=self.chunks,
            failed=run.failed,
            dead=run.dead,
            entities=self.entities,
            relationships=self.relationships,
            rejected=dict(self.rejected.most_common()),
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            calls=self.calls,
            cost_usd=self.cost,
            seconds=round(run.seconds, 3),
            errors=list(run.errors),
            left=left,
        )


@dataclass(frozen=True)
class ExtractionContext:
    """What an extraction run needs.

    Attributes:
        store: Chunks, the task queue and the graph.
        extractor: The extractor of a task, by the extractor name and domain it was
            queued with.
        writes: The write context of a project (graph rows go through it).
        retry: Lease, backoff and attempt limit.
    """

    store: ExtractionStore
    extractor: Callable[[str, str], Extractor]
    writes: Callable[[str], WriteContext]
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    totals: Totals = field(default_factory=Totals)


def _failure(result: ExtractionResult) -> str:
    raw = "\n---\n".join(result.raw)
    if len(raw) > _RAW_KEPT:
        raw = raw[:_RAW_KEPT] + f"… [{len(raw) - _RAW_KEPT} more characters]"
    return storable(f"{result.error}\nraw reply:\n{raw}" if raw else str(result.error))


def _record(result: ExtractionResult, built: dict[str, int]) -> dict[str, Any]:
    record = result.model_dump(mode="json")
    if not result.error:
        record["raw"] = []  # kept only when parsing failed (it is in the error then)
    record["built"] = built
    return _storable_record(record)


_SURROGATE = re.compile("[\ud800-\udfff]")
_NUL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def _storable_record(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with lone surrogates and NUL (a malformed piece of a reply keeps them)
    written as visible escapes, which every store keeps."""
    text = json.dumps(record, ensure_ascii=False)
    if not _SURROGATE.search(text) and "\\u0000" not in text:
        return record
    text = _SURROGATE.sub(lambda m: f"\\\\u{ord(m.group()):04x}", text)
    text = _NUL_ESCAPE.sub(lambda m: m.group(1) + "\\\\u0000", text)
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _work(ctx: ExtractionContext, tasks: Sequence[Task]) -> Outcome[Task, TaskDone]:
    done: list[TaskDone] = []
    failures: dict[str, list[Task]] = defaultdict(list)
    groups: dict[tuple[str, str, str], list[Task]] = defaultdict(list)
    for task in tasks:
        name, domain = task.payload.get("extractor", ""), task.payload.get("domain", "")
        groups[(task.project, str(name), str(domain))].append(task)
    for group, claimed in groups.items():
        _work_group(ctx, group, claimed, done, failures)
    return Outcome(results=done, failures=failures)


def _work_group(
    ctx: ExtractionContext,
    group: tuple[str, str, str],
    claimed: Sequence[Task],
    done: list[TaskDone],
    failures: dict[str, list[Task]],
) -> None:
    """Extract and write the tasks of one (project, extractor, domain): deleted
    chunks and chunks with nothing to mine are skipped, failed extractions and chunks
    the store refuses fail, the others are done with their record."""
    project, name, domain = group
    chunks = {c.id: c for c in ctx.store.get_chunks(project, [t.row_id for t in claimed])}
    gone = [t for t in claimed if t.row_id not in chunks]
    done.extend(TaskDone(t, {"skipped": "chunk deleted"}) for t in gone)
    texts = {t.row_id: mined_text(chunks[t.row_id]) for t in claimed if t.row_id in chunks}
    # a chunk of code or tables only is kept for search but has nothing to mine
    blank = [t for t in claimed if t.row_id in texts and not texts[t.row_id].strip()]
    if blank:  # what an earlier extraction of them contributed goes
        forget_chunks(ctx.writes(project), [t.row_id for t in blank])
        done.extend(
            TaskDone(t, {"skipped": "nothing to mine (code or tables only)"}) for t in blank
        )
    live = [t for t in claimed if texts.get(t.row_id, "").strip()]
    if not live:
        return
    extractor = ctx.extractor(name, domain)
    # the replies note the chunks that used them: a deleted document takes its own
    with chunk_texts({t.row_id: texts[t.row_id] for t in live}):
        results = extractor.extract([ChunkText(t.row_id, texts[t.row_id]) for t in live])
    kept: list[tuple[Task, ExtractionResult]] = []
    for task, result in zip(live, results, strict=True):
        if result.error:
            failures[_failure(result)].append(task)
        else:
            kept.append((task, result))
    empty = BuiltGraph()
    for together, built in _write_each(ctx.writes(project), chunks, kept, failures):
        for task, result in together:
            ctx.totals.add(result)
            counts = built.per_chunk.get(task.row_id, empty).as_dict()
            done.append(TaskDone(task, _record(result, counts)))


def _write_each(
    writes: WriteContext,
    chunks: Mapping[str, Chunk],
    kept: Sequence[tuple[Task, ExtractionResult]],
    failures: dict[str, list[Task]],
) -> list[tuple[Sequence[tuple[Task, ExtractionResult]], BuiltGraph]]:
    """Write the kept extractions together, or, when the store refuses that, one by
    one, so that only the chunk it refuses fails (into ``failures``)."""
    try:
        return [(kept, _write(writes, chunks, kept))]
    except Exception:
        written: list[tuple[Sequence[tuple[Task, ExtractionResult]], BuiltGraph]] = []
        for one in kept:
            try:
                written.append(([one], _write(writes, chunks, [one])))
            except Exception as exc:
                message = f"write_failed: {type(exc).__name__}: {exc}"
                failures[storable(message)].append(one[0])
        return written


def _write(
    writes: WriteContext,
    chunks: Mapping[str, Chunk],
    kept: Sequence[tuple[Task, ExtractionResult]],
) -> BuiltGraph:
    """Write extractions' graph in one transaction. (Writing it in a background thread
    while the next batch is extracted was tried: the GIL made spaCy slower by more
    than the writes took, 79 s against 67 s for MuSiQue.)"""
    # A chunk extracted before (a new model or prompt) first loses what its last
    # extraction contributed, so nothing it no longer says stays in the graph.
    forget_chunks(writes, [t.row_id for t, _ in kept])
    return add_extractions(
        writes,
        [ChunkExtraction(t.row_id, chunks[t.row_id].source_id, r) for t, r in kept],
        compatible=_RULES.types_compatible,
    )


def run_extraction(
    ctx: ExtractionContext,
    *,
    project: str | None = None,
    batch_size: int = 16,
    limit: int | None = None,
    wait_for_retries: bool = True,
    progress: Callable[[Totals], None] | None = None,
    chunk_ids: Sequence[str] | None = None,
) -> ExtractionReport:
    """Extract every due chunk (pending, failed past its backoff, or leased by a
    runner that died) and build the graph from what each extraction kept.

    Args:
        ctx: The store, the extractor, write contexts and retry policy.
        project: One project, or None for all.
        batch_size: Chunks per claim (and per extractor call and graph write).
        limit: Stop after about this many chunks.
        wait_for_retries: Sleep for a retry or an expiring lease that is due soon.
        progress: Called with the running totals after each batch.
        chunk_ids: Only these chunks' tasks (None: every due chunk).
    """
    with ctx.store.write_run():  # each object changed re-indexed once (SQLite)
        run = run_tasks(
            ctx.store,
            EXTRACT_JOB,
            lambda tasks: _work(ctx, tasks),
            project=project,
            policy=ctx.retry,
            batch_size=batch_size,
            limit=limit,
            wait_for_retries=wait_for_retries,
            progress=None if progress is None else lambda _n: progress(ctx.totals),
            row_ids=chunk_ids,
        )
    left = _left(ctx.store, project, chunk_ids)
    if left:
        run.note(_left_message(left))
    return ctx.totals.report(run, sum(left.values()))


def _left(store: TaskQueue, project: str | None, chunk_ids: Sequence[str] | None) -> Counter[str]:
    """Chunks of a run's scope still open (pending, running, failed), by status."""
    if chunk_ids is not None and project is not None:
        states = store.get_tasks(project, EXTRACT_JOB, chunk_ids)
        return Counter(s.status for s in states if s.status in _UNDONE)
    counts = store.task_counts(EXTRACT_JOB, project=project)
    return Counter({s: counts[s] for s in _UNDONE if counts.get(s)})


def _left_message(left: Counter[str]) -> str:
    parts = []
    if left["running"]:
        parts.append(
            f"{left['running']} claimed by another run, or by one that was killed "
            "(`kgsearch extract retry --claimed` takes them back once no run is active)"
        )
    if left["failed"]:
        parts.append(f"{left['failed']} failed, waiting for their retry")
    if left["pending"]:
        parts.append(f"{left['pending']} not started (the run stopped early)")
    total = sum(left.values())
    return (
        f"left_undone: {total} chunks not extracted: "
        + "; ".join(parts)
        + ("; run `kgsearch extract run` again")
    )


_ALL = 1_000_000_000


def status_report(store: TaskQueue, project: str | None) -> ExtractionStatus:
    """Chunks per status and, over every recorded extraction, what was kept, what was
    rejected by reason, tokens and cost; the last errors of failed and dead chunks."""
    counts = store.task_counts(EXTRACT_JOB, project=project)
    totals = Totals()
    extractors: Counter[str] = Counter()
    failures: dict[str, str] = {}
    for state in store.list_tasks(EXTRACT_JOB, project=project, limit=_ALL):
        if state.status in ("failed", "dead") and len(failures) < 10:
            failures[state.row_id] = (state.last_error or "")[:500]
        record = state.result
        if state.status != "done" or not record or "graph" not in record:
            continue
        result = ExtractionResult.model_validate({k: v for k, v in record.items() if k != "built"})
        totals.add(result)
        label = " ".join(
            part
            for part in (
                result.extractor,
                result.model,
                f"{result.prompt_id}@{result.prompt_version}" if result.prompt_id else "",
            )
            if part
        )
        extractors[label] += 1
    return ExtractionStatus(
        counts=counts,
        entities=totals.entities,
        relationships=totals.relationships,
        rejected=dict(totals.rejected.most_common()),
        prompt_tokens=totals.prompt_tokens,
        completion_tokens=totals.completion_tokens,
        cost_usd=totals.cost,
        extractors=dict(extractors.most_common()),
        failures=failures,
    )


def extraction_record(store: TaskQueue, project: str, chunk_id: str) -> ExtractionRecord:
    """One chunk's extraction task and recorded result.

    Raises:
        NotFound: The chunk was never queued for extraction.
    """
    found = store.get_tasks(project, EXTRACT_JOB, [chunk_id])
    if not found:
        raise NotFound(f"chunk {chunk_id!r} has no extraction (was it ingested?)")
    (state,) = found
    return ExtractionRecord(
        chunk_id=chunk_id,
        status=state.status,
        attempts=state.attempts,
        last_error=state.last_error,
        result=state.result,
    )


def retry(
    store: TaskQueue, project: str | None, *, dead: bool = False, claimed: bool = False
) -> int:
    """Make failed chunks (and dead ones with ``dead``) pending now, and take back
    claims whose lease has ended (and every claim with ``claimed``: only when no other
    run is active, since a live run's claims are taken too); returns how many.

    Args:
        store: The task queue.
        project: One project, or None for all.
        dead: Also re-queue chunks that gave up.
        claimed: Also take back claims still under their lease (a run killed with
            ``kill -9`` or lost with its machine holds them until the lease ends).
    """
    statuses = ["failed", "dead"] if dead else ["failed"]
    requeued = store.requeue_tasks(EXTRACT_JOB, project=project, statuses=statuses)
    now = time.time()
    held = [
        Task(s.project, s.row_id, s.input_hash, s.attempts, s.payload)
        for s in store.list_tasks(EXTRACT_JOB, project=project, statuses=["running"], limit=_ALL)
        if claimed or s.claimed_until <= now
    ]
    return requeued + (store.release_tasks(EXTRACT_JOB, held) if held else 0)
