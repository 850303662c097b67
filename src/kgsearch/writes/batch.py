"""The one batch writer: builders hand it plain rows, it stores them in bulk.

Extraction (:mod:`~kgsearch.writes.extracted`), merge and split
(:mod:`~kgsearch.writes.merge`), forgetting chunks (:mod:`~kgsearch.writes.forget`)
and the user writes (:mod:`~kgsearch.writes.graph`) build their rows with pure
functions and write them here: one transaction, deletions first, then one bulk upsert
per kind. Object ids are read back by id, without the rows' properties (a new object
may land on a soft-deleted row that keeps its own id).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kgsearch.model import Chunk, Mention, Source
from kgsearch.store.base import ObjectRow, RelationshipRow, RowKind
from kgsearch.writes.stores import BatchStore

__all__ = ["ChunkRow", "GraphBatch", "MentionDrop", "Written", "write_batch", "write_objects"]

ChunkRow = tuple[Chunk, str, str, int]
"""A chunk with its embedding text, text hash and text version (what the store takes)."""


@dataclass(frozen=True)
class MentionDrop:
    """Mention links to remove for good: those of ``chunk_ids`` (naming ``object_id``
    only, when given)."""

    chunk_ids: Sequence[str]
    object_id: str | None = None


@dataclass
class GraphBatch:
    """Plain rows for one write, applied in this order.

    Attributes:
        delete_relationships: Relationship ids to soft-delete.
        delete_objects: Object ids to soft-delete (they take their relationships).
        delete_chunks: Chunk ids to soft-delete.
        delete_sources: Source ids to soft-delete.
        drop_mentions: Mention links to remove.
        sources: Source rows to upsert (by id).
        chunks: Chunk rows with their embedding text, hash and text version.
        objects: Object rows to upsert (by type and key).
        relationships: Relationship rows to upsert (by id).
        mentions: Mention links to add.
        endpoints_checked: The builder resolved every relationship endpoint in this
            transaction and no other writer can delete one before it commits (the
            importer's bulk load, extraction's own objects), so the store need not
            check them again. Off, the store checks and locks them (PostgreSQL:
            ``FOR SHARE``), so a delete racing the write waits for it.
    """

    delete_relationships: list[str] = field(default_factory=list)
    delete_objects: list[str] = field(default_factory=list)
    delete_chunks: list[str] = field(default_factory=list)
    delete_sources: list[str] = field(default_factory=list)
    drop_mentions: list[MentionDrop] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    chunks: list[ChunkRow] = field(default_factory=list)
    objects: list[ObjectRow] = field(default_factory=list)
    relationships: list[RelationshipRow] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    endpoints_checked: bool = False


@dataclass(frozen=True)
class Written:
    """What :func:`write_batch` changed, beyond the rows it was given."""

    relationships_deleted: int = 0
    objects_deleted: int = 0
    chunks_deleted: int = 0
    sources_deleted: int = 0
    mentions_deleted: int = 0


def write_batch(store: BatchStore, project: str, batch: GraphBatch) -> Written:
    """Store ``batch`` in one transaction (see :class:`GraphBatch` for the order).

    Returns:
        How many rows the deletions removed.
    """
    deleted: dict[RowKind, int] = {}
    links = 0
    with store.transaction():
        deletions: list[tuple[RowKind, list[str]]] = [
            ("relationship", batch.delete_relationships),
            ("object", batch.delete_objects),
            ("chunk", batch.delete_chunks),
            ("source", batch.delete_sources),
        ]
        for kind, ids in deletions:
            if ids:
                deleted[kind] = store.delete(project, kind, ids)
        for drop in batch.drop_mentions:
            if drop.chunk_ids:
                links += store.delete_mentions(
                    project, list(drop.chunk_ids), object_id=drop.object_id
                )
        if batch.sources:
            store.upsert_sources(project, batch.sources)
        if batch.chunks:
            store.upsert_chunks(project, batch.chunks)
        if batch.objects:
            store.upsert_objects(project, batch.objects, return_ids=False)
        if batch.relationships:
            store.upsert_relationships(
                project, batch.relationships, endpoints_checked=batch.endpoints_checked
            )
        if batch.mentions:
            store.add_mentions(project, batch.mentions)
    return Written(
        relationships_deleted=deleted.get("relationship", 0),
        objects_deleted=deleted.get("object", 0),
        chunks_deleted=deleted.get("chunk", 0),
        sources_deleted=deleted.get("source", 0),
        mentions_deleted=links,
    )


def write_objects(store: BatchStore, project: str, rows: Sequence[ObjectRow]) -> list[str]:
    """Upsert object rows and return their stored ids in order (a row's own id, or
    the id of the soft-deleted object it landed on, which keeps its id)."""
    if not rows:
        return []
    return store.upsert_objects(project, rows)
