"""Single-valued relations: a later fact closes an earlier one (Graphiti's invalidation).

A relationship whose chunks mark it single-valued carries ``_one_value_per`` (``source``:
a schema's relation type with ``single_valued``; ``target`` where an extractor says the
object holds one value, as in "X, mayor of Y"). The relationships of one type that share
that end (its *group*: the officeholders of one office) hold one value at a time, so
:func:`close_superseded` gives each one whose end no chunk states (no ``valid_to`` of its
own) the start of the next later one with another value as its ``valid_to``, and records
why in ``_invalidated`` (``{"by", "reason", "at"}``). Both rows stay; an ``as_of``
search then finds the value that held at that time and a default ("valid now") search
only the latest.

It is derived, never accumulated: every pass starts from each row's stated validity (what
its chunks say, :mod:`kgsearch.writes.contributions`; for a row extraction did not
create, its own ``valid_to`` unless a pass set it), so writing the same chunks again, in
any order, gives the same rows, and forgetting the later fact's chunk opens the earlier
fact again. An undated fact closes nothing and is closed by nothing; a row with a stated
end keeps it.

The group of a key is read with :meth:`~kgsearch.store.base.GraphReads.relationships_touching`
(every relationship of the key object), once per write for all its keys.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from datetime import UTC, datetime
from typing import Literal, NamedTuple

from kgsearch.model import Relationship, RelationshipIn
from kgsearch.writes.batch import GraphBatch, write_batch
from kgsearch.writes.contributions import INVALIDATED, ONE_VALUE_PER
from kgsearch.writes.graph import WriteContext, relationship_rows
from kgsearch.writes.rows import rewritten

__all__ = ["Group", "close_superseded", "groups_of", "superseded"]

Side = Literal["source", "target"]


class Group(NamedTuple):
    """The relationships of one type that share the end holding one value at a time."""

    key: str
    """The id of the object at that end (the office, the company)."""
    type: str
    side: Side


def groups_of(relationships: Iterable[Relationship]) -> set[Group]:
    """The groups of the single-valued relationships among ``relationships``."""
    found: set[Group] = set()
    for r in relationships:
        side = r.properties.get(ONE_VALUE_PER)
        if side == "source":
            found.add(Group(r.source_id, r.type, "source"))
        elif side == "target":
            found.add(Group(r.target_id, r.type, "target"))
    return found


def close_superseded(ctx: WriteContext, groups: Collection[Group]) -> int:
    """Close the superseded relationships of ``groups`` (and open the ones no later fact
    closes any more); call it in the transaction that wrote them.

    Returns:
        How many relationships changed.
    """
    if not groups:
        return 0
    store, project = ctx.store, ctx.project
    touching = store.relationships_touching(project, sorted({g.key for g in groups}))
    rows = list({r.id: r for r in touching}.values())
    updates: list[RelationshipIn] = []
    for group in sorted(groups):
        members = [r for r in rows if r.type == group.type and _end(r, group.side) == group.key]
        if any(r.properties.get(ONE_VALUE_PER) == group.side for r in members):
            updates.extend(superseded(members, group.side))
    if updates:
        write_batch(store, project, GraphBatch(relationships=relationship_rows(ctx, updates)))
    return len(updates)


def _end(r: Relationship, side: Side) -> str:
    return r.source_id if side == "source" else r.target_id


def _utc(when: datetime) -> datetime:
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def superseded(members: Sequence[Relationship], side: Side) -> list[RelationshipIn]:
    """The changes that make one group's validity right: each member without a stated
    end closed at the start of the first later member with another value, the others
    given back their stated end (only the members that change)."""
    other: Side = "target" if side == "source" else "source"
    dated = sorted(
        (r for r in members if r.valid_from is not None),
        key=lambda r: (_utc(r.valid_from or datetime.min), r.id),
    )
    changes: list[RelationshipIn] = []
    for r in members:
        stated = None if INVALIDATED in r.properties else r.valid_to
        props = {k: v for k, v in r.properties.items() if k != INVALIDATED}
        valid_to = stated
        if stated is None and r.valid_from is not None:
            start = _utc(r.valid_from)
            later = next(
                (
                    n
                    for n in dated
                    if _utc(n.valid_from or start) > start and _end(n, other) != _end(r, other)
                ),
                None,
            )
            if later is not None and later.valid_from is not None:
                valid_to = _utc(later.valid_from)
                props[INVALIDATED] = {
                    "by": later.id,
                    "reason": (
                        f"{r.label or r.type} holds one value at a time: a later value "
                        f"holds from {valid_to.date().isoformat()}"
                    ),
                    "at": valid_to.isoformat(),
                }
        if valid_to == r.valid_to and props == r.properties:
            continue
        changes.append(rewritten(r, properties=props, valid_to=valid_to))
    return changes
