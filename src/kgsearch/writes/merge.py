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
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from kgsearch.errors import InvalidRequest, NotFound
from kgsearch.model import GraphObject, Mention, ObjectIn, Relationship, RelationshipIn
from kgsearch.reports import MergeReport
from kgsearch.writes.batch import GraphBatch, MentionDrop, write_batch
from kgsearch.writes.contributions import CHUNKS, Entries, contributions
from kgsearch.writes.forget import rebuild
from kgsearch.writes.graph import WriteContext, add_objects, relationship_rows
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


@dataclass
class _Moves:
    """Where a merge puts the relationships touching the merged objects.

    Attributes:
        moved: The relationships to write, by their new id.
        made: Per merged object, the ids of relationships the merge made.
        joined: Per merged object, what it added to relationships already there.
        loops: Relationships between two merged objects (dropped).
    """

    moved: dict[str, RelationshipIn]
    made: dict[str, list[str]]
    joined: dict[str, list[dict[str, Any]]]
    loops: int = 0


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
    others = list(dict.fromkeys(merge_ids))
    if not others or keep_id in others:
        raise InvalidRequest("give the object to keep and at least one other object to merge")
    found = _live(store.get_objects(project, [keep_id, *others]), [keep_id, *others])
    keep = found[keep_id]
    if not force:
        _check_types(keep, [found[i] for i in others], compatible)
    touching = store.relationships_touching(project, others)
    links = store.mentions(project, object_ids=others)
    kept_links = store.mentions(project, object_ids=[keep_id])
    ends = _new_ends(keep_id, others, touching)
    new_ids = {r.id: relationship_id(project, r.type, *ends[r.id]) for r in touching}
    existing = {r.id: r for r in store.get_relationships(project, list(set(new_ids.values())))}
    moves = _moves(others, touching, ends, new_ids, existing)
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    records = [
        _undo_record(found[i], touching, links, kept_links, moves, reason, score, stamp)
        for i in others
    ]
    props = _merged_properties(keep, [found[i] for i in others], records)
    inner = replace(ctx, after_commit=None)
    with store.transaction():
        write_batch(store, project, GraphBatch(delete_objects=others))  # takes their edges
        add_objects(inner, [_object_in(keep, props)])
        batch = GraphBatch(
            relationships=relationship_rows(inner, list(moves.moved.values())),
            mentions=[
                Mention(
                    project=project, chunk_id=m.chunk_id, source_id=m.source_id, object_id=keep_id
                )
                for m in links
            ],
        )
        write_batch(store, project, batch)
        rebuild(inner, [keep_id], list(moves.moved))
    ctx.committed()
    return MergeReport(
        kept=keep_id, objects=others, relationships=len(moves.moved), self_loops=moves.loops
    )


def _live(objects: Sequence[GraphObject], ids: Sequence[str]) -> dict[str, GraphObject]:
    """The objects by id, or NotFound naming the first id that is not live."""
    found = {o.id: o for o in objects}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFound(f"no live object {missing[0]!r}")
    return found


def _check_types(
    keep: GraphObject, others: Sequence[GraphObject], compatible: Callable[[str, str], bool]
) -> None:
    for other in others:
        if not compatible(keep.type, other.type):
            raise InvalidRequest(
                f"{other.type} {other.name!r} and {keep.type} {keep.name!r} cannot be "
                "one entity (incompatible types); pass force to merge anyway"
            )


def _new_ends(
    keep_id: str, others: Sequence[str], touching: Sequence[Relationship]
) -> dict[str, tuple[str, str]]:
    """Each touching relationship's ends once the merged objects are the kept one."""
    return {
        r.id: (
            keep_id if r.source_id in others else r.source_id,
            keep_id if r.target_id in others else r.target_id,
        )
        for r in touching
    }


def _moves(
    others: Sequence[str],
    touching: Sequence[Relationship],
    ends: dict[str, tuple[str, str]],
    new_ids: dict[str, str],
    existing: dict[str, Relationship],
) -> _Moves:
    """Re-point the touching relationships: a self-loop goes, one that meets a
    relationship already there (or another re-pointed one) joins it, the rest move."""
    moves = _Moves(moved={}, made={i: [] for i in others}, joined={i: [] for i in others})
    touched = {t.id for t in touching}
    for r in touching:
        source, target = ends[r.id]
        if source == target:
            moves.loops += 1
            continue
        new_id = new_ids[r.id]
        owner = r.source_id if r.source_id in others else r.target_id
        there = existing.get(new_id) if new_id not in moves.moved else None
        base = moves.moved.get(new_id)
        if there is not None and there.id not in touched:
            # meets a relationship the kept object has: one relationship, chunks joined
            moves.joined[owner].append({"id": new_id, "chunks": contributions(r.properties)})
            moves.moved[new_id] = _joined(there, r, source, target)
        elif base is not None:
            moves.joined[owner].append({"id": new_id, "chunks": contributions(r.properties)})
            moves.moved[new_id] = _joined_in(base, r)
        else:
            moves.made[owner].append(new_id)
            moves.moved[new_id] = _repointed(r, new_id, source, target)
    return moves


def _undo_record(
    other: GraphObject,
    touching: Sequence[Relationship],
    links: Sequence[Mention],
    kept_links: Sequence[Mention],
    moves: _Moves,
    reason: str,
    score: float | None,
    stamp: str,
) -> dict[str, Any]:
    """What :func:`split_object` needs to undo the merge of ``other``."""
    i = other.id
    return {
        "object": other.model_dump(mode="json", exclude={"embedding"}),
        "relationships": [
            r.model_dump(mode="json", exclude={"embedding"})
            for r in touching
            if i in (r.source_id, r.target_id)
        ],
        "mentions": [m.model_dump(mode="json") for m in links if m.object_id == i],
        "made": moves.made[i],
        "joined": moves.joined[i],
        "new_mentions": sorted(
            {str(m.chunk_id) for m in links if m.object_id == i and m.chunk_id}
            - {str(m.chunk_id) for m in kept_links if m.chunk_id}
        ),
        "reason": reason,
        "score": score,
        "at": stamp,
    }


def _merged_properties(
    keep: GraphObject, others: Sequence[GraphObject], records: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The kept object's properties: its undo records and everyone's chunk provenance."""
    entries = contributions(keep.properties)
    for other in others:
        entries = _combine(entries, contributions(other.properties))
    props = {**keep.properties, MERGED: [*(keep.properties.get(MERGED) or []), *records]}
    if entries:
        props[CHUNKS] = entries
    return props


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
    keep = _live(store.get_objects(project, [keep_id]), [keep_id])[keep_id]
    records = list(keep.properties.get(MERGED) or [])
    index = next((n for n, rec in enumerate(records) if rec["object"]["id"] == merged_id), None)
    if index is None:
        raise NotFound(f"{merged_id!r} was not merged into {keep_id!r}")
    record = records.pop(index)
    snapshot = record["object"]
    rels = [Relationship.model_validate(r) for r in record["relationships"]]
    joined = {j["id"]: j["chunks"] for j in record.get("joined", [])}
    unjoined = [_unjoined(r, joined[r.id]) for r in store.get_relationships(project, list(joined))]
    inner = replace(ctx, after_commit=None)
    with store.transaction():
        undo = GraphBatch(
            delete_relationships=list(record["made"]),
            drop_mentions=[MentionDrop(record.get("new_mentions") or [], keep_id)],
        )
        write_batch(store, project, undo)
        write_batch(
            store,
            project,
            GraphBatch(relationships=relationship_rows(inner, unjoined)),
        )
        kept = _object_in(keep, _split_properties(keep, records, snapshot))
        add_objects(inner, [kept, _restored(snapshot)])
        batch = GraphBatch(
            relationships=relationship_rows(
                inner, [_repointed(r, r.id, r.source_id, r.target_id) for r in rels]
            ),
            mentions=[Mention.model_validate(m) for m in record["mentions"]],
        )
        write_batch(store, project, batch)
        rebuild(inner, [keep_id], [r.id or "" for r in unjoined])
    ctx.committed()
    return MergeReport(kept=keep_id, objects=[merged_id], relationships=len(rels))


def _split_properties(
    keep: GraphObject, records: Sequence[dict[str, Any]], snapshot: dict[str, Any]
) -> dict[str, Any]:
    """The kept object's properties without one merge: the other undo records, and the
    chunk provenance less what the merged object brought."""
    props = {**keep.properties, MERGED: list(records)}
    if not records:
        props.pop(MERGED)
    left = _subtract(
        contributions(keep.properties), contributions(snapshot.get("properties") or {})
    )
    if left:
        props[CHUNKS] = left
    else:
        props.pop(CHUNKS, None)
    return props


def _unjoined(r: Relationship, brought: Entries) -> RelationshipIn:
    """A relationship the merge joined, less the chunks the merged one brought to it."""
    props = dict(r.properties)
    left = _subtract(contributions(r.properties), brought)
    if left:
        props[CHUNKS] = left
    else:
        props.pop(CHUNKS, None)
    gone = set(brought)
    return _repointed(r, r.id, r.source_id, r.target_id).model_copy(
        update={
            "properties": props,
            "source_chunks": [c for c in r.source_chunks if c not in gone or c in left],
        }
    )


def _restored(snapshot: dict[str, Any]) -> ObjectIn:
    """The merged object as it was when merged."""
    return ObjectIn(
        id=snapshot["id"],
        type=snapshot["type"],
        key=snapshot["key"],
        tags=snapshot.get("tags") or [],
        properties=snapshot.get("properties") or {},
        labels=snapshot.get("labels") or [],
    )
