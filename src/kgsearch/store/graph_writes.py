"""Graph writes written once for both stores (``GraphWrites``): upserts, mention links,
soft delete and purge.

The statements are the same on SQLite and PostgreSQL but for what the store's
:class:`~kgsearch.store.dialect.Dialect` says: placeholders, how a list of ids is bound,
how stored JSON compares, the lexical ``words`` column PostgreSQL keeps, and the lock
that holds a relationship's endpoints live until it commits. What a write refreshes
(SQLite's cached vector matrices, PostgreSQL's BM25 statistics) is the backend's
``_changed``; how a batch of upsert rows reaches the server is :meth:`_upsert_rows`
(PostgreSQL overrides it to COPY through a staging table inside a bulk load).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kgsearch.model import Chunk, Kind, Mention, ObjectRef, Source
from kgsearch.store.common import (
    PURGED_TABLES,
    RELATIONSHIP_UPDATES,
    SOURCE_UPDATES,
    mention_rows,
    on_conflict,
    row_table,
)
from kgsearch.store.graph_reads import GraphReadsCore
from kgsearch.store.records import Endpoint, ObjectRow, RelationshipRow, RowKind
from kgsearch.store.values import words
from kgsearch.store.write_values import (
    OBJECT_COLUMNS,
    RELATIONSHIP_COLUMNS,
    object_values,
    refuse_missing,
    relationship_values,
)

__all__ = ["GraphWritesCore"]

_CHUNK_COLUMNS = (
    "id, project, source_id, body, position, metadata, created_at, updated_at, "
    "text, text_hash, text_version"
)


class GraphWritesCore(GraphReadsCore):
    """``GraphWrites`` over a store's connection, dialect and ``_changed`` hook."""

    if TYPE_CHECKING:

        def resolve(self, project: str, refs: Sequence[ObjectRef]) -> dict[ObjectRef, Endpoint]:
            """The backend's own (``GraphReads.resolve``)."""

    def _upsert_rows(self, sql: str, columns: str, key: str, params: list[tuple[Any, ...]]) -> None:
        """Run an ``INSERT … VALUES … ON CONFLICT`` (in the dialect's placeholders) for
        every row; ``columns`` are the inserted ones and ``key`` the conflict key, for a
        backend that stages rows instead."""
        self.db.executemany(sql, params)

    def _upsert_sql(self, table: str, columns: str, key: str, updates: str) -> tuple[str, str]:
        """(statement, inserted columns) of an embeddable table's upsert: insert
        ``columns`` (with the lexical ``words`` where the dialect keeps them), on a
        conflict over ``key`` apply ``updates`` and then the lifecycle's rule
        (:func:`~kgsearch.store.common.on_conflict`)."""
        extra = ""
        if self.dialect.words:
            columns, extra = f"{columns}, words", ", words = excluded.words"
        marks = ",".join("?" * (columns.count(",") + 1))
        sql = (
            f"INSERT INTO {table} AS {table} ({columns}) VALUES ({marks}) "
            f"ON CONFLICT ({key}) DO UPDATE SET {updates}" + on_conflict(table, extra)
        )
        return self.dialect.sql(sql), columns

    def upsert_objects(
        self, project: str, rows: Sequence[ObjectRow], *, return_ids: bool = True
    ) -> list[str]:
        if not rows:
            return []
        d = self.dialect
        same = " AND ".join(
            f"objects.{c}{d.as_text} = excluded.{c}{d.as_text}"
            for c in ("tags", "properties", "labels")
        )
        key = "project, type, key"
        sql, columns = self._upsert_sql(
            "objects",
            OBJECT_COLUMNS,
            key,
            "tags = excluded.tags, properties = excluded.properties, labels = excluded.labels, "
            f"updated_at = CASE WHEN objects.deleted_at IS NULL AND {same} "
            "THEN objects.updated_at ELSE excluded.updated_at END, ",
        )
        with self.db.transaction():
            self._upsert_rows(sql, columns, key, object_values(d, project, rows))
            self._changed(Kind.OBJECT, texts=True)
            return self._stored_ids(project, rows) if return_ids else []

    def _stored_ids(self, project: str, rows: Sequence[ObjectRow]) -> list[str]:
        """The stored id of each just-upserted row: its own id where the row holds it
        (read by id, no properties decoded), else the id of the older object of its
        type and key it landed on (a soft-deleted one revived keeps its id)."""
        listed, params = self.dialect.listed("id", list(dict.fromkeys(r.id for r in rows)))
        held = {
            (r["type"], r["key"]): r["id"]
            for r in self.db.all(
                self.dialect.sql(
                    f"SELECT id, type, key FROM objects WHERE project = ? AND {listed}"
                ),
                (project, *params),
            )
        }
        other = [
            ObjectRef(type=r.type, key=r.key) for r in rows if held.get((r.type, r.key)) != r.id
        ]
        landed = {(ref.type, ref.key): e.id for ref, e in self.resolve(project, other).items()}
        return [
            r.id if held.get((r.type, r.key)) == r.id else landed[(r.type, r.key)] for r in rows
        ]

    def upsert_relationships(
        self, project: str, rows: Sequence[RelationshipRow], *, endpoints_checked: bool = False
    ) -> list[str]:
        if not rows:
            return []
        key = "project, id"
        sql, columns = self._upsert_sql(
            "relationships", RELATIONSHIP_COLUMNS, key, RELATIONSHIP_UPDATES
        )
        params = relationship_values(self.dialect, project, rows)
        with self.db.transaction():
            if not endpoints_checked:
                wanted = sorted({i for r in rows for i in (r.source_id, r.target_id)})
                # held: no other writer can delete an endpoint before this one commits
                live = self._live_object_ids(project, wanted, hold=True)
                refuse_missing(project, [i for i in wanted if i not in live])
            self._upsert_rows(sql, columns, key, params)
            self._changed(Kind.RELATIONSHIP, texts=True)
        return [r.id for r in rows]

    def upsert_sources(self, project: str, sources: Sequence[Source]) -> None:
        d = self.dialect
        self.db.executemany(
            d.sql(
                "INSERT INTO sources (id, project, title, uri, metadata, created_at) "
                "VALUES (?,?,?,?,?,?) ON CONFLICT (project, id) DO UPDATE SET " + SOURCE_UPDATES
            ),
            [
                (
                    s.id,
                    project,
                    d.text(s.title),
                    d.text(s.uri),
                    d.json(s.metadata),
                    d.time(s.created_at) or d.stamp(),
                )
                for s in sources
            ],
        )

    def upsert_chunks(self, project: str, rows: Sequence[tuple[Chunk, str, str, int]]) -> None:
        d = self.dialect
        now = d.stamp()
        sql, _ = self._upsert_sql(
            "chunks",
            _CHUNK_COLUMNS,
            "project, id",
            "source_id = excluded.source_id, body = excluded.body, "
            "position = excluded.position, metadata = excluded.metadata, "
            "updated_at = excluded.updated_at, ",
        )
        params = [
            (
                c.id,
                project,
                c.source_id,
                d.text(c.text),
                c.position,
                d.json(c.metadata),
                d.time(c.created_at) or now,
                d.time(c.updated_at) or now,
                d.text(text),
                text_hash,
                version,
                *((words(text),) if d.words else ()),
            )
            for c, text, text_hash, version in rows
        ]
        with self.db.transaction():
            self.db.executemany(sql, params)
            self._changed(Kind.CHUNK, texts=True)

    def add_mentions(self, project: str, mentions: Sequence[Mention]) -> None:
        self.db.executemany(
            self.dialect.sql(
                "INSERT INTO mentions (project, source_id, chunk_id, object_id, "
                "relationship_id) VALUES (?,?,?,?,?) ON CONFLICT DO NOTHING"
            ),
            mention_rows(project, mentions),
        )

    def delete_mentions(
        self, project: str, chunk_ids: Sequence[str], *, object_id: str | None = None
    ) -> int:
        listed, params = self.dialect.listed("chunk_id", list(chunk_ids))
        only = " AND object_id = ?" if object_id is not None else ""
        return self.db.write(
            self.dialect.sql(f"DELETE FROM mentions WHERE project = ? AND {listed}{only}"),
            (project, *params, *((object_id,) if object_id is not None else ())),
        )

    def delete(self, project: str, kind: RowKind, ids: Sequence[str]) -> int:
        """Soft-delete rows; deleting an object also deletes its relationships.

        Raises:
            InvalidRequest: The kind is unknown.
        """
        d = self.dialect
        table = row_table(kind).name
        now = d.stamp()
        listed, params = d.listed("id", list(ids))
        with self.db.transaction():
            count = self.db.write(
                d.sql(
                    f"UPDATE {table} SET deleted_at = ? WHERE project = ? AND {listed} "
                    "AND deleted_at IS NULL"
                ),
                (now, project, *params),
            )
            if kind == "object":
                sources, of_sources = d.listed("source_id", list(ids))
                targets, of_targets = d.listed("target_id", list(ids))
                self.db.write(
                    d.sql(
                        "UPDATE relationships SET deleted_at = ? WHERE project = ? "
                        f"AND deleted_at IS NULL AND ({sources} OR {targets})"
                    ),
                    (now, project, *of_sources, *of_targets),
                )
            self._changed_all()
        return count

    def purge(self, project: str) -> int:
        d = self.dialect
        removed = 0
        live = "(SELECT id FROM objects WHERE project = ? AND deleted_at IS NULL)"
        with self.db.transaction():
            self.db.write(
                d.sql(
                    "UPDATE relationships SET deleted_at = ? WHERE project = ? "
                    f"AND deleted_at IS NULL AND (source_id NOT IN {live} "
                    f"OR target_id NOT IN {live})"
                ),
                (d.stamp(), project, project, project),
            )
            for table, column in PURGED_TABLES:
                self.db.write(
                    d.sql(
                        f"DELETE FROM mentions WHERE project = ? AND {column} IN "
                        f"(SELECT id FROM {table} WHERE project = ? AND deleted_at IS NOT NULL)"
                    ),
                    (project, project),
                )
                removed += self.db.write(
                    d.sql(f"DELETE FROM {table} WHERE project = ? AND deleted_at IS NOT NULL"),
                    (project,),
                )
            self._changed_all()
        return removed

    def _changed_all(self) -> None:
        for kind in Kind:
            self._changed(kind, texts=True)
