"""Documents into sources and chunks, so re-ingesting costs only what changed.

A document's chunk ids come from its source id and each chunk's content digest (not
its position), so an edit leaves the ids of untouched chunks alone: they are neither
re-embedded nor re-extracted. Chunks follow the document's sections and never span
two. An unchanged document (same text digest, same chunking) writes nothing; a
changed one adds its new chunks and deletes the chunks it no longer has.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from kgsearch.document_values import Document, Section
from kgsearch.model import Chunk, ChunkIn, Source, SourceIn
from kgsearch.text.chunking import chunk_metadata, content_digest, split_spans
from kgsearch.writes.batch import GraphBatch, write_batch
from kgsearch.writes.graph import WriteContext
from kgsearch.writes.text import add_chunks, add_sources

__all__ = ["CHUNKING", "StoredDocument", "chunk_document", "store_document", "store_many"]

CHUNKING = "sections-1"
"""How documents are chunked, kept on each source: a document stored under another
(older) chunking is chunked again on re-ingest even if its text is unchanged."""


@dataclass(frozen=True)
class StoredDocument:
    """What storing a document did.

    Attributes:
        source: The document's source row.
        chunks: Its chunks now, in order.
        unchanged: The stored text was already this one; nothing was written.
        removed: Ids of chunks the new text no longer has (deleted).
    """

    source: Source
    chunks: list[Chunk]
    unchanged: bool
    removed: list[str]


def chunk_document(document: Document, max_chars: int) -> list[ChunkIn]:
    """The document's chunks, section by section (a chunk never spans two): ids
    ``<source>#<digest>`` (``-2``… for repeats); a chunk under a heading records its
    path in ``metadata["section"]`` (``Guide > Install``) and ``section_path``, and
    the ranges not to mine (code, tables) in ``metadata["unmined"]``."""
    seen: Counter[str] = Counter()
    chunks: list[ChunkIn] = []
    for section in document.sections or (Section((), document.text),):
        for piece in split_spans(section.text, max_chars, section.unmined):
            digest = content_digest(piece.text)[:16]
            seen[digest] += 1
            suffix = f"-{seen[digest]}" if seen[digest] > 1 else ""
            chunks.append(
                ChunkIn(
                    id=f"{document.source_id}#{digest}{suffix}",
                    text=piece.text,
                    source_id=document.source_id,
                    position=len(chunks),
                    metadata=chunk_metadata(section, piece),
                )
            )
    return chunks


def store_document(ctx: WriteContext, document: Document, *, max_chars: int) -> StoredDocument:
    """Write a document as a source and its chunks (chunks are ``pending``).

    Args:
        ctx: Where the rows go.
        document: The document read.
        max_chars: The largest chunk, in characters.
    """
    (stored,) = store_many(ctx, [document], max_chars=max_chars)
    return stored


def store_many(
    ctx: WriteContext, documents: Sequence[Document], *, max_chars: int
) -> list[StoredDocument]:
    """:func:`store_document` for each document, in order, with the rows of a run of
    distinct sources read and written together (a handful of statements per run
    instead of six per document). A source given again starts a new run, so it sees
    what the first one wrote."""
    done: list[StoredDocument] = []
    run: list[Document] = []
    sources: set[str] = set()
    for document in documents:
        if document.source_id in sources:
            done += _store_run(ctx, run, max_chars)
            run, sources = [], set()
        run.append(document)
        sources.add(document.source_id)
    return done + (_store_run(ctx, run, max_chars) if run else [])


def _store_run(
    ctx: WriteContext, documents: Sequence[Document], max_chars: int
) -> list[StoredDocument]:
    """Store documents of distinct sources in one transaction."""
    store, project = ctx.store, ctx.project
    old = {s.id: s for s in store.get_sources(project, [d.source_id for d in documents])}
    previous = {
        d.source_id: list(old[d.source_id].metadata.get("chunk_ids", []))
        if d.source_id in old
        else []
        for d in documents
    }
    same = {
        d.source_id
        for d in documents
        if d.source_id in old
        and old[d.source_id].metadata.get("sha256") == d.sha256
        and old[d.source_id].metadata.get("chunking") == CHUNKING
    }
    held = {c.id: c for c in store.get_chunks(project, [i for s in same for i in previous[s]])}
    results: dict[str, StoredDocument] = {}
    for source_id in same:
        chunks = [held[i] for i in previous[source_id] if i in held]
        if len(chunks) == len(previous[source_id]):
            results[source_id] = StoredDocument(old[source_id], chunks, unchanged=True, removed=[])
    changed = [d for d in documents if d.source_id not in results]
    if changed:
        results.update(_write_changed(ctx, changed, previous, max_chars))
    return [results[d.source_id] for d in documents]


def _write_changed(
    ctx: WriteContext,
    documents: Sequence[Document],
    previous: dict[str, list[str]],
    max_chars: int,
) -> dict[str, StoredDocument]:
    """Write the sources and chunks of changed documents, deleting the chunks they no
    longer have, in one transaction."""
    store, project = ctx.store, ctx.project
    pieces = {d.source_id: chunk_document(d, max_chars) for d in documents}
    rows = [
        SourceIn(
            id=d.source_id,
            title=d.title,
            uri=d.uri,
            metadata={
                **d.metadata,
                "sha256": d.sha256,
                "chunking": CHUNKING,
                "chunk_ids": [c.id for c in pieces[d.source_id]],
            },
        )
        for d in documents
    ]
    removed: dict[str, list[str]] = {}
    for d in documents:
        kept = {c.id for c in pieces[d.source_id]}
        removed[d.source_id] = [c for c in previous[d.source_id] if c not in kept]
    inner = replace(ctx, after_commit=None)
    with store.transaction():
        sources = add_sources(inner, rows)
        chunks = add_chunks(inner, [c for d in documents for c in pieces[d.source_id]])
        write_batch(
            store, project, GraphBatch(delete_chunks=[c for r in removed.values() for c in r])
        )
    ctx.committed()
    by_id = {c.id: c for c in chunks}
    return {
        d.source_id: StoredDocument(
            source,
            [by_id[c.id] for c in pieces[d.source_id]],
            unchanged=False,
            removed=removed[d.source_id],
        )
        for d, source in zip(documents, sources, strict=True)
    }
