"""Graph reads for the PostgreSQL store: BFS neighbours, edges, mentions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from kgsearch.errors import InvalidRequest
from kgsearch.model import Filters, Kind, Mention, Relationship
from kgsearch.store.base import Direction, Neighbor
from kgsearch.store.postgres.connection import Connection
from kgsearch.store.postgres.sql import filter_sql
from kgsearch.store.rows import RELATIONSHIP_COLUMNS, to_mention, to_relationship

__all__ = ["MAX_DEPTH", "edges_among", "mentions", "neighbors", "relationships_touching"]

MAX_DEPTH = 5


def relationships_touching(
    db: Connection, project: str, object_ids: Sequence[str]
) -> list[Relationship]:
    """Live relationships with either endpoint in ``object_ids``."""
    ids = list(dict.fromkeys(object_ids))
    rows = db.all(
        f"SELECT {RELATIONSHIP_COLUMNS} FROM relationships WHERE project = %s "
        "AND deleted_at IS NULL AND (source_id = ANY(%s) OR target_id = ANY(%s)) ORDER BY seq",
        (project, ids, ids),
    )
    return [to_relationship(r) for r in rows]


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
    """Objects within ``depth`` hops by breadth-first search, excluding the start ids.

    One query per hop over the whole frontier, edges in insertion order, so the
    result (and each neighbour's ``via`` edge) is the same as the SQLite store's.
    """
    if not 1 <= depth <= MAX_DEPTH:
        raise InvalidRequest(f"depth must be between 1 and {MAX_DEPTH}")
    if direction not in ("out", "in", "both"):
        raise InvalidRequest("direction must be 'out', 'in' or 'both'")
    filters = Filters(relationship_types=list(relationship_types or []) or None, as_of=as_of)
    cond, cond_params = filter_sql(Kind.RELATIONSHIP, filters)
    walks: list[tuple[str, str]] = []
    if direction in ("out", "both"):
        walks.append(("source_id", "target_id"))
    if direction in ("in", "both"):
        walks.append(("target_id", "source_id"))
    seen = set(ids)
    frontier = list(dict.fromkeys(ids))
    found: list[Neighbor] = []
    for hop in range(1, depth + 1):
        nxt: list[str] = []
        for start, other in walks:
            for row in db.all(
                f"SELECT t.{other} AS other, t.id FROM relationships t WHERE t.project = %s "
                f"AND t.deleted_at IS NULL AND t.{start} = ANY(%s){cond} ORDER BY t.seq",
                (project, frontier, *cond_params),
            ):
                if row["other"] not in seen:
                    seen.add(row["other"])
                    nxt.append(row["other"])
                    found.append(Neighbor(id=row["other"], depth=hop, via=row["id"]))
        frontier = nxt
        if not frontier:
            break
    live = {
        r["id"]
        for r in db.all(
            "SELECT id FROM objects WHERE project = %s AND deleted_at IS NULL AND id = ANY(%s)",
            (project, [n.id for n in found]),
        )
    }
    return [n for n in found if n.id in live]


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
    ids = list(dict.fromkeys(object_ids))
    rows = db.all(
        f"SELECT t.id, t.source_id, t.target_id, t.weight FROM relationships t "
        f"WHERE t.project = %s AND t.deleted_at IS NULL AND (t.source_id = ANY(%s) "
        f"OR t.target_id = ANY(%s)){cond} ORDER BY t.seq",
        (project, ids, ids, *cond_params),
    )
    return [(r["id"], r["source_id"], r["target_id"], float(r["weight"])) for r in rows]


def mentions(
    db: Connection,
    project: str,
    *,
    source_ids: Sequence[str] = (),
    chunk_ids: Sequence[str] = (),
    object_ids: Sequence[str] = (),
    relationship_ids: Sequence[str] = (),
) -> list[Mention]:
    """Mention links matching any of the given ids, in insertion order."""
    rows = db.all(
        "SELECT * FROM mentions WHERE project = %s AND (source_id = ANY(%s) "
        "OR chunk_id = ANY(%s) OR object_id = ANY(%s) OR relationship_id = ANY(%s)) "
        "ORDER BY seq",
        (project, list(source_ids), list(chunk_ids), list(object_ids), list(relationship_ids)),
    )
    return [to_mention(r) for r in rows]
