"""Graph reads of the PostgreSQL store: rows by id or reference, pages, counts, streams,
breadth-first traversal, edges and mention links.

:class:`PostgresReads` is the ``GraphReads`` slice of
:class:`~kgsearch.store.postgres.store.PostgresStore`, bound to its connection pool.
Ids go to the server as one array parameter (``= ANY(%s)``), and rows come back in
insertion order (``seq``), so results match the SQLite store's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, Literal

from kgsearch.model import (
    Filters,
    Kind,
    Mention,
    ObjectRef,
    Page,
    Relationship,
)
from kgsearch.store.common import (
    RowGetters,
    edge_filters,
    every_page,
    page_of,
    page_start,
    row_table,
    traversal_filters,
)
from kgsearch.store.postgres.connection import Connection
from kgsearch.store.postgres.sql import filter_sql
from kgsearch.store.records import Direction, Endpoint, Neighbor, RowKind
from kgsearch.store.rows import RELATIONSHIP_COLUMNS, to_mention, to_relationship
from kgsearch.store.tracing import Trace, traced

__all__ = ["PostgresReads"]


class PostgresReads(RowGetters):
    """The ``GraphReads`` capability over PostgreSQL."""

    db: Connection

    def resolve(self, project: str, refs: Sequence[ObjectRef]) -> dict[ObjectRef, Endpoint]:
        """Resolve natural references to live objects (missing refs are absent)."""
        unique = list(dict.fromkeys(refs))
        if not unique:
            return {}
        rows = self.db.all(
            "SELECT o.id, o.type, o.key, o.properties FROM objects o JOIN "
            "unnest(%s::text[], %s::text[]) AS w(type, key) ON o.type = w.type "
            "AND o.key = w.key WHERE o.project = %s AND o.deleted_at IS NULL",
            ([r.type for r in unique], [r.key for r in unique], project),
        )
        return {
            ObjectRef(type=r["type"], key=r["key"]): Endpoint(
                r["id"], r["type"], r["key"], r["properties"]
            )
            for r in rows
        }

    def endpoints(self, project: str, ids: Sequence[str]) -> dict[str, Endpoint]:
        """Live objects by id, as endpoints."""
        rows = self.db.all(
            "SELECT id, type, key, properties FROM objects WHERE project = %s "
            "AND deleted_at IS NULL AND id = ANY(%s)",
            (project, list(dict.fromkeys(ids))),
        )
        return {r["id"]: Endpoint(r["id"], r["type"], r["key"], r["properties"]) for r in rows}

    def _get(self, project: str, kind: RowKind, ids: Sequence[str]) -> list[Any]:
        """Live rows of a kind by id, decoded, in the order asked (missing ids skipped)."""
        table = row_table(kind)
        if not ids:
            return []
        rows = {
            r["id"]: r
            for r in self.db.all(
                f"SELECT {table.columns} FROM {table.name} WHERE project = %s "
                "AND deleted_at IS NULL AND id = ANY(%s)",
                (project, list(dict.fromkeys(ids))),
            )
        }
        return [table.decode(rows[i]) for i in ids if i in rows]

    def list_rows(
        self,
        project: str,
        kind: RowKind,
        *,
        limit: int = 100,
        cursor: str | None = None,
        filters: Filters | None = None,
    ) -> Page:
        """One page of live rows in insertion order; pass ``next_cursor`` for the next.

        Raises:
            InvalidRequest: The limit is outside 1 to 10000, the cursor is not one this
                store handed out, or the kind is unknown.
        """
        after = page_start(limit, cursor)
        table = row_table(kind)
        where: str = ""
        params: list[Any] = []
        if kind != "source":
            where, params = filter_sql(Kind(kind), filters, current_only=False)
        rows = self.db.all(
            f"SELECT seq AS _seq, {table.columns} FROM {table.name} t WHERE project = %s "
            f"AND deleted_at IS NULL AND seq > %s{where} ORDER BY seq LIMIT %s",
            (project, after, *params, limit + 1),
        )
        return page_of(rows, limit, table.decode, "_seq")

    def counts(self, project: str) -> dict[str, int]:
        """Live rows per kind, and mention links, in one statement."""
        row = self.db.one(
            "SELECT (SELECT count(*) FROM objects WHERE project = %(p)s AND deleted_at IS NULL) "
            "AS objects, (SELECT count(*) FROM relationships WHERE project = %(p)s "
            "AND deleted_at IS NULL) AS relationships, (SELECT count(*) FROM chunks "
            "WHERE project = %(p)s AND deleted_at IS NULL) AS chunks, (SELECT count(*) "
            "FROM sources WHERE project = %(p)s AND deleted_at IS NULL) AS sources, "
            "(SELECT count(*) FROM mentions WHERE project = %(p)s) AS mentions",
            {"p": project},
        )
        assert row is not None
        return {name: int(value) for name, value in row.items()}

    def iter_rows(
        self, project: str, kind: Literal["object", "relationship", "chunk", "source", "mention"]
    ) -> Iterator[Any]:
        """Stream every live row of a kind, in insertion order, page by page."""
        if kind == "mention":
            last = 0
            while True:
                rows = self.db.all(
                    "SELECT * FROM mentions WHERE project = %s AND seq > %s ORDER BY seq "
                    "LIMIT 1000",
                    (project, last),
                )
                if not rows:
                    return
                last = rows[-1]["seq"]
                yield from (to_mention(r) for r in rows)
        yield from every_page(self.list_rows, project, kind)

    def relationships_touching(self, project: str, object_ids: Sequence[str]) -> list[Relationship]:
        """Live relationships with either endpoint in ``object_ids``."""
        ids = list(dict.fromkeys(object_ids))
        rows = self.db.all(
            f"SELECT {RELATIONSHIP_COLUMNS} FROM relationships WHERE project = %s "
            "AND deleted_at IS NULL AND (source_id = ANY(%s) OR target_id = ANY(%s)) ORDER BY seq",
            (project, ids, ids),
        )
        return [to_relationship(r) for r in rows]

    @traced
    def neighbors(
        self,
        project: str,
        ids: Sequence[str],
        *,
        depth: int = 1,
        direction: Direction = "both",
        relationship_types: Sequence[str] | None = None,
        as_of: datetime | None = None,
        trace: Trace | None = None,
    ) -> list[Neighbor]:
        """Objects within ``depth`` hops by breadth-first search, excluding the start ids.

        One query per hop and direction over the whole frontier, edges in insertion
        order, so the result (and each neighbour's ``via`` edge) is the SQLite store's.

        Raises:
            InvalidRequest: ``depth`` or ``direction`` is out of range.
        """
        filters = traversal_filters(depth, direction, relationship_types, as_of)
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
                for row in self.db.all(
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
            for r in self.db.all(
                "SELECT id FROM objects WHERE project = %s AND deleted_at IS NULL AND id = ANY(%s)",
                (project, [n.id for n in found]),
            )
        }
        return [n for n in found if n.id in live]

    @traced
    def edges_among(
        self,
        project: str,
        object_ids: Sequence[str],
        *,
        relationship_types: Sequence[str] | None = None,
        as_of: datetime | None = None,
        trace: Trace | None = None,
    ) -> list[tuple[str, str, str, float]]:
        """(relationship id, source id, target id, weight) of live edges touching the ids."""
        cond, cond_params = filter_sql(Kind.RELATIONSHIP, edge_filters(relationship_types, as_of))
        ids = list(dict.fromkeys(object_ids))
        rows = self.db.all(
            f"SELECT t.id, t.source_id, t.target_id, t.weight FROM relationships t "
            f"WHERE t.project = %s AND t.deleted_at IS NULL AND (t.source_id = ANY(%s) "
            f"OR t.target_id = ANY(%s)){cond} ORDER BY t.seq",
            (project, ids, ids, *cond_params),
        )
        return [(r["id"], r["source_id"], r["target_id"], float(r["weight"])) for r in rows]

    @traced
    def typed_edges(
        self,
        project: str,
        object_ids: Sequence[str],
        *,
        limit: int,
        among: bool = False,
        as_of: datetime | None = None,
        trace: Trace | None = None,
    ) -> list[tuple[str, str, str, str]]:
        """At most ``limit`` live edges out of and into each object (one lateral query);
        per object in the order asked, out before in, oldest first, each edge once, as
        in the SQLite store. With ``among``, only edges whose two ends are both asked."""
        cond, cond_params = filter_sql(Kind.RELATIONSHIP, edge_filters(None, as_of))
        ids = list(dict.fromkeys(object_ids))
        if not ids:
            return []
        side = (
            "(SELECT {n} AS side, t.id, t.source_id, t.target_id, t.type, t.seq "
            "FROM relationships t WHERE t.project = %s AND t.{column} = o.id "
            "AND t.deleted_at IS NULL{cond} ORDER BY t.seq LIMIT {limit:d})"
        )
        # the limit is written into the statement (an int): a LIMIT parameter makes the
        # planner price the prepared statement's generic plan for a tenth of the table,
        # so it plans every call again (see search.py)
        out_side = side.format(n=0, column="source_id", cond=cond, limit=int(limit))
        in_side = side.format(n=1, column="target_id", cond=cond, limit=int(limit))
        # the cap counts every edge of an object; ``among`` filters after it (a hashed
        # semi-join on the asked ids, not ``= ANY`` scanning the array for each edge)
        both = (
            " WHERE e.source_id IN (SELECT id FROM asked) AND e.target_id IN (SELECT id FROM asked)"
            if among
            else ""
        )
        rows = self.db.all(
            "WITH asked AS (SELECT * FROM unnest(%s::text[]) WITH ORDINALITY AS a(id, pos)) "
            f"SELECT e.id, e.source_id, e.target_id, e.type FROM asked o, "
            f"LATERAL ({out_side} UNION ALL {in_side}) e{both} ORDER BY o.pos, e.side, e.seq",
            (ids, project, *cond_params, project, *cond_params),
        )
        found: dict[str, tuple[str, str, str, str]] = {}
        for r in rows:
            found.setdefault(r["id"], (r["id"], r["source_id"], r["target_id"], r["type"]))
        return list(found.values())

    @traced
    def chunk_ids_of(self, project: str, source_ids: Sequence[str]) -> list[str]:
        """Ids of the live chunks of these sources, in insertion order."""
        rows = self.db.all(
            "SELECT id FROM chunks WHERE project = %s AND deleted_at IS NULL "
            "AND source_id = ANY(%s) ORDER BY seq",
            (project, list(source_ids)),
        )
        return [r["id"] for r in rows]

    def mentions(
        self,
        project: str,
        *,
        source_ids: Sequence[str] = (),
        chunk_ids: Sequence[str] = (),
        object_ids: Sequence[str] = (),
        relationship_ids: Sequence[str] = (),
        trace: Trace | None = None,
    ) -> list[Mention]:
        """Mention links matching any of the given ids, in insertion order."""
        rows = self.db.all(
            "SELECT * FROM mentions WHERE project = %s AND (source_id = ANY(%s) "
            "OR chunk_id = ANY(%s) OR object_id = ANY(%s) OR relationship_id = ANY(%s)) "
            "ORDER BY seq",
            (project, list(source_ids), list(chunk_ids), list(object_ids), list(relationship_ids)),
        )
        return [to_mention(r) for r in rows]
