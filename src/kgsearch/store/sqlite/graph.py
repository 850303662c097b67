"""Graph reads for the SQLite store: traversal (BFS neighbours, edges) and mentions."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from kgsearch.errors import InvalidRequest
from kgsearch.model import Filters, Kind, Mention, Relationship
from kgsearch.store.base import Direction, Neighbor
from kgsearch.store.rows import RELATIONSHIP_COLUMNS, to_mention, to_relationship
from kgsearch.store.sqlite.connection import Connection
from kgsearch.store.sqlite.sql import chunked, filter_sql, placeholders

__all__ = ["MAX_DEPTH", "edges_among", "mentions", "neighbors", "relationships_touching"]

MAX_DEPTH = 5
_MAX_DEPTH = MAX_DEPTH


def relationships_touching(
    db: Connection, project: str, object_ids: Sequence[str]
) -> list[Relationship]:
    """Live relationships with either endpoint in ``object_ids``."""
    found: dict[str, Relationship] = {}
    for part in chunked(list(dict.fromkeys(object_ids)), 250):
        marks = placeholders(len(part))
        for row in db.all(
            f"SELECT {RELATIONSHIP_COLUMNS} FROM relationships WHERE project = ? "
            f"AND deleted_at IS NULL AND (source_id IN ({marks}) OR target_id IN ({marks}))",
            (project, *part, *part),
        ):
            found[row["id"]] = to_relationship(row)
    return list(found.values())


def neighbors(
    db: Connection,
    project: str,
    ids: Sequence[str],
    *,
    depth: int = 1,
    direction: Direction = "both",
    relationship_types: Sequence[str] | None = None,
    as_of: datetime | None = None,
) -> list[Neighbor]:
    """Objects within ``depth`` hops by breadth-first search, excluding the start ids."""
    if not 1 <= depth <= _MAX_DEPTH:
        raise InvalidRequest(f"depth must be between 1 and {_MAX_DEPTH}")
    if direction not in ("out", "in", "both"):
        raise InvalidRequest("direction must be 'out', 'in' or 'both'")
    filters = Filters(relationship_types=list(relationship_types or []) or None, as_of=as_of)
    cond, cond_params = filter_sql(Kind.RELATIONSHIP, filters)
    seen = set(ids)
    frontier = list(dict.fromkeys(ids))
    found: list[Neighbor] = []
    for hop in range(1, depth + 1):
        nxt: list[str] = []
        for part in chunked(frontier, 250):
            marks = placeholders(len(part))
            for row in _edges_from(db, project, part, marks, direction, cond, cond_params):
                other, via = row
                if other not in seen:
                    seen.add(other)
                    nxt.append(other)
                    found.append(Neighbor(id=other, depth=hop, via=via))
        frontier = nxt
        if not frontier:
            break
    live: set[str] = set()
    for part in chunked([n.id for n in found]):
        live.update(
            r[0]
            for r in db.all(
                f"SELECT id FROM objects WHERE project = ? AND deleted_at IS NULL "
                f"AND id IN ({placeholders(len(part))})",
                (project, *part),
            )
        )
    return [n for n in found if n.id in live]


def _edges_from(
    db: Connection,
    project: str,
    part: Sequence[str],
    marks: str,
    direction: Direction,
    cond: str,
    cond_params: list[Any],
) -> Iterator[tuple[str, str]]:
    queries: list[tuple[str, str]] = []
    if direction in ("out", "both"):
        queries.append(("source_id", "target_id"))
    if direction in ("in", "both"):
        queries.append(("target_id", "source_id"))
    for start, other in queries:
        for row in db.all(
            f"SELECT t.{other} AS other, t.id FROM relationships t WHERE t.project = ? "
            f"AND t.deleted_at IS NULL AND t.{start} IN ({marks}){cond} ORDER BY t.rowid",
            (project, *part, *cond_params),
        ):
            yield row["other"], row["id"]


def edges_among(
    db: Connection,
    project: str,
    object_ids: Sequence[str],
    *,
    relationship_types: Sequence[str] | None = None,
    as_of: datetime | None = None,
) -> list[tuple[str, str, str, float]]:
    """(relationship id, source id, target id, weight) of live edges touching the ids."""
    cond, cond_params = filter_sql(
        Kind.RELATIONSHIP,
        Filters(
            relationship_types=list(relationship_types) if relationship_types else None,
            as_of=as_of,
        ),
    )
    found: dict[str, tuple[str, str, str, float]] = {}
    for part in chunked(list(dict.fromkeys(object_ids)), 250):
        marks = placeholders(len(part))
        for row in db.all(
            f"SELECT t.id, t.source_id, t.target_id, t.weight FROM relationships t "
            f"WHERE t.project = ? AND t.deleted_at IS NULL AND (t.source_id IN ({marks}) "
            f"OR t.target_id IN ({marks})){cond}",
            (project, *part, *part, *cond_params),
        ):
            found[row["id"]] = (row["id"], row["source_id"], row["target_id"], row["weight"])
    return list(found.values())


def mentions(
    db: Connection,
    project: str,
    *,
    source_ids: Sequence[str] = (),
    chunk_ids: Sequence[str] = (),
    object_ids: Sequence[str] = (),
    relationship_ids: Sequence[str] = (),
) -> list[Mention]:
    """Mention links matching any of the given ids."""
    found: dict[tuple[str, ...], Mention] = {}
    for column, ids in (
        ("source_id", source_ids),
        ("chunk_id", chunk_ids),
        ("object_id", object_ids),
        ("relationship_id", relationship_ids),
    ):
        for part in chunked(list(ids)):
            for row in db.all(
                f"SELECT * FROM mentions WHERE project = ? AND {column} IN "
                f"({placeholders(len(part))}) ORDER BY rowid",
                (project, *part),
            ):
                key = (
                    row["source_id"],
                    row["chunk_id"],
                    row["object_id"],
                    row["relationship_id"],
                )
                found[key] = to_mention(row)
    return list(found.values())
