"""The graph write path: objects, relationships and mentions, created, patched or deleted.

Every write commits its rows as ``pending`` and returns without waiting for an
embedder. ``after_commit`` runs once the rows are committed and before they are read
back, so a caller that embeds on write (``Engine(embed_on_write=True)``) returns rows
that already show their embedding outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kgsearch.errors import InvalidRequest, NotFound
from kgsearch.model import (
    GraphObject,
    Kind,
    Mention,
    MentionIn,
    ObjectIn,
    ObjectRef,
    Relationship,
    RelationshipIn,
    display_name,
)
from kgsearch.reads import get_object, get_relationship
from kgsearch.store.base import RelationshipRow
from kgsearch.writes.batch import GraphBatch, write_batch, write_objects
from kgsearch.writes.patch import (
    check_object_changes,
    check_relationship_changes,
    patched_object,
    patched_relationship,
)
from kgsearch.writes.rows import (
    Rules,
    refresh_relationship_texts,
    require_endpoints,
    resolve_endpoints,
)
from kgsearch.writes.stores import WriteStore

__all__ = [
    "AfterCommit",
    "WriteContext",
    "add_mentions",
    "add_objects",
    "add_relationships",
    "delete",
    "purge",
    "update_object",
    "update_relationship",
]

AfterCommit = Callable[[], object] | None
"""Called after a write commits and before its rows are read back (None: nothing)."""


@dataclass(frozen=True)
class WriteContext:
    """What a write needs besides its rows: the store, the project and the text rules.

    Attributes:
        store: Where the rows go.
        project: The project written to.
        rules: Returns how embedding texts are built (called only when a write needs
            them, so a write that fails validation never loads the embedder).
        after_commit: Runs after a write commits, before its rows are read back.
    """

    store: WriteStore
    project: str
    rules: Rules
    after_commit: AfterCommit = None

    def committed(self) -> None:
        """Run the after-commit hook, if any."""
        if self.after_commit is not None:
            self.after_commit()


RowKind = Literal["object", "relationship", "chunk", "source"]


def add_objects(ctx: WriteContext, objects: Sequence[ObjectIn]) -> list[GraphObject]:
    """Create or update objects (by type + key) as ``pending``.

    When an object's display name changes, the triplet texts of its relationships are
    rebuilt in the same transaction, so they become pending instead of silently stale.

    Returns:
        The stored objects, in input order.
    """
    if not objects:
        return []  # nothing to write, and no reason to load the embedder for its rules
    store, project = ctx.store, ctx.project
    text_rules = ctx.rules()
    rows = [text_rules.object_row(project, o) for o in objects]
    with store.transaction():
        before = store.resolve(project, [ObjectRef(type=o.type, key=o.key) for o in objects])
        ids = write_objects(store, project, rows)
        renamed = [
            e.id
            for ref, e in before.items()
            if display_name(e.properties, e.key, e.id)
            != display_name(_props_for(objects, ref), ref.key, e.id)
        ]
        if renamed:
            refresh_relationship_texts(
                store, project, store.relationships_touching(project, renamed)
            )
    ctx.committed()
    return store.get_objects(project, ids)


def add_relationships(
    ctx: WriteContext, relationships: Sequence[RelationshipIn]
) -> list[Relationship]:
    """Create or update relationships as ``pending``; endpoints are ids or ``{type, key}``.

    Returns:
        The stored relationships, in input order.

    Raises:
        NotFound: An endpoint is not a live object of the project.
    """
    if not relationships:
        return []  # nothing to write, and no reason to load the embedder for its rules
    store, project = ctx.store, ctx.project
    with store.transaction():
        rows = relationship_rows(ctx, relationships)
        write_batch(store, project, GraphBatch(relationships=rows))
        # an object extraction named once earns its own vector with a relationship
        ends = list(dict.fromkeys(i for r in rows for i in (r.source_id, r.target_id)))
        store.set_skipped(project, Kind.OBJECT, ends, skipped=False)
    ctx.committed()
    return store.get_relationships(project, [r.id for r in rows])


def relationship_rows(
    ctx: WriteContext, relationships: Sequence[RelationshipIn]
) -> list[RelationshipRow]:
    """Write-ready rows of ``relationships``, their endpoints resolved to live objects
    (call it in the transaction that writes them).

    Raises:
        NotFound: An endpoint is not a live object of the project.
    """
    if not relationships:
        return []
    found = require_endpoints(ctx.store, ctx.project, relationships)
    rules = ctx.rules()
    return [
        rules.relationship_row(ctx.project, r, found[r.source], found[r.target])
        for r in relationships
    ]


def add_mentions(ctx: WriteContext, mentions: Sequence[MentionIn]) -> int:
    """Link sources/chunks to the objects and relationships they mention.

    Returns:
        The number of mentions written.

    Raises:
        NotFound: A mentioned object is not a live object of the project.
        InvalidRequest: A mention names no source or chunk, or nothing mentioned.
    """
    store, project = ctx.store, ctx.project
    refs = [m.object for m in mentions if m.object is not None]
    found, missing = resolve_endpoints(store, project, refs)
    if missing:
        raise NotFound(f"mentioned object(s) not found: {missing[:10]}")
    rows = []
    for m in mentions:
        if not (m.source_id or m.chunk_id):
            raise InvalidRequest("a mention needs source_id or chunk_id")
        if m.object is None and m.relationship_id is None:
            raise InvalidRequest("a mention needs an object or a relationship_id")
        rows.append(
            Mention(
                project=project,
                source_id=m.source_id,
                chunk_id=m.chunk_id,
                object_id=found[m.object].id if m.object is not None else None,
                relationship_id=m.relationship_id,
            )
        )
    store.add_mentions(project, rows)
    return len(rows)


def update_object(ctx: WriteContext, id: str, changes: Mapping[str, Any]) -> GraphObject:
    """Patch an object (see :mod:`kgsearch.writes.patch`) and write it back.

    Raises:
        NotFound: No live object has this id.
        InvalidRequest: An unknown or invalid field.
    """
    check_object_changes(changes)
    patched = patched_object(get_object(ctx.store, ctx.project, id), changes)
    return add_objects(ctx, [patched])[0]


def update_relationship(ctx: WriteContext, id: str, changes: Mapping[str, Any]) -> Relationship:
    """Patch a relationship (see :mod:`kgsearch.writes.patch`) and write it back.

    Raises:
        NotFound: No live relationship has this id.
        InvalidRequest: An unknown or invalid field.
    """
    check_relationship_changes(changes)
    patched = patched_relationship(get_relationship(ctx.store, ctx.project, id), changes)
    return add_relationships(ctx, [patched])[0]


def delete(ctx: WriteContext, kind: RowKind, ids: Sequence[str]) -> int:
    """Soft-delete rows (an object takes its relationships); every read hides them.

    Returns:
        The number of rows deleted.
    """
    return ctx.store.delete(ctx.project, kind, ids)


def purge(ctx: WriteContext) -> int:
    """Remove the project's soft-deleted rows for good; returns how many."""
    return ctx.store.purge(ctx.project)


def _props_for(objects: Sequence[ObjectIn], ref: ObjectRef) -> dict[str, Any]:
    """The properties the last input for ``ref`` gives (later inputs win an upsert)."""
    for o in reversed(objects):
        if o.type == ref.type and o.key == ref.key:
            return dict(o.properties)
    return {}
