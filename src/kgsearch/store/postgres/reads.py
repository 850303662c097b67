"""The PostgreSQL statements of the graph reads (:mod:`kgsearch.store.graph_reads`):
rows by id or reference, counts, and the edge and mention queries behind traversal.

Ids go to the server as one array parameter (``= ANY(%s)``), and rows come back in
insertion order (``seq``), so results match the SQLite store's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgsearch.model import (
    ObjectRef,
    Relationship,
)
from kgsearch.store.common import row_table
from kgsearch.store.graph_reads import GraphReadsCore
from kgsearch.store.postgres.connection import Connection
from kgsearch.store.records import Endpoint, RowKind
from kgsearch.store.rows import RELATIONSHIP_COLUMNS, to_relationship
from kgsearch.store.tracing import traced

__all__ = ["PostgresReads"]

# Ids as a subquery's value, which the planner does not look into: a prepared statement's
# plans then cost the same whatever the array, so PostgreSQL keeps the generic plan after
# five runs instead of planning every call (seeing the array, a custom plan for one id
# cost less than the generic plan's guess of ten, every time). Citus plans such a
# subquery apart from its statement, so there the array is passed plainly.
_ONCE_PLANNED = "(SELECT %s::text[])::text[]"
_PLAIN = "%s::text[]"


class PostgresReads(GraphReadsCore):
    """The PostgreSQL side of ``GraphReads``."""

    db: Connection
    # the store's tables distributed by row id on Citus (none elsewhere)
    spread: frozenset[str] = frozenset()
    # whether the database is a Citus coordinator
    citus: bool = False

    def _ids(self) -> str:
        """How an array of ids is written into a statement (see _ONCE_PLANNED)."""
        return _PLAIN if self.citus else _ONCE_PLANNED

    def resolve(self, project: str, refs: Sequence[ObjectRef]) -> dict[ObjectRef, Endpoint]:
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
        rows = self.db.all(
            "SELECT id, type, key, properties FROM objects WHERE project = %s "
            "AND deleted_at IS NULL AND id = ANY(%s)",
            (project, list(dict.fromkeys(ids))),
        )
        return {r["id"]: Endpoint(r["id"], r["type"], r["key"], r["properties"]) for r in rows}

    def _get(self, project: str, kind: RowKind, ids: Sequence[str]) -> list[Any]:
        table = row_table(kind)
        if not ids:
            return []
        rows = {
            r["id"]: r
            for r in self.db.all(
                f"SELECT {table.columns} FROM {table.name} WHERE project = %s "
                f"AND deleted_at IS NULL AND id = ANY({self._ids()})",
                (project, list(dict.fromkeys(ids))),
            )
        }
        return [table.decode(rows[i]) for i in ids if i in rows]

    def counts(self, project: str) -> dict[str, int]:
        # in one statement
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

    def relationships_touching(self, project: str, object_ids: Sequence[str]) -> list[Relationship]:
        ids = list(dict.fromkeys(object_ids))
        rows = self.db.all(
            f"SELECT {RELATIONSHIP_COLUMNS} FROM relationships WHERE project = %s "
            "AND deleted_at IS NULL AND (source_id = ANY(%s) OR target_id = ANY(%s)) ORDER BY seq",
            (project, ids, ids),
        )
        return [to_relationship(r) for r in rows]

    def _edges_from(
        self, project: str, frontier: list[str], walk: tuple[str, str], cond: Any
    ) -> list[Any]:
        (start, other), (where, params) = walk, cond
        return self.db.all(
            f"SELECT t.{other} AS other, t.id FROM relationships t WHERE t.project = %s "
            f"AND t.deleted_at IS NULL AND t.{start} = ANY(%s){where} ORDER BY t.seq",
            (project, frontier, *params),
        )

    def _edges_touching(self, project: str, ids: list[str], cond: Any) -> list[Any]:
        where, params = cond
        return self.db.all(
            f"SELECT t.id, t.source_id, t.target_id, t.weight FROM relationships t "
            f"WHERE t.project = %s AND t.deleted_at IS NULL AND (t.source_id = ANY(%s) "
            f"OR t.target_id = ANY(%s)){where} ORDER BY t.seq",
            (project, ids, ids, *params),
        )

    def _capped_edges(
        self, project: str, ids: list[str], limit: int, among: bool, cond: Any
    ) -> list[Any]:
        where, params = cond
        side = (
            "(SELECT {n} AS side, t.id, t.source_id, t.target_id, t.type, t.seq "
            "FROM relationships t WHERE t.project = %s AND t.{column} = o.id "
            "AND t.deleted_at IS NULL{cond} ORDER BY t.seq LIMIT {limit:d})"
        )
        # the limit is written into the statement (an int): a LIMIT parameter makes the
        # planner price the prepared statement's generic plan for a tenth of the table,
        # so it plans every call again (see search.py)
        out_side = side.format(n=0, column="source_id", cond=where, limit=limit)
        in_side = side.format(n=1, column="target_id", cond=where, limit=limit)
        # ``among`` is a hashed semi-join on the asked ids, not ``= ANY`` scanning the
        # array for each edge
        both = (
            " WHERE e.source_id IN (SELECT id FROM asked) AND e.target_id IN (SELECT id FROM asked)"
            if among
            else ""
        )
        if "relationships" in self.spread:
            return self._capped_spread_edges(project, ids, limit, both, cond)
        return self.db.all(
            f"WITH asked AS (SELECT * FROM unnest({self._ids()}) WITH ORDINALITY "
            "AS a(id, pos)) SELECT e.id, e.source_id, e.target_id, e.type FROM asked o, "
            f"LATERAL ({out_side} UNION ALL {in_side}) e{both} ORDER BY o.pos, e.side, e.seq",
            (ids, project, *params, project, *params),
        )

    def _capped_spread_edges(
        self, project: str, ids: list[str], limit: int, both: str, cond: Any
    ) -> list[Any]:
        """:meth:`_capped_edges` on spread relationships (Citus runs no subquery correlated
        with an array's elements across shards): every live edge touching the ids is read
        from the shards into the coordinator, which caps each id's sides there."""
        where, params = cond
        side = (
            "(SELECT {n} AS side, t.id, t.source_id, t.target_id, t.type, t.seq "
            "FROM touching t WHERE t.{column} = o.id ORDER BY t.seq LIMIT {limit:d})"
        )
        out_side = side.format(n=0, column="source_id", limit=limit)
        in_side = side.format(n=1, column="target_id", limit=limit)
        return self.db.all(
            "WITH asked AS (SELECT * FROM unnest(%s::text[]) WITH ORDINALITY AS a(id, pos)), "
            "touching AS MATERIALIZED (SELECT t.id, t.source_id, t.target_id, t.type, t.seq "
            "FROM relationships t WHERE t.project = %s AND t.deleted_at IS NULL "
            f"AND (t.source_id = ANY(%s) OR t.target_id = ANY(%s)){where}) "
            "SELECT e.id, e.source_id, e.target_id, e.type FROM asked o, "
            f"LATERAL ({out_side} UNION ALL {in_side}) e{both} ORDER BY o.pos, e.side, e.seq",
            (ids, project, ids, ids, *params),
        )

    @traced
    def chunk_ids_of(self, project: str, source_ids: Sequence[str]) -> list[str]:
        rows = self.db.all(
            "SELECT id FROM chunks WHERE project = %s AND deleted_at IS NULL "
            "AND source_id = ANY(%s) ORDER BY seq",
            (project, list(source_ids)),
        )
        return [r["id"] for r in rows]

    def _mention_rows(self, project: str, column: str, ids: list[str]) -> list[Any]:
        return self.db.all(
            f"SELECT seq AS _pos, * FROM mentions WHERE project = %s AND {column} = ANY(%s) "
            "ORDER BY seq",
            (project, ids),
        )
