"""Ingest: documents become sources and chunks, and their chunks extraction tasks.

Storing never waits for an extractor: chunks are written (``pending`` for embedding)
and queued for extraction in the same call, and the extraction job runs after (or in
another process). A document whose text is unchanged writes nothing; chunks that a
changed document no longer has are deleted with their extraction tasks and what
they contributed to the graph; :func:`delete_documents` does the same for whole
documents.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from kgsearch.document_values import Document
from kgsearch.errors import NotFound
from kgsearch.extract.schema import Extractor, TokenEstimator
from kgsearch.io.documents import DocumentProblem
from kgsearch.lifecycle.extraction import EXTRACT_JOB, queue_chunks
from kgsearch.llm.replies import REPLIES, forget_chunk_replies
from kgsearch.model import Chunk
from kgsearch.reports import DeleteReport, IngestProblem, IngestReport
from kgsearch.store.base import GraphReads, TaskQueue
from kgsearch.text.chunking import mask_spans, unmined_spans
from kgsearch.writes.batch import GraphBatch, write_batch
from kgsearch.writes.documents import chunk_document, store_many
from kgsearch.writes.forget import forget_chunks
from kgsearch.writes.graph import WriteContext

__all__ = [
    "ChunkQueue",
    "delete_chunks",
    "delete_documents",
    "estimate",
    "queue_stored",
    "store_documents",
    "with_problems",
]

_GROUP = 256
"""Documents stored in one transaction, their chunks queued in one task-queue write."""


class ChunkQueue(GraphReads, TaskQueue, Protocol):
    """Reads chunks and queues them for extraction."""


def delete_chunks(ctx: WriteContext, chunk_ids: Sequence[str]) -> DeleteReport:
    """Delete chunks with their extraction tasks, mention links, what they
    contributed to the graph (rows no other chunk supports go; the rest have their
    descriptions derived again from the remaining chunks) and the cached model replies
    no other chunk used, in one transaction."""
    store, project = ctx.store, ctx.project
    live = [c.id for c in store.get_chunks(project, list(dict.fromkeys(chunk_ids)))]
    inner = replace(ctx, after_commit=None)
    with store.transaction():
        rebuilt = forget_chunks(inner, live)
        deleted = write_batch(store, project, GraphBatch(delete_chunks=live)).chunks_deleted
        store.delete_tasks(project, EXTRACT_JOB, live)
        _forget_replies(ctx, live)
    ctx.committed()
    return DeleteReport(sources=0, chunks=deleted, **rebuilt.as_dict())


def _forget_replies(ctx: WriteContext, chunk_ids: Sequence[str]) -> None:
    """Remove the cached model replies only these (deleted) chunks used."""
    store, project = ctx.store, ctx.project
    forget_chunk_replies(
        store,
        f"{REPLIES}/{project}",
        chunk_ids,
        lambda ids: [c.id for c in store.get_chunks(project, list(ids))],
    )


def delete_documents(ctx: WriteContext, source_ids: Sequence[str]) -> DeleteReport:
    """Delete sources and everything that came from them: their chunks, extraction
    tasks, mention links and contributions to the graph (see :func:`delete_chunks`),
    in one transaction. Unknown ids are skipped (the report counts what went)."""
    store, project = ctx.store, ctx.project
    wanted = list(dict.fromkeys(source_ids))
    inner = replace(ctx, after_commit=None)
    with store.transaction():
        report = delete_chunks(inner, store.chunk_ids_of(project, wanted))
        sources = write_batch(store, project, GraphBatch(delete_sources=wanted)).sources_deleted
    ctx.committed()
    return report.model_copy(update={"sources": sources})


def store_documents(
    ctx: WriteContext,
    documents: Sequence[Document],
    *,
    extractor: Extractor | None,
    domain: str,
    max_chars: int,
    progress: Callable[[Document], None] | None = None,
) -> IngestReport:
    """Store documents and queue their new or changed chunks for extraction.

    Args:
        ctx: Where the rows go.
        documents: The documents read.
        extractor: Queue chunks for this extractor (None: store only).
        domain: The domain the chunks are extracted in.
        max_chars: The largest chunk, in characters.
        progress: Called after each document.
    """
    counts: Counter[str] = Counter()
    inner = replace(ctx, after_commit=None)
    for start in range(0, len(documents), _GROUP):
        # A few hundred documents per transaction and per enqueue: a commit and an
        # enqueue per document were a large part of the ingest overhead.
        with ctx.store.transaction():
            counts += _store_group(
                inner, documents[start : start + _GROUP], extractor, domain, max_chars, progress
            )
        ctx.committed()
    return IngestReport(
        documents=len(documents),
        unchanged=counts["unchanged"],
        chunks=counts["chunks"],
        queued=counts["queued"],
        removed=counts["removed"],
    )


def _store_group(
    ctx: WriteContext,
    documents: Sequence[Document],
    extractor: Extractor | None,
    domain: str,
    max_chars: int,
    progress: Callable[[Document], None] | None,
) -> Counter[str]:
    store, project = ctx.store, ctx.project
    counts: Counter[str] = Counter()
    waiting: dict[str, Chunk] = {}  # by id: a document given twice is queued once
    for document, result in zip(
        documents, store_many(ctx, documents, max_chars=max_chars), strict=True
    ):
        counts["unchanged"] += result.unchanged
        counts["chunks"] += len(result.chunks)
        if result.removed:
            forget_chunks(ctx, result.removed)
            store.delete_tasks(project, EXTRACT_JOB, result.removed)
            _forget_replies(ctx, result.removed)
            counts["removed"] += len(result.removed)
            for gone in result.removed:  # a document given twice, changed in between
                waiting.pop(gone, None)
        waiting.update((c.id, c) for c in result.chunks)
        if progress is not None:
            progress(document)
    if extractor is not None:
        counts["queued"] += queue_chunks(store, project, list(waiting.values()), extractor, domain)
    return counts


def estimate(
    documents: Sequence[Document], *, max_chars: int, extractor: Extractor | None
) -> dict[str, object]:
    """A dry run's forecast: documents, chunks, characters, and the prompt and
    completion tokens and cost the extractor would take (0 without a model)."""
    texts = [
        mask_spans(c.text, unmined_spans(c.text, c.metadata))
        for d in documents
        for c in chunk_document(d, max_chars)
    ]
    prompt, completion, cost = 0, 0, 0.0 if extractor is not None else None
    if isinstance(extractor, TokenEstimator):
        prompt, completion, cost = extractor.estimate(texts)
    return {
        "documents": len(documents),
        "chunks": len(texts),
        "characters": sum(len(t) for t in texts),
        "extractor": extractor.name if extractor is not None else "none",
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cost_usd": cost,
    }


def with_problems(
    report: IngestReport, problems: Sequence[DocumentProblem], blank_texts: int
) -> IngestReport:
    """The report with the files that were not read and blank texts given."""
    found = [IngestProblem(path=p.path, reason=p.reason) for p in problems if not p.skipped]
    found += [IngestProblem(path="<text>", reason="empty document (no text)")] * blank_texts
    skipped = [IngestProblem(path=p.path, reason=p.reason) for p in problems if p.skipped]
    return report.model_copy(
        update={"problems": [*report.problems, *found], "skipped": [*report.skipped, *skipped]}
    )


def queue_stored(
    store: ChunkQueue, project: str, chunk_ids: Sequence[str], extractor: Extractor, domain: str
) -> int:
    """Queue stored chunks for extraction; returns how many became pending.

    Raises:
        NotFound: A chunk id is not a live chunk of the project.
    """
    chunks = store.get_chunks(project, list(dict.fromkeys(chunk_ids)))
    missing = sorted(set(chunk_ids) - {c.id for c in chunks})
    if missing:
        raise NotFound(f"chunk(s) not found: {missing[:10]}")
    return queue_chunks(store, project, chunks, extractor, domain)
