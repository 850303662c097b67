"""Graph writes of the PostgreSQL store: upserts, mention links, soft delete and purge.

:class:`PostgresWrites` is the ``GraphWrites`` slice of
:class:`~kgsearch.store.postgres.store.PostgresStore`. It builds on the reads slice (an
upsert hands back the stored ids), and every write clears the cached BM25 statistics.
Inside a bulk load, multi-row upserts are copied into a staging table first.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from kgsearch.model import Chunk, Mention, ObjectRef, Source
from kgsearch.store.common import (
    PURGED_TABLES,
    RELATIONSHIP_UPDATES,
    SOURCE_UPDATES,
    mention_rows,
    on_conflict,
    row_table,
)
from kgsearch.store.postgres.connection import wrap_error
from kgsearch.store.postgres.lexical import LexicalStats
from kgsearch.store.postgres.reads import PostgresReads
from kgsearch.store.postgres.sql import POSTGRES, clean, json_text, utc
from kgsearch.store.records import ObjectRow, RelationshipRow, RowKind
from kgsearch.store.values import words
from kgsearch.store.write_values import (
    OBJECT_COLUMNS,
    RELATIONSHIP_COLUMNS,
    object_values,
    refuse_missing,
    relationship_values,
)

__all__ = ["PostgresWrites"]

_WORDS = ", words = excluded.words"

_OBJECT_COLUMNS = f"{OBJECT_COLUMNS}, words"
_RELATIONSHIP_COLUMNS = f"{RELATIONSHIP_COLUMNS}, words"


class PostgresWrites(PostgresReads):
    """The ``GraphWrites`` capability over PostgreSQL."""

    lexical: LexicalStats
    # set while a bulk load's transaction is open: multi-row writes go through COPY
    _bulk: bool

    def _write(self, sql: str, columns: str, key: str, params: list[tuple[Any, ...]]) -> None:
        """Run an ``INSERT … VALUES … ON CONFLICT`` for every row: pipelined, or in bulk
        mode through COPY into a staging table (deduplicated on ``key``, last wins)."""
        if not (self._bulk and self.db.in_transaction and len(params) > 1):
            self.db.executemany(sql, params)
            return
        table = sql.split()[2]
        stage = f"_stage_{table}"
        head, conflict = sql.split(" VALUES ", 1)[0], sql.split(" ON CONFLICT ", 1)[1]
        with self.db.session() as conn:
            try:
                conn.execute(
                    f"CREATE TEMP TABLE IF NOT EXISTS {stage} ON COMMIT DROP AS "
                    f"SELECT {columns}, 0::bigint AS _ord FROM {table} WITH NO DATA"
                )
                conn.execute(f"TRUNCATE {stage}")
                with conn.cursor().copy(f"COPY {stage} ({columns}, _ord) FROM STDIN") as copy:
                    for ordinal, row in enumerate(params):
                        copy.write_row((*row, ordinal))
                conn.execute(
                    f"{head} SELECT DISTINCT ON ({key}) {columns} FROM {stage} "
                    f"ORDER BY {key}, _ord DESC ON CONFLICT {conflict}"
                )
            except Exception as exc:
                raise wrap_error(exc) from exc

    def upsert_objects(
        self, project: str, rows: Sequence[ObjectRow], *, return_ids: bool = True
    ) -> list[str]:
        if not rows:
            return []
        sql = (
            f"INSERT INTO objects AS objects ({_OBJECT_COLUMNS}) "
            "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) "
            "ON CONFLICT (project, type, key) DO UPDATE SET "
            "tags = excluded.tags, properties = excluded.properties, labels = excluded.labels, "
            "updated_at = CASE WHEN objects.deleted_at IS NULL "
            "AND objects.tags::text = excluded.tags::text "
            "AND objects.properties::text = excluded.properties::text "
            "AND objects.labels::text = excluded.labels::text "
            "THEN objects.updated_at ELSE excluded.updated_at END, "
            + on_conflict("objects", _WORDS)
        )
        params = object_values(POSTGRES, project, rows)
        with self.db.transaction():
            self._write(sql, _OBJECT_COLUMNS, "project, type, key", params)
            self.lexical.clear()
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
            f"INSERT INTO relationships AS relationships ({_RELATIONSHIP_COLUMNS}) VALUES "
            "(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) "
            "ON CONFLICT (project, id) DO UPDATE SET "
            + RELATIONSHIP_UPDATES
            + on_conflict("relationships", _WORDS)
        )
        params = relationship_values(POSTGRES, project, rows)
        with self.db.transaction():
            if not endpoints_checked:
                wanted = sorted({i for r in rows for i in (r.source_id, r.target_id)})
                live = {
                    r["id"]
                    for r in self.db.all(
                        # FOR SHARE: no other transaction can delete an endpoint
                        # before this one commits its relationships
                        "SELECT id FROM objects WHERE project = %s AND deleted_at IS NULL "
                        "AND id = ANY(%s) ORDER BY id FOR SHARE",
                        (project, wanted),
                    )
                }
                refuse_missing(project, [i for i in wanted if i not in live])
            self._write(sql, _RELATIONSHIP_COLUMNS, "project, id", params)
            self.lexical.clear()
        return [r.id for r in rows]

    def upsert_sources(self, project: str, sources: Sequence[Source]) -> None:
        self.db.executemany(
            "INSERT INTO sources (id, project, title, uri, metadata, created_at) "
            "VALUES (%s,%s,%s,%s,%s,%s) ON CONFLICT (project, id) DO UPDATE SET " + SOURCE_UPDATES,
            [
                (
                    s.id,
                    project,
                    clean(s.title),
                    clean(s.uri),
                    json_text(s.metadata),
                    utc(s.created_at) or datetime.now(UTC),
                )
                for s in sources
            ],
        )

    def upsert_chunks(self, project: str, rows: Sequence[tuple[Chunk, str, str, int]]) -> None:
        now = datetime.now(UTC)
        with self.db.transaction():
            self.db.executemany(
                "INSERT INTO chunks AS chunks (id, project, source_id, body, position, metadata, "
                "created_at, updated_at, text, text_hash, text_version, words) "
                "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (project, id) DO UPDATE "
                "SET source_id = excluded.source_id, body = excluded.body, "
                "position = excluded.position, metadata = excluded.metadata, "
                "updated_at = excluded.updated_at, " + on_conflict("chunks", _WORDS),
                [
                    (
                        c.id,
                        project,
                        c.source_id,
                        clean(c.text),
                        c.position,
                        json_text(c.metadata),
                        utc(c.created_at) or now,
                        utc(c.updated_at) or now,
                        clean(text),
                        text_hash,
                        version,
                        words(text),
                    )
                    for c, text, text_hash, version in rows
                ],
            )
            self.lexical.clear()

    def add_mentions(self, project: str, mentions: Sequence[Mention]) -> None:
        self.db.executemany(
            "INSERT INTO mentions (project, source_id, chunk_id, object_id, relationship_id) "
            "VALUES (%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING",
            mention_rows(project, mentions),
        )

    def delete_mentions(
        self, project: str, chunk_ids: Sequence[str], *, object_id: str | None = None
    ) -> int:
        if object_id is None:
            return self.db.execute(
                "DELETE FROM mentions WHERE project = %s AND chunk_id = ANY(%s)",
                (project, list(chunk_ids)),
            )
        return self.db.execute(
            "DELETE FROM mentions WHERE project = %s AND chunk_id = ANY(%s) AND object_id = %s",
            (project, list(chunk_ids), object_id),
        )

    def delete(self, project: str, kind: RowKind, ids: Sequence[str]) -> int:
        """Soft-delete rows; deleting an object also deletes its relationships.

        Raises:
            InvalidRequest: The kind is unknown.
        """
        table = row_table(kind).name
        now = datetime.now(UTC)
        wanted = list(ids)
        with self.db.transaction():
            count = self.db.execute(
                f"UPDATE {table} SET deleted_at = %s WHERE project = %s AND id = ANY(%s) "
                "AND deleted_at IS NULL",
                (now, project, wanted),
            )
            if kind == "object":
                self.db.execute(
                    "UPDATE relationships SET deleted_at = %s WHERE project = %s "
                    "AND deleted_at IS NULL AND (source_id = ANY(%s) OR target_id = ANY(%s))",
                    (now, project, wanted, wanted),
                )
            self.lexical.clear()
        return count

    def purge(self, project: str) -> int:
        removed = 0
        with self.db.transaction():
            self.db.execute(
                "UPDATE relationships r SET deleted_at = %s WHERE r.project = %s "
                "AND r.deleted_at IS NULL AND (r.source_id NOT IN (SELECT id FROM objects "
                "WHERE project = %s AND deleted_at IS NULL) OR r.target_id NOT IN (SELECT id "
                "FROM objects WHERE project = %s AND deleted_at IS NULL))",
                (datetime.now(UTC), project, project, project),
            )
            for table, column in PURGED_TABLES:
                self.db.execute(
                    f"DELETE FROM mentions WHERE project = %s AND {column} IN "
                    f"(SELECT id FROM {table} WHERE project = %s AND deleted_at IS NOT NULL)",
                    (project, project),
                )
                removed += self.db.execute(
                    f"DELETE FROM {table} WHERE project = %s AND deleted_at IS NOT NULL",
                    (project,),
                )
            self.lexical.clear()
        return removed
