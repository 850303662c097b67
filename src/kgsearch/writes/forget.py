"""Forgetting chunks: what they contributed to the graph goes, the rest is derived again.

Reference counting over the ``_chunks`` provenance (:mod:`kgsearch.writes.contributions`):
a row's support is the set of chunks that contributed to it. Forgetting chunks removes
their entries and their mention links; an extracted row left with no support is
deleted, every other touched row has its description, keywords, weight, source
chunks and validity derived again from the entries that remain (no model call), and
its embedding goes back to ``pending`` when its text changed; the groups of
single-valued relations are closed again (:mod:`kgsearch.writes.validity`), so a
forgotten later fact opens the earlier one. Rows extraction did not create (imported
data an extraction linked to) only lose the provenance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kgsearch.model import GraphObject, ObjectIn, Relationship, RelationshipIn
from kgsearch.writes.batch import GraphBatch, MentionDrop, write_batch
from kgsearch.writes.contributions import (
    contributions,
    object_fields,
    owned,
    relationship_fields,
    without_chunks,
)
from kgsearch.writes.graph import WriteContext, add_objects, relationship_rows
from kgsearch.writes.rows import rewritten
from kgsearch.writes.validity import close_superseded, groups_of

__all__ = ["Rebuilt", "forget_chunks", "object_changes", "rebuild", "relationship_changes"]


@dataclass
class Rebuilt:
    """What forgetting chunks did to the graph.

    Attributes:
        objects_deleted: Extracted objects no remaining chunk supports.
        relationships_deleted: Extracted relationships no remaining chunk supports.
        objects_updated: Objects whose fields were derived again.
        relationships_updated: Relationships whose fields were derived again.
        mentions_deleted: Mention links of the forgotten chunks.
    """

    objects_deleted: int = 0
    relationships_deleted: int = 0
    objects_updated: int = 0
    relationships_updated: int = 0
    mentions_deleted: int = 0

    def as_dict(self) -> dict[str, int]:
        """The counts by name."""
        return dict(self.__dict__)


def rebuild(
    ctx: WriteContext,
    object_ids: Sequence[str],
    relationship_ids: Sequence[str],
    *,
    drop: Sequence[str] = (),
    extra: Mapping[str, Mapping[str, Any]] | None = None,
) -> Rebuilt:
    """Derive the fields of these rows again from their contributions minus ``drop``'s
    chunks, deleting extracted rows left with none, in one transaction.

    Args:
        ctx: Where the rows are.
        object_ids: Objects to derive again.
        relationship_ids: Relationships to derive again.
        drop: Chunks whose contributions go.
        extra: Properties to set first, by row id (a model summary, for instance).
    """
    extra = extra or {}
    store, project = ctx.store, ctx.project
    gone = set(drop)
    rels = store.get_relationships(project, list(dict.fromkeys(relationship_ids)))
    rel_updates, rel_deletes = relationship_changes(rels, gone, extra)
    objs = store.get_objects(project, list(dict.fromkeys(object_ids)))
    obj_updates, obj_deletes = object_changes(objs, gone, extra)
    inner = replace(ctx, after_commit=None)
    done = Rebuilt()
    with store.transaction():
        deletes = GraphBatch(delete_relationships=rel_deletes, delete_objects=obj_deletes)
        written = write_batch(store, project, deletes)
        done.relationships_deleted = written.relationships_deleted
        done.objects_deleted = written.objects_deleted
        done.objects_updated = len(add_objects(inner, obj_updates))
        deleted = set(obj_deletes)
        live = [r for r in rel_updates if r.source not in deleted and r.target not in deleted]
        rows = relationship_rows(inner, live)
        write_batch(store, project, GraphBatch(relationships=rows))
        done.relationships_updated = len(rows)
        # a forgotten later fact opens the earlier one again
        close_superseded(inner, {g for g in groups_of(rels) if g.key not in deleted})
    return done


def relationship_changes(
    rels: Sequence[Relationship], gone: set[str], extra: Mapping[str, Mapping[str, Any]]
) -> tuple[list[RelationshipIn], list[str]]:
    """(updates, ids to delete): each relationship with ``gone``'s contributions taken
    out and its fields derived again (only those that changed), and the extracted ones
    left with no contribution."""
    updates: list[RelationshipIn] = []
    deletes: list[str] = []
    for r in rels:
        entries = without_chunks(contributions(r.properties), gone)
        if owned(r.properties) and not entries:
            deletes.append(r.id)
            continue
        props, fields, chunks = relationship_fields(
            {**r.properties, **extra.get(r.id, {})},
            entries,
            [c for c in r.source_chunks if c not in gone],
        )
        derived = (
            {}
            if fields is None
            else {
                "weight": fields.weight,
                "valid_from": fields.valid_from,
                "valid_to": fields.valid_to,
                "description": fields.description,
            }
        )
        updated = rewritten(r, properties=props, source_chunks=chunks, **derived)
        now = (props, updated.weight, updated.description, chunks)
        validity = (updated.valid_from, updated.valid_to)
        if (*now, *validity) != (
            r.properties,
            r.weight,
            r.description,
            r.source_chunks,
            r.valid_from,
            r.valid_to,
        ):
            updates.append(updated)
    return updates, deletes


def object_changes(
    objs: Sequence[GraphObject], gone: set[str], extra: Mapping[str, Mapping[str, Any]]
) -> tuple[list[ObjectIn], list[str]]:
    """(updates, ids to delete) of objects, as :func:`relationship_changes`."""
    updates: list[ObjectIn] = []
    deletes: list[str] = []
    for o in objs:
        entries = without_chunks(contributions(o.properties), gone)
        if owned(o.properties) and not entries:
            deletes.append(o.id)
            continue
        props = object_fields({**o.properties, **extra.get(o.id, {})}, entries)
        if props != o.properties:
            updates.append(
                ObjectIn(
                    id=o.id,
                    type=o.type,
                    key=o.key,
                    tags=o.tags,
                    properties=props,
                    labels=o.labels,
                )
            )
    return updates, deletes


def forget_chunks(ctx: WriteContext, chunk_ids: Sequence[str]) -> Rebuilt:
    """Remove what these chunks contributed to the graph, and their mention links.

    The chunk rows themselves are left to the caller (a changed document has already
    replaced them; a deleted one deletes them in the same transaction).
    """
    store, project = ctx.store, ctx.project
    if not chunk_ids:
        return Rebuilt()
    links = store.mentions(project, chunk_ids=chunk_ids)
    objects = [m.object_id for m in links if m.object_id]
    relationships = [m.relationship_id for m in links if m.relationship_id]
    with store.transaction():
        done = rebuild(ctx, objects, relationships, drop=chunk_ids)
        unlinked = GraphBatch(drop_mentions=[MentionDrop(chunk_ids)])
        done.mentions_deleted = write_batch(store, project, unlinked).mentions_deleted
    ctx.committed()
    return done
