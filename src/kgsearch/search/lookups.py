"""Lookups (seed 002): what a source mentions, which sources mention something, and an
object's neighbourhood."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from kgsearch.errors import NotFound
from kgsearch.model import Mentioned, Neighborhood, NeighborObject, SourceMentions
from kgsearch.store.base import GraphReads

__all__ = ["mentioned_by", "neighborhood", "sources_mentioning"]


def mentioned_by(
    store: GraphReads,
    p: str,
    source_ids: Sequence[str] = (),
    chunk_ids: Sequence[str] = (),
) -> Mentioned:
    """What the given sources/chunks mention: objects and relationships."""
    live_sources = [s.id for s in store.get_sources(p, source_ids)]
    live_chunks = [c.id for c in store.get_chunks(p, chunk_ids)]
    mentions = store.mentions(p, source_ids=live_sources, chunk_ids=live_chunks)
    object_ids = list(dict.fromkeys(m.object_id for m in mentions if m.object_id))
    rel_ids = list(dict.fromkeys(m.relationship_id for m in mentions if m.relationship_id))
    return Mentioned(
        objects=store.get_objects(p, object_ids),
        relationships=store.get_relationships(p, rel_ids),
    )


def sources_mentioning(
    store: GraphReads,
    p: str,
    object_ids: Sequence[str] = (),
    relationship_ids: Sequence[str] = (),
) -> list[SourceMentions]:
    """Sources that mention the given objects/relationships, most mentions first
    (citations)."""
    mentions = store.mentions(p, object_ids=object_ids, relationship_ids=relationship_ids)
    chunk_sources = {
        c.id: c.source_id
        for c in store.get_chunks(
            p, [m.chunk_id for m in mentions if m.chunk_id and not m.source_id]
        )
    }
    counts: dict[str, int] = {}
    for m in mentions:
        source = m.source_id or chunk_sources.get(m.chunk_id or "")
        if source:
            counts[source] = counts.get(source, 0) + 1
    sources = {s.id: s for s in store.get_sources(p, list(counts))}
    ranked = sorted(counts.items(), key=lambda x: (-x[1], x[0]))
    return [SourceMentions(source=sources[s], mentions=n) for s, n in ranked if s in sources]


def neighborhood(
    store: GraphReads,
    p: str,
    id: str,
    depth: int = 1,
    direction: Literal["out", "in", "both"] = "both",
    relationship_types: Sequence[str] | None = None,
) -> Neighborhood:
    """An object's neighbours within ``depth`` hops: each with its hop count, the
    relationship that reached it and the object itself.

    Args:
        store: The store to read.
        p: The project.
        id: The object at the centre.
        depth: How many hops to follow.
        direction: Follow outgoing, incoming or both kinds of relationship.
        relationship_types: Only follow these relationship types (all when None).

    Returns:
        The centre's id and its neighbours, nearest first.

    Raises:
        NotFound: No live object has this id.
    """
    if not store.get_objects(p, [id]):
        raise NotFound(f"object {id!r} not found in project {p!r}")
    found = store.neighbors(
        p, [id], depth=depth, direction=direction, relationship_types=relationship_types
    )
    objects = {o.id: o for o in store.get_objects(p, [n.id for n in found])}
    return Neighborhood(
        id=id,
        neighbors=[
            NeighborObject(id=n.id, depth=n.depth, via=n.via, object=objects[n.id])
            for n in found
            if n.id in objects
        ],
    )
