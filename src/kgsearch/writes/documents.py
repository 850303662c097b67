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

__all__ = ["CHUNKING", "StoredDocument", "chunk_document", "store_document"]

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
    store, project = ctx.store, ctx.project
    old = store.get_sources(project, [document.source_id])
    previous: Sequence[str] = old[0].metadata.get("chunk_ids", []) if old else []
    if (
        old
        and old[0].metadata.get("sha256") == document.sha256
        and old[0].metadata.get("chunking") == CHUNKING
    ):
        chunks = store.get_chunks(project, list(previous))
        if len(chunks) == len(previous):
            return StoredDocument(old[0], chunks, unchanged=True, removed=[])
    pieces = chunk_document(document, max_chars)
    ids = [c.id for c in pieces]
    metadata = {
        **document.metadata,
        "sha256": document.sha256,
        "chunking": CHUNKING,
        "chunk_ids": ids,
    }
    row = SourceIn(id=document.source_id, title=document.title, uri=document.uri, metadata=metadata)
    inner = replace(ctx, after_commit=None)
    kept = set(ids)
    removed = [c for c in previous if c not in kept]
    with store.transaction():
        (source,) = add_sources(inner, [row])
        chunks = add_chunks(inner, pieces)
        write_batch(store, project, GraphBatch(delete_chunks=removed))
    ctx.committed()
    return StoredDocument(source, chunks, unchanged=False, removed=removed)
