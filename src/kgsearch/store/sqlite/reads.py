"""The SQLite statements of the graph reads (:mod:`kgsearch.store.graph_reads`): rows
by id or reference, counts, and the edge and mention queries behind traversal.

Statements stay under SQLite's parameter limit by asking for ids in chunks, and steer
the planner to the right index through rowid subqueries where it would otherwise scan
a project's rows.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kgsearch.model import (
    ObjectRef,
    Relationship,
)
from kgsearch.store.common import row_table
from kgsearch.store.counts import live_counts
from kgsearch.store.graph_reads import GraphReadsCore
from kgsearch.store.records import Endpoint, RowKind
from kgsearch.store.rows import RELATIONSHIP_COLUMNS, to_relationship
from kgsearch.store.rowsql import by_id_sql, resolve_sql
from kgsearch.store.sqlite.connection import Connection
from kgsearch.store.sqlite.row_cache import CACHED_KINDS, RowCache, epoch_of
from kgsearch.store.sqlite.sql import chunked, placeholders
from kgsearch.store.tracing import active, traced

__all__ = ["SQLiteReads"]

_AMONG = " AND e.%s IN (SELECT value FROM json_each(?))"
"""Keeps an edge whose other end is also one of the ids asked (``typed_edges(among=True)``)."""


def _touching(n: int) -> str:
    """``t.rowid IN (...)``: the relationships with either end among ``n`` ids (bound as
    project, ids, project, ids), by two index searches. Without statistics SQLite
    answers ``source_id IN (...) OR target_id IN (...)`` by scanning every relationship
    of the project (1.2 s for 250 ids on MetaQA; 17 ms this way)."""
    marks = placeholders(n)
    return (
        f"t.rowid IN (SELECT rowid FROM relationships WHERE project = ? AND source_id IN "
        f"({marks}) UNION ALL SELECT rowid FROM relationships WHERE project = ? AND "
        f"target_id IN ({marks}))"
    )


class SQLiteReads(GraphReadsCore):
    """The SQLite side of ``GraphReads``."""

    db: Connection
    row_cache: RowCache

    def resolve(self, project: str, refs: Sequence[ObjectRef]) -> dict[ObjectRef, Endpoint]:
        found: dict[ObjectRef, Endpoint] = {}
        unique = list(dict.fromkeys(refs))
        for part in chunked(unique, 200):
            params: list[Any] = []
            for ref in part:
                params.extend((ref.type, ref.key))
            rows = self.db.all(resolve_sql(len(part)), [*params, project])
            for row in rows:
                endpoint = Endpoint(
                    row["id"], row["type"], row["key"], json.loads(row["properties"])
                )
                found[ObjectRef(type=row["type"], key=row["key"])] = endpoint
        return found

    def endpoints(self, project: str, ids: Sequence[str]) -> dict[str, Endpoint]:
        found: dict[str, Endpoint] = {}
        for part in chunked(list(dict.fromkeys(ids))):
            for row in self.db.all(
                f"SELECT id, type, key, properties FROM objects WHERE project = ? "
                f"AND deleted_at IS NULL AND id IN ({placeholders(len(part))})",
                (project, *part),
            ):
                found[row["id"]] = Endpoint(
                    row["id"], row["type"], row["key"], json.loads(row["properties"])
                )
        return found

    def _get(self, project: str, kind: RowKind, ids: Sequence[str]) -> list[Any]:
        wanted = list(dict.fromkeys(ids))
        if kind not in CACHED_KINDS or self.db.held_here or not wanted or active():
            return self._decoded(project, kind, wanted, ids)
        # the epoch first, then the rows (see row_cache.py)
        epoch = epoch_of(self.db, kind)
        if epoch is None:
            return self._decoded(project, kind, wanted, ids)
        # the cache holds each row's values, a tuple of strings and numbers that the
        # collector stops tracking, not its decoded model (eight tracked objects a row:
        # after gc.freeze, 300 MetaQA searches left 61,839 in generation 2 and a full
        # collection cost 49 ms); a row is decoded again when a search asks for it
        held = self.row_cache.get(kind, epoch, [(project, i) for i in wanted])
        found = {i: row for (_, i), row in held.items()}
        if len(found) < len(wanted):
            read = self._read(project, kind, [i for i in wanted if i not in found])
            self.row_cache.put(kind, epoch, (((project, i), row) for i, row in read.items()))
            found.update(read)
        decode = row_table(kind).decode
        return [decode(found[i]) for i in ids if i in found]

    def _decoded(
        self, project: str, kind: RowKind, wanted: list[str], ids: Sequence[str]
    ) -> list[Any]:
        """The live rows among ``wanted`` (distinct), decoded, in the order of ``ids``."""
        rows = self._read(project, kind, wanted)
        decode = row_table(kind).decode
        return [decode(rows[i]) for i in ids if i in rows]

    def _read(self, project: str, kind: RowKind, wanted: list[str]) -> dict[str, Any]:
        """The live rows among ``wanted`` (distinct) by id, undecoded: plain tuples where
        the decoder takes them (rows.py: by position, not by name)."""
        table = row_table(kind)
        fetch = self.db.all if kind == "source" else self.db.tuples
        rows: dict[str, Any] = {}
        for part in chunked(wanted):
            for row in fetch(by_id_sql(table.name, table.columns, len(part)), (project, *part)):
                rows[row[0]] = row  # the id
        return rows

    def counts(self, project: str) -> dict[str, int]:
        return live_counts(self.db.all, project)

    def relationships_touching(self, project: str, object_ids: Sequence[str]) -> list[Relationship]:
        found: dict[str, Relationship] = {}
        for part in chunked(list(dict.fromkeys(object_ids)), 250):
            for row in self.db.tuples(
                f"SELECT {RELATIONSHIP_COLUMNS} FROM relationships t WHERE "
                f"{_touching(len(part))} AND t.deleted_at IS NULL ORDER BY +t.rowid",
                (project, *part, project, *part),
            ):
                found[row[0]] = to_relationship(row)
        return list(found.values())

    def _edges_from(
        self, project: str, frontier: list[str], walk: tuple[str, str], cond: Any
    ) -> list[Any]:
        start, other = walk
        where, params = cond
        rows: list[Any] = []
        for part in chunked(frontier, 250):
            # ``+t.rowid``: ordering by the bare rowid makes SQLite walk the (project)
            # index, every relationship of the project, to skip a sort of a few rows
            rows.extend(
                self.db.all(
                    f"SELECT t.{other} AS other, t.id FROM relationships t WHERE t.project = ? "
                    f"AND t.deleted_at IS NULL AND t.{start} IN ({placeholders(len(part))})"
                    f"{where} ORDER BY +t.rowid",
                    (project, *part, *params),
                )
            )
        return rows

    def _edges_touching(self, project: str, ids: list[str], cond: Any) -> list[Any]:
        where, params = cond
        found: dict[str, Any] = {}
        for part in chunked(ids, 250):
            for row in self.db.all(
                f"SELECT t.id, t.source_id, t.target_id, t.weight FROM relationships t "
                f"WHERE {_touching(len(part))} AND t.deleted_at IS NULL{where} ORDER BY +t.rowid",
                (project, *part, project, *part, *params),
            ):
                found[row["id"]] = row
        return list(found.values())

    def _capped_edges(
        self, project: str, ids: list[str], limit: int, among: bool, cond: Any
    ) -> list[Any]:
        # each object's edges come from a bounded index probe run inside SQLite (a
        # correlated ``LIMIT`` per object and direction): one query, not two per object
        where, where_params = cond
        listed = json.dumps(ids)
        side = (
            "SELECT w.key AS pos, {side} AS side, e.rowid AS seq, e.id, e.source_id, "
            "e.target_id, e.type FROM json_each(?) w, relationships e WHERE e.rowid IN "
            "(SELECT t.rowid FROM relationships t WHERE t.project = ? AND t.{column} = w.value "
            "AND t.deleted_at IS NULL{cond} ORDER BY t.rowid LIMIT ?){other}"
        )
        params: list[Any] = [listed, project, *where_params, limit]
        if among:
            params.append(listed)
        out_other, in_other = (_AMONG % "target_id", _AMONG % "source_id") if among else ("", "")
        return self.db.all(
            side.format(side=0, column="source_id", cond=where, other=out_other)
            + " UNION ALL "
            + side.format(side=1, column="target_id", cond=where, other=in_other)
            + " ORDER BY pos, side, seq",
            params * 2,
        )

    @traced
    def chunk_ids_of(self, project: str, source_ids: Sequence[str]) -> list[str]:
        found: list[str] = []
        for part in chunked(list(source_ids)):
            found.extend(
                row["id"]
                for row in self.db.all(
                    f"SELECT id FROM chunks WHERE project = ? AND deleted_at IS NULL "
                    f"AND source_id IN ({placeholders(len(part))}) ORDER BY +rowid",
                    (project, *part),
                )
            )
        return found

    def _mention_rows(self, project: str, column: str, ids: list[str]) -> list[Any]:
        rows: list[Any] = []
        for part in chunked(ids):
            rows.extend(
                self.db.all(
                    # by rowid through the column's index: a plain ``project = ? AND
                    # column IN (...)`` let SQLite scan the project's whole unique index
                    f"SELECT rowid AS _pos, * FROM mentions WHERE rowid IN (SELECT rowid "
                    f"FROM mentions WHERE project = ? AND {column} IN "
                    f"({placeholders(len(part))})) ORDER BY +rowid",
                    (project, *part),
                )
            )
        return rows
