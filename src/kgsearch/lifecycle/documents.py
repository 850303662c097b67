"""Documents as a reader sees them (the web UI's Documents page): each ingested
document with its chunks, their sections and where their extraction stands.

A document is a source row written by ingest; its metadata lists its chunks in order
(``chunk_ids``), and each chunk's extraction is a task of the ``extract`` job. Reads
are bounded by their arguments: a page of documents, a page of one document's chunks.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from kgsearch.errors import NotFound
from kgsearch.lifecycle.extraction import EXTRACT_JOB
from kgsearch.model import Chunk, Source
from kgsearch.store.base import GraphReads, TaskQueue

__all__ = [
    "ChunkExtraction",
    "DocumentChunk",
    "DocumentPage",
    "DocumentSummary",
    "DocumentView",
    "document_chunk_ids",
    "document_view",
    "forget_failed",
    "list_documents",
]

MAX_ERROR_CHARS = 2000
"""Characters of a chunk's last extraction error shown (a raw reply can be long)."""


class _View(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DocumentSummary(_View):
    """One document in a listing.

    Attributes:
        id: The source id (``doc:<name>`` for files and uploads).
        title: Its title (the file name).
        format: ``pdf``, ``html``, ``docx``, ``md``, ``text``… (empty when unknown).
        bytes: The size of what was read.
        created_at: When it was first stored.
        chunks: How many chunks it has.
        extraction: Its chunks per extraction status (``done``, ``pending``,
            ``failed``, ``dead``, ``running``); chunks never queued are not counted.
    """

    id: str
    title: str | None
    format: str
    bytes: int | None
    created_at: datetime
    chunks: int
    extraction: dict[str, int]


class DocumentPage(_View):
    """A page of documents; pass ``next_cursor`` back for the next one."""

    items: list[DocumentSummary]
    next_cursor: str | None = None


class ChunkExtraction(_View):
    """Where one chunk's extraction stands.

    Attributes:
        status: The task's status (``none`` when the chunk was never queued, e.g.
            ingested with the ``none`` extractor).
        attempts: Attempts made.
        last_error: The last failure (cut to 2,000 characters), if any.
        extractor: The extractor that ran (or is queued to run).
        entities: Entities kept from the chunk.
        relationships: Relationships kept from the chunk.
        rejected: Items the parser or quality filter dropped, by reason.
    """

    status: str
    attempts: int = 0
    last_error: str | None = None
    extractor: str = ""
    entities: int = 0
    relationships: int = 0
    rejected: dict[str, int] = {}


class DocumentChunk(_View):
    """A chunk of a document: its position, section, text and extraction."""

    id: str
    position: int
    section: str
    text: str
    extraction: ChunkExtraction


class DocumentView(_View):
    """One document with a page of its chunks, in order.

    Attributes:
        document: The document's summary.
        source: The source row (its metadata without the chunk list).
        sections: The section titles in order, each once (empty title: text before
            the first heading, or a document without headings).
        chunks: Chunks ``offset`` to ``offset + limit``.
        offset: Where the page starts.
    """

    document: DocumentSummary
    source: Source
    sections: list[str]
    chunks: list[DocumentChunk]
    offset: int


class DocumentStore(GraphReads, TaskQueue, Protocol):
    """Sources and chunks, and the extraction task queue."""


def document_chunk_ids(source: Source) -> list[str]:
    """The chunk ids a source lists, in order (empty when it lists none)."""
    found = source.metadata.get("chunk_ids")
    return [c for c in found if isinstance(c, str)] if isinstance(found, list) else []


def _summary(source: Source, statuses: Counter[str]) -> DocumentSummary:
    size = source.metadata.get("bytes")
    return DocumentSummary(
        id=source.id,
        title=source.title,
        format=str(source.metadata.get("format") or ""),
        bytes=size if isinstance(size, int) else None,
        created_at=source.created_at,
        chunks=len(document_chunk_ids(source)),
        extraction=dict(sorted(statuses.items())),
    )


def list_documents(
    store: DocumentStore, project: str, *, limit: int = 20, cursor: str | None = None
) -> DocumentPage:
    """A page of the project's documents, oldest first, each with its chunks per
    extraction status."""
    page = store.list_rows(project, "source", limit=limit, cursor=cursor)
    sources: list[Source] = list(page.items)
    owner = {c: s.id for s in sources for c in document_chunk_ids(s)}
    counts: dict[str, Counter[str]] = {s.id: Counter() for s in sources}
    for state in store.get_tasks(project, EXTRACT_JOB, list(owner)):
        counts[owner[state.row_id]][state.status] += 1
    return DocumentPage(
        items=[_summary(s, counts[s.id]) for s in sources], next_cursor=page.next_cursor
    )


def _extraction(state: Any) -> ChunkExtraction:
    if state is None:
        return ChunkExtraction(status="none")
    result: dict[str, Any] = state.result or {}
    graph = result.get("graph") or {}
    rejected = Counter(
        str(r.get("reason", "")) for r in result.get("rejected") or [] if isinstance(r, dict)
    )
    error = state.last_error
    return ChunkExtraction(
        status=state.status,
        attempts=state.attempts,
        last_error=error[:MAX_ERROR_CHARS] if error else None,
        extractor=str(result.get("extractor") or state.payload.get("extractor") or ""),
        entities=len(graph.get("entities") or []),
        relationships=len(graph.get("relationships") or []),
        rejected=dict(rejected.most_common()),
    )


def _section(chunk: Chunk) -> str:
    section = chunk.metadata.get("section")
    return section if isinstance(section, str) else ""


def document_view(
    store: DocumentStore, project: str, id: str, *, limit: int = 100, offset: int = 0
) -> DocumentView:
    """One document with chunks ``offset`` to ``offset + limit`` and their extraction.

    Raises:
        NotFound: The project has no such document.
    """
    found = store.get_sources(project, [id])
    if not found:
        raise NotFound(f"no document {id!r} in this project")
    source = found[0]
    ids = document_chunk_ids(source)
    tasks = {s.row_id: s for s in store.get_tasks(project, EXTRACT_JOB, ids)}
    wanted = ids[offset : offset + limit]
    chunks = {c.id: c for c in store.get_chunks(project, wanted)}
    titled: list[tuple[int, str]] = []
    for start in range(0, len(ids), 500):  # every section, from the chunks' metadata
        titled += [
            (c.position, _section(c)) for c in store.get_chunks(project, ids[start : start + 500])
        ]
    sections = [title for _, title in sorted(titled)]
    statuses = Counter(s.status for s in tasks.values())
    metadata = {k: v for k, v in source.metadata.items() if k != "chunk_ids"}
    return DocumentView(
        document=_summary(source, statuses),
        source=source.model_copy(update={"metadata": metadata}),
        sections=list(dict.fromkeys(sections)),
        chunks=[
            DocumentChunk(
                id=c.id,
                position=c.position,
                section=_section(c),
                text=c.text,
                extraction=_extraction(tasks.get(c.id)),
            )
            for c in (chunks[i] for i in wanted if i in chunks)
        ],
        offset=offset,
    )


def forget_failed(store: TaskQueue, project: str, chunk_ids: list[str]) -> int:
    """Forget the extraction tasks of these chunks that failed or gave up, so queueing
    them again starts them afresh; returns how many were forgotten."""
    failed = [
        s.row_id
        for s in store.get_tasks(project, EXTRACT_JOB, chunk_ids)
        if s.status in ("failed", "dead")
    ]
    return store.delete_tasks(project, EXTRACT_JOB, failed) if failed else 0
