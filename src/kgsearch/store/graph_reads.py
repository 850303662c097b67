"""Graph reads written once for both stores (``GraphReads``): typed reads by id, pages,
streams, breadth-first traversal, edges and mention links.

The rules live here (argument checks, the traversal itself, the order of results, the
cursor); a backend supplies the statements that its engine answers best, each behind a
short hook: SQLite asks for ids in chunks under its parameter limit and steers its
planner through rowid subqueries, PostgreSQL binds one array and walks laterally.
Conditions from filters come from the backend's own ``filter_sql`` (through
:attr:`Dialect.conditions <kgsearch.store.dialect.Dialect>`), already in its placeholders.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from kgsearch.errors import InvalidRequest
from kgsearch.model import Chunk, Filters, GraphObject, Kind, Mention, Page, Relationship, Source
from kgsearch.store.common import row_table
from kgsearch.store.dialect import Slice
from kgsearch.store.records import Direction, EdgeRow, EdgeTable, Neighbor, RowKind
from kgsearch.store.rows import to_mention
from kgsearch.store.rowsql import page_sql, page_start
from kgsearch.store.tracing import Trace, traced
from kgsearch.store.values import parse_dt

__all__ = [
    "EDGE_PAGE",
    "MAX_DEPTH",
    "GraphReadsCore",
    "edge_filters",
    "every_page",
    "page_of",
    "traversal_filters",
]

# Deepest traversal a caller may ask for (each hop is one query over the frontier).
MAX_DEPTH = 5

# Rows per statement of ``edge_table`` (a page, keyed on the insertion position).
EDGE_PAGE = 20_000

# The columns of mention links, in the order ``mentions`` matches them.
_MENTION_COLUMNS = ("source_id", "chunk_id", "object_id", "relationship_id")


def traversal_filters(
    depth: int,
    direction: str,
    relationship_types: Sequence[str] | None,
    as_of: datetime | None,
) -> Filters:
    """The relationship filters of a ``neighbors`` call, its arguments checked.

    Raises:
        InvalidRequest: ``depth`` is outside 1 to :data:`MAX_DEPTH` or ``direction``
            is not ``out``, ``in`` or ``both``.
    """
    if not 1 <= depth <= MAX_DEPTH:
        raise InvalidRequest(f"depth must be between 1 and {MAX_DEPTH}")
    if direction not in ("out", "in", "both"):
        raise InvalidRequest("direction must be 'out', 'in' or 'both'")
    return edge_filters(relationship_types, as_of)


def edge_filters(relationship_types: Sequence[str] | None, as_of: datetime | None) -> Filters:
    """Filters for relationships of the given types (all when empty) valid at ``as_of``."""
    return Filters(relationship_types=list(relationship_types or []) or None, as_of=as_of)


def page_of(rows: Sequence[Any], limit: int, decode: Callable[[Any], Any], position: str) -> Page:
    """A page from up to ``limit + 1`` rows in listing order (the extra one only tells
    that more follow); the cursor is the last row's ``position`` column."""
    items = [decode(r) for r in rows[:limit]]
    next_cursor = str(rows[limit - 1][position]) if len(rows) > limit else None
    return Page(items=items, next_cursor=next_cursor)


def every_page(
    list_rows: Callable[..., Page], project: str, kind: str, size: int = 1000
) -> Iterator[Any]:
    """Every live row of a kind through a store's ``list_rows``, page by page (validity
    not applied: expired relationships are rows too)."""
    cursor: str | None = None
    while True:
        page = list_rows(project, kind, limit=size, cursor=cursor, filters=Filters(as_of=None))
        yield from page.items
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


class GraphReadsCore(Slice):
    """``GraphReads`` over a backend's statement hooks (declared below)."""

    if TYPE_CHECKING:

        def _get(self, project: str, kind: RowKind, ids: Sequence[str]) -> list[Any]:
            """Live rows of a kind by id, decoded, in the order asked (missing skipped)."""

        def _edges_from(
            self, project: str, frontier: list[str], walk: tuple[str, str], cond: Any
        ) -> list[Any]:
            """Live edges (``other``, ``id``) from ``frontier`` along ``walk`` (start
            column, other column) meeting ``cond`` (conditions, parameters), in
            insertion order."""

        def _edges_touching(self, project: str, ids: list[str], cond: Any) -> list[Any]:
            """Live edges (id, source_id, target_id, weight) with an end among ``ids``
            meeting ``cond``, in insertion order, each once."""

        def _capped_edges(
            self, project: str, ids: list[str], limit: int, among: bool, cond: Any
        ) -> list[Any]:
            """:meth:`typed_edges`' rows (id, source_id, target_id, type), per object in
            the order asked, out before in, oldest first (an edge may repeat)."""

        def _mention_rows(self, project: str, column: str, ids: list[str]) -> list[Any]:
            """Mention links whose ``column`` is among ``ids``, in insertion order."""

    def _conditions(self, filters: Filters) -> tuple[str, list[Any]]:
        return self.dialect.conditions(Kind.RELATIONSHIP, filters)

    @traced
    def get_objects(
        self, project: str, ids: Sequence[str], *, trace: Trace | None = None
    ) -> list[GraphObject]:
        return self._get(project, "object", ids)

    @traced
    def get_relationships(
        self, project: str, ids: Sequence[str], *, trace: Trace | None = None
    ) -> list[Relationship]:
        return self._get(project, "relationship", ids)

    @traced
    def get_chunks(
        self, project: str, ids: Sequence[str], *, trace: Trace | None = None
    ) -> list[Chunk]:
        return self._get(project, "chunk", ids)

    @traced
    def get_sources(
        self, project: str, ids: Sequence[str], *, trace: Trace | None = None
    ) -> list[Source]:
        return self._get(project, "source", ids)

    def list_rows(
        self,
        project: str,
        kind: RowKind,
        *,
        limit: int = 100,
        cursor: str | None = None,
        filters: Filters | None = None,
    ) -> Page:
        after = page_start(limit, cursor)
        table = row_table(kind)
        where: str = ""
        params: list[Any] = []
        if kind != "source":
            where, params = self.dialect.conditions(Kind(kind), filters, current_only=False)
        rows = self.db.all(
            page_sql(table.name, table.columns, where, self.dialect.position, self.dialect.mark),
            (project, after, *params, limit + 1),
        )
        return page_of(rows, limit, table.decode, "_pos")

    def iter_rows(
        self, project: str, kind: Literal["object", "relationship", "chunk", "source", "mention"]
    ) -> Iterator[Any]:
        if kind != "mention":
            yield from every_page(self.list_rows, project, kind)
            return
        pos, last = self.dialect.position, 0
        while True:
            rows = self.db.all(
                self.dialect.sql(
                    f"SELECT {pos} AS _pos, * FROM mentions WHERE project = ? AND {pos} > ? "
                    f"ORDER BY {pos} LIMIT 1000"
                ),
                (project, last),
            )
            if not rows:
                return
            last = rows[-1]["_pos"]
            yield from (to_mention(r) for r in rows)

    def _live_object_ids(self, project: str, ids: Sequence[str], *, hold: bool = False) -> set[str]:
        """Which of ``ids`` are live objects of the project (with ``hold``, kept live
        until this transaction ends, where writers run side by side)."""
        listed, params = self.dialect.listed("id", list(ids))
        held = f" ORDER BY id{self.dialect.hold}" if hold and self.dialect.hold else ""
        return {
            r["id"]
            for r in self.db.all(
                self.dialect.sql(
                    "SELECT id FROM objects WHERE project = ? AND deleted_at IS NULL "
                    f"AND {listed}{held}"
                ),
                (project, *params),
            )
        }

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
        # one query per hop and direction over the whole frontier, edges in insertion
        # order, so that each neighbour's ``via`` edge is the same on every store
        cond = self._conditions(traversal_filters(depth, direction, relationship_types, as_of))
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
            for walk in walks:
                for row in self._edges_from(project, frontier, walk, cond):
                    if row["other"] not in seen:
                        seen.add(row["other"])
                        nxt.append(row["other"])
                        found.append(Neighbor(id=row["other"], depth=hop, via=row["id"]))
            frontier = nxt
            if not frontier:
                break
        live = self._live_object_ids(project, [n.id for n in found])
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
        cond = self._conditions(edge_filters(relationship_types, as_of))
        rows = self._edges_touching(project, list(dict.fromkeys(object_ids)), cond)
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
        # the cap counts every edge of an object; ``among`` filters after it
        ids = list(dict.fromkeys(object_ids))
        if not ids:
            return []
        cond = self._conditions(edge_filters(None, as_of))
        found: dict[str, tuple[str, str, str, str]] = {}
        for r in self._capped_edges(project, ids, int(limit), among, cond):
            found.setdefault(r["id"], (r["id"], r["source_id"], r["target_id"], r["type"]))
        return list(found.values())

    def edge_table(self, project: str) -> EdgeTable:
        edges = [
            EdgeRow(
                r["id"],
                r["source_id"],
                r["target_id"],
                r["type"],
                parse_dt(r["valid_from"]),
                parse_dt(r["valid_to"]),
            )
            for r in self._pages(
                project, "relationships", "id, source_id, target_id, type, valid_from, valid_to"
            )
        ]
        types = {r["id"]: r["type"] for r in self._pages(project, "objects", "id, type")}
        return EdgeTable(edges, types)

    def mention_pairs(self, project: str) -> list[tuple[str, str]]:
        # the live chunks' ids, then the links two ids a row (no Mention model per link:
        # 2Wiki's 68k links took 1.3 s through iter_rows), :data:`EDGE_PAGE` a statement
        live = {r["id"] for r in self._pages(project, "chunks", "id")}
        pos, last = self.dialect.position, 0
        out: list[tuple[str, str]] = []
        statement = self.dialect.sql(
            f"SELECT {pos} AS _pos, object_id, chunk_id FROM mentions WHERE project = ? "
            f"AND object_id <> '' AND chunk_id <> '' AND {pos} > ? ORDER BY {pos} "
            f"LIMIT {EDGE_PAGE:d}"
        )
        while True:  # one table a statement: no join a distributed layout must support
            rows = self.db.all(statement, (project, last))
            out.extend((r["object_id"], r["chunk_id"]) for r in rows if r["chunk_id"] in live)
            if len(rows) < EDGE_PAGE:
                return out
            last = rows[-1]["_pos"]

    def _pages(self, project: str, table: str, columns: str) -> Iterator[Any]:
        """The live rows of a table, ``columns`` after the position, in insertion order,
        :data:`EDGE_PAGE` rows a statement."""
        pos, last = self.dialect.position, 0
        statement = self.dialect.sql(
            f"SELECT {pos} AS _pos, {columns} FROM {table} WHERE project = ? AND "
            f"deleted_at IS NULL AND {pos} > ? ORDER BY {pos} LIMIT {EDGE_PAGE:d}"
        )
        while True:
            rows = self.db.all(statement, (project, last))
            yield from rows
            if len(rows) < EDGE_PAGE:
                return
            last = rows[-1]["_pos"]

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
        found: dict[tuple[str, ...], tuple[int, Mention]] = {}
        asked = (source_ids, chunk_ids, object_ids, relationship_ids)
        for column, ids in zip(_MENTION_COLUMNS, asked, strict=True):
            if not ids:
                continue
            for row in self._mention_rows(project, column, list(ids)):
                key = tuple(row[c] for c in _MENTION_COLUMNS)
                found.setdefault(key, (row["_pos"], to_mention(row)))
        return [m for _, m in sorted(found.values(), key=lambda f: f[0])]
