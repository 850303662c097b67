"""Graph writes of the SQLite store: upserts, mention links, soft delete and purge.

:class:`SQLiteWrites` is the ``GraphWrites`` slice of
:class:`~kgsearch.store.sqlite.store.SQLiteStore`. It builds on the reads slice (an
upsert hands back the stored ids; a relationship's endpoints must be live objects),
and every write advances the epoch of the kinds it changes, inside its transaction,
so cached vector matrices and object types are rebuilt before they are read again.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgsearch.model import Chunk, Kind, Mention, ObjectRef, Source
from kgsearch.store.common import (
    PURGED_TABLES,
    RELATIONSHIP_UPDATES,
    SOURCE_UPDATES,
    mention_rows,
    on_conflict,
    row_table,
)
from kgsearch.store.records import ObjectRow, RelationshipRow, RowKind
from kgsearch.store.sqlite.reads import SQLiteReads
from kgsearch.store.sqlite.search import VectorCache
from kgsearch.store.sqlite.sql import SQLITE, chunked, dumps, iso, now_iso, placeholders
from kgsearch.store.write_values import (
    OBJECT_COLUMNS,
    RELATIONSHIP_COLUMNS,
    object_values,
    refuse_missing,
    relationship_values,
)

__all__ = ["SQLiteWrites"]


class SQLiteWrites(SQLiteReads):
    """The ``GraphWrites`` capability over SQLite."""

    vectors_cache: VectorCache

    def upsert_objects(
        self, project: str, rows: Sequence[ObjectRow], *, return_ids: bool = True
    ) -> list[str]:
        """Insert or update by (project, type, key); return the stored ids in order
        (an existing row keeps its id), or ``[]`` when ``return_ids`` is False."""
        if not rows:
            return []
        sql = (
            f"INSERT INTO objects ({OBJECT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT(project, type, key) DO UPDATE SET "
            "tags = excluded.tags, properties = excluded.properties, labels = excluded.labels, "
            "updated_at = CASE WHEN objects.deleted_at IS NULL AND objects.tags = excluded.tags "
            "AND objects.properties = excluded.properties AND objects.labels = excluded.labels "
            "THEN objects.updated_at ELSE excluded.updated_at END, " + on_conflict("objects")
        )
        params = object_values(SQLITE, project, rows)
        with self.db.transaction():
            self.db.executemany(sql, params)
            self.vectors_cache.touch(self.db, Kind.OBJECT)
            if not return_ids:
                return []
            resolved = self.resolve(project, [ObjectRef(type=r.type, key=r.key) for r in rows])
        return [resolved[ObjectRef(type=r.type, key=r.key)].id for r in rows]

    def upsert_relationships(
        self, project: str, rows: Sequence[RelationshipRow], *, endpoints_checked: bool = False
    ) -> list[str]:
        if not rows:
            return []
        sql = (
            f"INSERT INTO relationships ({RELATIONSHIP_COLUMNS}) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT (project, id) DO UPDATE SET "
            + RELATIONSHIP_UPDATES
            + on_conflict("relationships")
        )
        params = relationship_values(SQLITE, project, rows)
        with self.db.transaction():
            absent: list[str] = []
            if not endpoints_checked:
                wanted = {i for r in rows for i in (r.source_id, r.target_id)}
                absent = sorted(wanted - self._live_object_ids(project, sorted(wanted)))
            refuse_missing(project, absent)
            self.db.executemany(sql, params)
            self.vectors_cache.touch(self.db, Kind.RELATIONSHIP)
        return [r.id for r in rows]

    def upsert_sources(self, project: str, sources: Sequence[Source]) -> None:
        self.db.executemany(
            "INSERT INTO sources (id, project, title, uri, metadata, created_at) "
            "VALUES (?,?,?,?,?,?) ON CONFLICT (project, id) DO UPDATE SET " + SOURCE_UPDATES,
            [
                (s.id, project, s.title, s.uri, dumps(s.metadata), iso(s.created_at))
                for s in sources
            ],
        )

    def upsert_chunks(self, project: str, rows: Sequence[tuple[Chunk, str, str, int]]) -> None:
        now = now_iso()
        with self.db.transaction():
            self.db.executemany(
                "INSERT INTO chunks (id, project, source_id, body, position, metadata, "
                "created_at, updated_at, text, text_hash, text_version) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(project, id) DO UPDATE SET "
                "source_id = excluded.source_id, body = excluded.body, "
                "position = excluded.position, metadata = excluded.metadata, "
                "updated_at = excluded.updated_at, " + on_conflict("chunks"),
                [
                    (
                        c.id,
                        project,
                        c.source_id,
                        c.text,
                        c.position,
                        dumps(c.metadata),
                        iso(c.created_at) or now,
                        iso(c.updated_at) or now,
                        text,
                        text_hash,
                        version,
                    )
                    for c, text, text_hash, version in rows
                ],
            )
            self.vectors_cache.touch(self.db, Kind.CHUNK)

    def add_mentions(self, project: str, mentions: Sequence[Mention]) -> None:
        self.db.executemany(
            "INSERT OR IGNORE INTO mentions (project, source_id, chunk_id, object_id, "
            "relationship_id) VALUES (?,?,?,?,?)",
            mention_rows(project, mentions),
        )

    def delete_mentions(
        self, project: str, chunk_ids: Sequence[str], *, object_id: str | None = None
    ) -> int:
        count = 0
        only = " AND object_id = ?" if object_id is not None else ""
        extra = (object_id,) if object_id is not None else ()
        with self.db.transaction():
            for part in chunked(list(chunk_ids)):
                cur = self.db.execute(
                    f"DELETE FROM mentions WHERE project = ? AND chunk_id IN "
                    f"({placeholders(len(part))}){only}",
                    (project, *part, *extra),
                )
                count += cur.rowcount
        return count

    def delete(self, project: str, kind: RowKind, ids: Sequence[str]) -> int:
        """Soft-delete rows; deleting an object also deletes its relationships.

        Raises:
            InvalidRequest: The kind is unknown.
        """
        table = row_table(kind).name
        now = now_iso()
        count = 0
        with self.db.transaction():
            for part in chunked(list(ids)):
                marks = placeholders(len(part))
                cur = self.db.execute(
                    f"UPDATE {table} SET deleted_at = ? WHERE project = ? AND id IN ({marks}) "
                    "AND deleted_at IS NULL",
                    (now, project, *part),
                )
                count += cur.rowcount
                if kind == "object":
                    self.db.execute(
                        f"UPDATE relationships SET deleted_at = ? WHERE project = ? "
                        f"AND deleted_at IS NULL AND (source_id IN ({marks}) "
                        f"OR target_id IN ({marks}))",
                        (now, project, *part, *part),
                    )
            for k in Kind:
                self.vectors_cache.touch(self.db, k)
        return count

    def purge(self, project: str) -> int:
        removed = 0
        with self.db.transaction():
            self.db.execute(
                "UPDATE relationships SET deleted_at = ? WHERE project = ? AND deleted_at IS NULL "
                "AND (source_id NOT IN (SELECT id FROM objects WHERE project = ? AND "
                "deleted_at IS NULL) OR target_id NOT IN (SELECT id FROM objects WHERE "
                "project = ? AND deleted_at IS NULL))",
                (now_iso(), project, project, project),
            )
            for table, column in PURGED_TABLES:
                self.db.execute(
                    f"DELETE FROM mentions WHERE project = ? AND {column} IN "
                    f"(SELECT id FROM {table} WHERE project = ? AND deleted_at IS NOT NULL)",
                    (project, project),
                )
                cur = self.db.execute(
                    f"DELETE FROM {table} WHERE project = ? AND deleted_at IS NOT NULL",
                    (project,),
                )
                removed += cur.rowcount
            for k in Kind:
                self.vectors_cache.touch(self.db, k)
        return removed
