"""Merging objects by hand, and undoing it (``kgsearch entities merge`` / ``split``).

:func:`merge_objects` keeps one object and folds others into it: their relationships
are re-pointed to the kept object (a re-pointed relationship that meets one the kept
object already has becomes one, its chunks joined; one between two merged objects
would be a self-loop and is dropped, counted), their chunk provenance (``_chunks``)
and mentions move to it, and they are deleted. Everything needed to undo it is kept in
the kept object's hidden ``_merged`` property: a snapshot of each merged object, its
relationships and its mentions, and the relationships the merge made.
:func:`split_object` restores a merged object exactly from that snapshot, removes what
it had brought, and derives the kept object's fields again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from kgsearch.errors import InvalidRequest, NotFound
from kgsearch.model import Mention, ObjectIn, Relationship, RelationshipIn
from kgsearch.reports import MergeReport
from kgsearch.writes.contributions import CHUNKS, Entries, contributions
from kgsearch.writes.forget import rebuild
from kgsearch.writes.graph import WriteContext, add_objects, add_relationships
from kgsearch.writes.rows import relationship_id

__all__ = ["MERGED", "merge_objects", "split_object"]

MERGED = "_merged"
"""Kept-object property: one undo record per object merged into it."""


def _combine(a: Entries, b: Entries) -> Entries:
    out = {c: list(v) for c, v in a.items()}
    for c, entries in b.items():
        found = out.setdefault(c, [])
        found.extend(e for e in entries if e not in found)
    return {c: out[c] for c in sorted(out)}


def _subtract(a: Entries, b: Entries) -> Entries:
    out: Entries = {}
    for c, entries in a.items():
        left = [e for e in entries if e not in b.get(c, [])]
        if left:
            out[c] = left
    return out


def merge_objects(
    ctx: WriteContext,
    keep_id: str,
    merge_ids: Sequence[str],
    *,
    compatible: Callable[[str, str], bool],
    reason: str = "manual",
    score: float | None = None,
    force: bool = False,
) -> MergeReport:
    """Fold ``merge_ids`` into ``keep_id`` (see the module docstring), in one transaction.

    Raises:
        NotFound: An id is not a live object.
        InvalidRequest: Nothing to merge, the kept object among them, or types that
            cannot be one entity (a film and a person) without ``force``.
    """
    store, project = ctx.store, ctx.project
    others = [i for i in dict.fromkeys(merge_ids)]
    if not others or keep_id in others:
        raise InvalidRequest("give the object to keep and at least one other object to merge")
    found = {o.id: o for o in store.get_objects(project, [keep_id, *others])}
    missing = [i for i in [keep_id, *others] if i not in found]
    if missing:
        raise NotFound(f"no live object {missing[0]!r}")
    keep = found[keep_id]
    for i in others:
        if not force and not compatible(keep.type, found[i].type):
            raise InvalidRequest(
                f"{found[i].type} {found[i].name!r} and {keep.type} {keep.name!r} cannot be "
                "one entity (incompatible types); pass force to merge anyway"
            )
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    records = list(keep.properties.get(MERGED) or [])
    entries = contributions(keep.properties)
    touching = store.relationships_touching(project, others)
    links = store.mentions(project, object_ids=others)
    kept_links = store.mentions(project, object_ids=[keep_id])
    moved: dict[str, RelationshipIn] = {}
    loops = 0
    made: dict[str, list[str]] = {i: [] for i in others}
    joined: dict[str, list[dict[str, Any]]] = {i: [] for i in others}
    ends = {
        r.id: (
            keep_id if r.source_id in others else r.source_id,
            keep_id if r.target_id in others else r.target_id,
        )
        for r in touching
    }
    new_ids = {r.id: relationship_id(project, r.type, *ends[r.id]) for r in touching}
    existing = {r.id: r for r in store.get_relationships(project, list(set(new_ids.values())))}
    for r in touching:
        source, target = ends[r.id]
        if source == target:
            loops += 1
            continue
        new_id = new_ids[r.id]
        owner = r.source_id if r.source_id in others else r.target_id
        there = existing.get(new_id) if new_id not in moved else None
        base = moved.get(new_id)
        if there is not None and there.id not in {t.id for t in touching}:
            # meets a relationship the kept object has: one relationship, chunks joined
            joined[owner].append({"id": new_id, "chunks": contributions(r.properties)})
            moved[new_id] = _joined(there, r, source, target)
        elif base is not None:
            joined[owner].append({"id": new_id, "chunks": contributions(r.properties)})
            moved[new_id] = _joined_in(base, r)
        else:
            made[owner].append(new_id)
            moved[new_id] = _repointed(r, new_id, source, target)
    for i in others:
        other = found[i]
        entries = _combine(entries, contributions(other.properties))
        records.append(
            {
                "object": other.model_dump(mode="json", exclude={"embedding"}),
                "relationships": [
                    r.model_dump(mode="json", exclude={"embedding"})
                    for r in touching
                    if i in (r.source_id, r.target_id)
                ],
                "mentions": [m.model_dump(mode="json") for m in links if m.object_id == i],
                "made": made[i],
                "joined": joined[i],
                "new_mentions": sorted(
                    {str(m.chunk_id) for m in links if m.object_id == i and m.chunk_id}
                    - {str(m.chunk_id) for m in kept_links if m.chunk_id}
                ),
                "reason": reason,
                "score": score,
                "at": stamp,
            }
        )
    props = {**keep.properties, MERGED: records}
    if entries:
        props[CHUNKS] = entries
    inner = replace(ctx, after_commit=None)
    with store.transaction():
        store.delete(project, "object", others)  # takes their relationships with them
        add_objects(inner, [_object_in(keep, props)])
        add_relationships(inner, list(moved.values()))
        store.add_mentions(
            project,
            [
                Mention(
                    project=project, chunk_id=m.chunk_id, source_id=m.source_id, object_id=keep_id
                )
                for m in links
            ],
        )
        rebuild(inner, [keep_id], list(moved))
    ctx.committed()
    return MergeReport(kept=keep_id, objects=others, relationships=len(moved), self_loops=loops)


def _joined(there: Relationship, r: Relationship, source: str, target: str) -> RelationshipIn:
    """The relationship already between the new ends, with ``r``'s chunks added."""
    return _joined_in(_repointed(there, there.id, source, target), r)


def _joined_in(base: RelationshipIn, r: Relationship) -> RelationshipIn:
    props = dict(base.properties)
    chunks = _combine(contributions(base.properties), contributions(r.properties))
    if chunks:
        props[CHUNKS] = chunks
    return base.model_copy(
        update={
            "properties": props,
            "source_chunks": list(dict.fromkeys([*base.source_chunks, *r.source_chunks])),
        }
    )


def _repointed(r: Relationship, new_id: str, source: str, target: str) -> RelationshipIn:
    """``r`` between its new ends."""
    return RelationshipIn(
        id=new_id,
        type=r.type,
        source=source,
        target=target,
        label=r.label,
        properties=dict(r.properties),
        weight=r.weight,
        valid_from=r.valid_from,
        valid_to=r.valid_to,
        description=r.description,
        source_chunks=list(r.source_chunks),
    )


def _object_in(o: Any, properties: dict[str, Any]) -> ObjectIn:
    return ObjectIn(
        id=o.id,
        type=o.type,
        key=o.key,
        tags=list(o.tags),
        properties=properties,
        labels=list(o.labels),
    )


def split_object(ctx: WriteContext, keep_id: str, merged_id: str) -> MergeReport:
    """Undo the merge of ``merged_id`` into ``keep_id``: the merged object, its
    relationships and mentions come back as they were, and the kept object loses what
    it brought (chunk provenance, the relationships the merge made).

    Raises:
        NotFound: ``keep_id`` is not live, or ``merged_id`` was never merged into it.
    """
    store, project = ctx.store, ctx.project
    found = store.get_objects(project, [keep_id])
    if not found:
        raise NotFound(f"no live object {keep_id!r}")
    keep = found[0]
    records = list(keep.properties.get(MERGED) or [])
    index = next((n for n, rec in enumerate(records) if rec["object"]["id"] == merged_id), None)
    if index is None:
        raise NotFound(f"{merged_id!r} was not merged into {keep_id!r}")
    record = records.pop(index)
    snapshot = record["object"]
    brought = contributions(snapshot.get("properties") or {})
    props = {**keep.properties, MERGED: records}
    if not records:
        props.pop(MERGED)
    left = _subtract(contributions(keep.properties), brought)
    if left:
        props[CHUNKS] = left
    else:
        props.pop(CHUNKS, None)
    rels = [Relationship.model_validate(r) for r in record["relationships"]]
    inner = replace(ctx, after_commit=None)
    unjoined = []
    joined = {j["id"]: j["chunks"] for j in record.get("joined", [])}
    for r in store.get_relationships(project, list(joined)):
        rel_props = dict(r.properties)
        left_chunks = _subtract(contributions(r.properties), joined[r.id])
        if left_chunks:
            rel_props[CHUNKS] = left_chunks
        else:
            rel_props.pop(CHUNKS, None)
        gone = set(joined[r.id])
        unjoined.append(
            _repointed(r, r.id, r.source_id, r.target_id).model_copy(
                update={
                    "properties": rel_props,
                    "source_chunks": [
                        c for c in r.source_chunks if c not in gone or c in left_chunks
                    ],
                }
            )
        )
    with store.transaction():
        store.delete(project, "relationship", record["made"])
        if record.get("new_mentions"):
            store.delete_mentions(project, record["new_mentions"], object_id=keep_id)
        add_relationships(inner, unjoined)
        restored = ObjectIn(
            id=snapshot["id"],
            type=snapshot["type"],
            key=snapshot["key"],
            tags=snapshot.get("tags") or [],
            properties=snapshot.get("properties") or {},
            labels=snapshot.get("labels") or [],
        )
        add_objects(inner, [_object_in(keep, props), restored])
        add_relationships(
            inner,
            [
                RelationshipIn(
                    id=r.id,
                    type=r.type,
                    source=r.source_id,
                    target=r.target_id,
                    label=r.label,
                    properties=r.properties,
                    weight=r.weight,
                    valid_from=r.valid_from,
                    valid_to=r.valid_to,
                    description=r.description,
                    source_chunks=r.source_chunks,
                )
                for r in rels
            ],
        )
        store.add_mentions(project, [Mention.model_validate(m) for m in record["mentions"]])
        rebuild(inner, [keep_id], [r.id or "" for r in unjoined])
    ctx.committed()
    return MergeReport(kept=keep_id, objects=[merged_id], relationships=len(rels))
