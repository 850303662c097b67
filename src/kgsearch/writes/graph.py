"""The graph write path: objects, relationships and mentions, created, patched or deleted.

Every write commits its rows as ``pending`` and returns without waiting for an
embedder. ``after_commit`` runs once the rows are committed and before they are read
back, so a caller that embeds on write (``Engine(embed_on_write=True)``) returns rows
that already show their embedding outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from kgsearch.errors import InvalidRequest, NotFound
from kgsearch.model import (
    GraphObject,
    Mention,
    MentionIn,
    ObjectIn,
    ObjectRef,
    Relationship,
    RelationshipIn,
    display_name,
)
from kgsearch.reads import get_object, get_relationship
from kgsearch.store.base import Store
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

__all__ = [
    "AfterCommit",
    "add_mentions",
    "add_objects",
    "add_relationships",
    "delete",
    "purge",
    "update_object",
    "update_relationship",
]

AfterCommit = Callable[[], None] | None
"""Called after a write commits and before its rows are read back (None: nothing)."""

RowKind = Literal["object", "relationship", "chunk", "source"]


def add_objects(
    store: Store,
    rules: Rules,
    project: str,
    objects: Sequence[ObjectIn],
    *,
    after_commit: AfterCommit = None,
) -> list[GraphObject]:
    """Create or update objects (by type + key) as ``pending``.

    When an object's display name changes, the triplet texts of its relationships are
    rebuilt in the same transaction, so they become pending instead of silently stale.

    Args:
        store: Where the rows go.
        rules: Returns how embedding texts are built.
        project: The project written to.
        objects: The objects to upsert.
        after_commit: Runs after the commit, before the rows are read back.

    Returns:
        The stored objects, in input order.
    """
    text_rules = rules()
    rows = [text_rules.object_row(project, o) for o in objects]
    with store.transaction():
        before = store.resolve(project, [ObjectRef(type=o.type, key=o.key) for o in objects])
        ids = store.upsert_objects(project, rows)
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
    _run(after_commit)
    return store.get_objects(project, ids)


def add_relationships(
    store: Store,
    rules: Rules,
    project: str,
    relationships: Sequence[RelationshipIn],
    *,
    after_commit: AfterCommit = None,
) -> list[Relationship]:
    """Create or update relationships as ``pending``; endpoints are ids or ``{type, key}``.

    Args:
        store: Where the rows go.
        rules: Returns how embedding texts are built.
        project: The project written to.
        relationships: The relationships to upsert.
        after_commit: Runs after the commit, before the rows are read back.

    Returns:
        The stored relationships, in input order.

    Raises:
        NotFound: An endpoint is not a live object of the project.
    """
    with store.transaction():
        found = require_endpoints(store, project, relationships)
        text_rules = rules()
        rows = [
            text_rules.relationship_row(project, r, found[r.source], found[r.target])
            for r in relationships
        ]
        ids = store.upsert_relationships(project, rows)
    _run(after_commit)
    return store.get_relationships(project, ids)


def add_mentions(store: Store, project: str, mentions: Sequence[MentionIn]) -> int:
    """Link sources/chunks to the objects and relationships they mention.

    Returns:
        The number of mentions written.

    Raises:
        NotFound: A mentioned object is not a live object of the project.
        InvalidRequest: A mention names no source or chunk, or nothing mentioned.
    """
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


def update_object(
    store: Store,
    rules: Rules,
    project: str,
    id: str,
    changes: Mapping[str, Any],
    *,
    after_commit: AfterCommit = None,
) -> GraphObject:
    """Patch an object (see :mod:`kgsearch.writes.patch`) and write it back.

    Raises:
        NotFound: No live object has this id.
        InvalidRequest: An unknown or invalid field.
    """
    check_object_changes(changes)
    patched = patched_object(get_object(store, project, id), changes)
    return add_objects(store, rules, project, [patched], after_commit=after_commit)[0]


def update_relationship(
    store: Store,
    rules: Rules,
    project: str,
    id: str,
    changes: Mapping[str, Any],
    *,
    after_commit: AfterCommit = None,
) -> Relationship:
    """Patch a relationship (see :mod:`kgsearch.writes.patch`) and write it back.

    Raises:
        NotFound: No live relationship has this id.
        InvalidRequest: An unknown or invalid field.
    """
    check_relationship_changes(changes)
    patched = patched_relationship(get_relationship(store, project, id), changes)
    return add_relationships(store, rules, project, [patched], after_commit=after_commit)[0]


def delete(store: Store, project: str, kind: RowKind, ids: Sequence[str]) -> int:
    """Soft-delete rows (an object takes its relationships); every read hides them.

    Returns:
        The number of rows deleted.
    """
    return store.delete(project, kind, ids)


def purge(store: Store, project: str) -> int:
    """Remove the project's soft-deleted rows for good; returns how many."""
    return store.purge(project)


def _run(after_commit: AfterCommit) -> None:
    if after_commit is not None:
        after_commit()


def _props_for(objects: Sequence[ObjectIn], ref: ObjectRef) -> dict[str, Any]:
    """The properties the last input for ``ref`` gives (later inputs win an upsert)."""
    for o in reversed(objects):
        if o.type == ref.type and o.key == ref.key:
            return dict(o.properties)
    return {}
