"""The text write path: sources, chunks, and free text split into chunks under a source.

Chunks are embedded as their own text titled by their source, so a chunk's embedding
text needs no graph lookups. :func:`add_text` derives source and chunk ids from the
content, so storing the same text twice updates instead of duplicating.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from kgsearch.errors import InvalidRequest
from kgsearch.model import Chunk, ChunkIn, Source, SourceIn, TextAdded
from kgsearch.text import TEXT_VERSION
from kgsearch.text.chunking import chunk_metadata, content_digest, split_spans
from kgsearch.text.sections import markdown_sections
from kgsearch.writes.graph import WriteContext
from kgsearch.writes.rows import TextRules

__all__ = ["add_chunks", "add_sources", "add_text"]


def add_sources(ctx: WriteContext, sources: Sequence[SourceIn]) -> list[Source]:
    """Create or update sources (documents, episodes); returns them as stored."""
    store, project = ctx.store, ctx.project
    now = datetime.now(UTC)
    store.upsert_sources(
        project,
        [
            Source(
                id=s.id,
                project=project,
                title=s.title,
                uri=s.uri,
                metadata=s.metadata,
                created_at=now,
            )
            for s in sources
        ],
    )
    return store.get_sources(project, [s.id for s in sources])


def add_chunks(ctx: WriteContext, chunks: Sequence[ChunkIn]) -> list[Chunk]:
    """Create or update text chunks as ``pending`` (embedded as their text, titled by
    their source).

    Returns:
        The stored chunks, in input order.
    """
    store, project = ctx.store, ctx.project
    titles = {
        s.id: s.title
        for s in store.get_sources(project, [c.source_id for c in chunks if c.source_id])
    }
    now = datetime.now(UTC)
    rows = []
    for c in chunks:
        text, digest = TextRules.chunk_text(c, titles.get(c.source_id or ""))
        chunk = Chunk(
            id=c.id,
            project=project,
            text=c.text,
            source_id=c.source_id,
            position=c.position,
            metadata=c.metadata,
            created_at=now,
            updated_at=now,
        )
        rows.append((chunk, text, digest, TEXT_VERSION))
    store.upsert_chunks(project, rows)
    ctx.committed()
    return store.get_chunks(project, [c.id for c in chunks])


def add_text(
    ctx: WriteContext,
    text: str,
    *,
    source_id: str | None = None,
    title: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    max_chars: int = 1000,
) -> TextAdded:
    """Store free text as chunks of at most ``max_chars`` under one source.

    The text is split at its Markdown headings into sections (a chunk never spans
    two), then at paragraphs, sentences and words. Without a
    ``source_id`` the source is named after the text's digest; chunk ids are derived
    from the source, position and content. An existing source keeps its title, URI
    and metadata unless ``title`` or ``metadata`` is given.

    Args:
        ctx: Where and how the rows are written.
        text: The text to store.
        source_id: The source the chunks belong to.
        title: The source's title.
        metadata: The source's metadata (replaces the stored one).
        max_chars: The largest chunk, in characters.

    Returns:
        The source and its chunks as stored.

    Raises:
        InvalidRequest: Blank text or ``max_chars`` outside 100..100000.
    """
    if not text.strip():
        raise InvalidRequest("text must not be blank")
    if not 100 <= max_chars <= 100_000:
        raise InvalidRequest("max_chars must be between 100 and 100000")
    sid = source_id or "text-" + content_digest(text)[:16]
    sources = ctx.store.get_sources(ctx.project, [sid])
    if not sources or title is not None or metadata is not None:
        old = sources[0] if sources else None
        sources = add_sources(
            ctx,
            [
                SourceIn(
                    id=sid,
                    title=title if title is not None else (old.title if old else None),
                    uri=old.uri if old else None,
                    metadata=dict(metadata)
                    if metadata is not None
                    else (dict(old.metadata) if old else {}),
                )
            ],
        )
    pieces = [
        (section, piece)
        for section in markdown_sections(text)
        for piece in split_spans(section.text, max_chars, section.unmined)
    ]
    chunks = add_chunks(
        ctx,
        [
            ChunkIn(
                id=f"{sid}:{i}:{content_digest(piece.text)[:12]}",
                text=piece.text,
                source_id=sid,
                position=i,
                metadata=chunk_metadata(section, piece),
            )
            for i, (section, piece) in enumerate(pieces)
        ],
    )
    return TextAdded(source=sources[0], chunks=chunks)
