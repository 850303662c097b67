"""The embedded default store: one SQLite file (WAL), FTS5 lexical index, vectors as blobs.

Graph reads and writes live here; the embedding lifecycle is in ``lifecycle.py`` and
the search primitives in ``search.py``, both working on the same connection.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from kgsearch.errors import (
    InvalidRequest,
    MigrationError,
    NotFound,
)
from kgsearch.keys import ApiKey
from kgsearch.model import (
    Chunk,
    Filters,
    GraphObject,
    Kind,
    Mention,
    ObjectRef,
    Page,
    Relationship,
    Source,
)
from kgsearch.store.ann import ANN_MIN_ROWS
from kgsearch.store.base import (
    Claim,
    Direction,
    EmbeddingCounts,
    EmbeddingResult,
    Endpoint,
    Neighbor,
    ObjectRow,
    RelationshipRow,
    StoreInfo,
    TextUpdate,
)
from kgsearch.store.common import batched, check_embedding_model, every_page, on_conflict
from kgsearch.store.migrations import pending
from kgsearch.store.rows import (
    CHUNK_COLUMNS,
    OBJECT_COLUMNS,
    RELATIONSHIP_COLUMNS,
    SOURCE_COLUMNS,
    to_chunk,
    to_mention,
    to_object,
    to_relationship,
    to_source,
)
from kgsearch.store.sqlite import graph, keys, lifecycle, search
from kgsearch.store.sqlite.connection import CACHE_PAGES_KIB, Connection
from kgsearch.store.sqlite.lexical import LexicalStats
from kgsearch.store.sqlite.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    SECONDARY_INDEXES,
    fts_triggers,
)
from kgsearch.store.sqlite.sql import (
    chunked,
    dumps,
    filter_sql,
    iso,
    now_iso,
    placeholders,
)

__all__ = ["SQLiteStore"]

RowKind = Literal["object", "relationship", "chunk", "source"]
_TABLES: dict[str, str] = {
    "object": "objects",
    "relationship": "relationships",
    "chunk": "chunks",
    "source": "sources",
}


def _table(kind: str) -> str:
    try:
        return _TABLES[kind]
    except KeyError:
        raise InvalidRequest(
            f"unknown kind {kind!r}; expected one of {', '.join(_TABLES)}"
        ) from None


class SQLiteStore:
    """The embedded store. ``path`` is a file path or ``:memory:``.

    Args:
        path: Where the database lives; parent folders are created.
        migrate: Apply pending migrations on open (default True).
        ann_min_rows: Collections this large get an HNSW index (None: always exact);
            it is saved in the folder ``<path>.ann`` and reused while the vectors
            are unchanged.
    """

    # vector legs are in-process scans: see Store.parallel_vector_legs
    parallel_vector_legs = False

    def __init__(
        self, path: str, *, migrate: bool = True, ann_min_rows: int | None = ANN_MIN_ROWS
    ) -> None:
        self.path = path
        self.url = "sqlite:///" + path if path != ":memory:" else "sqlite:///:memory:"
        self.db = Connection(path)
        self.vectors_cache = search.VectorCache(
            ann_min_rows, None if path == ":memory:" else Path(path + ".ann")
        )
        self.lexical = LexicalStats()
        self._types: dict[str, tuple[str, list[str]]] = {}
        if migrate:
            self.migrate()

    # lifecycle -----------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply pending named migrations; return the names applied."""
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT)"
        )
        applied = {r["name"] for r in self.db.all("SELECT name FROM migrations")}
        unknown = applied - {m.name for m in MIGRATIONS}
        if unknown:
            raise MigrationError(
                f"database {self.path!r} was written by a newer kgsearch "
                f"(unknown migrations {sorted(unknown)}); upgrade kgsearch"
            )
        done: list[str] = []
        for migration in pending(MIGRATIONS, applied):
            try:
                with self.db.transaction():
                    migration.apply(self._exec)
                    self.db.execute(
                        "INSERT INTO migrations (name, applied_at) VALUES (?, ?)",
                        (migration.name, now_iso()),
                    )
            except Exception as exc:
                raise MigrationError(f"migration {migration.name} failed: {exc}") from exc
            done.append(migration.name)
        return done

    def _exec(self, sql: str) -> None:
        self.db.execute(sql)

    def close(self) -> None:
        """Close the connection and drop cached vector indexes."""
        self.vectors_cache.clear()
        self.db.close()

    def transaction(self) -> AbstractContextManager[None]:
        """A write transaction; nested calls join the outer one."""
        return self.db.transaction()

    @property
    def in_transaction(self) -> bool:
        """Whether the calling thread is inside :meth:`transaction`."""
        return self.db.held_here

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """A write transaction tuned for loading many rows at once.

        Inside it, FTS triggers and secondary indexes are dropped; on success the
        indexes are rebuilt by sorting and the lexical index by one ``rebuild``,
        which is several times faster than row-by-row maintenance. It all happens in
        one transaction: other readers never see a half-built index, and a failure
        rolls everything back.
        """
        # A larger page cache keeps the unique-key B-trees in memory while rows stream in.
        self.db.execute("PRAGMA cache_size=-262144")
        with self.db.transaction():
            for table, indexes in SECONDARY_INDEXES.items():
                for sql in indexes:
                    self.db.execute(f"DROP INDEX IF EXISTS {sql.split()[5]}")
                for suffix in ("ai", "ad", "au"):
                    self.db.execute(f"DROP TRIGGER IF EXISTS {table}_fts_{suffix}")
            yield
            for table, indexes in SECONDARY_INDEXES.items():
                for sql in indexes:
                    self.db.execute(sql)
                self.db.execute(f"INSERT INTO {table}_fts({table}_fts) VALUES ('rebuild')")
                self.db.execute(
                    f"INSERT INTO {table}_fts({table}_fts, rowid, text) "
                    f"SELECT 'delete', rowid, text FROM {table} WHERE deleted_at IS NOT NULL"
                )
                fts_triggers(self._exec, table)
        self.db.execute(f"PRAGMA cache_size={CACHE_PAGES_KIB}")
        self.lexical.clear()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # metadata ------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        """A value from the store's metadata table."""
        row = self.db.one("SELECT value FROM meta WHERE key = ?", (key,))
        return None if row is None else str(row["value"])

    def set_meta(self, key: str, value: str) -> None:
        """Set a metadata value."""
        self._set_meta(key, value)

    _meta = get_meta

    def _set_meta(self, key: str, value: str) -> None:
        self.db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def info(self) -> StoreInfo:
        """Schema version, migrations, embedding model and dims."""
        names = tuple(r["name"] for r in self.db.all("SELECT name FROM migrations ORDER BY name"))
        dims = self._meta("dims")
        return StoreInfo(
            url=self.url,
            schema_version=len(names),
            migrations=names,
            embedding_model=self._meta("embedding_model"),
            dims=int(dims) if dims else None,
        )

    def set_embedding_model(self, model: str, dims: int, *, replace: bool = False) -> None:
        """Record the model and dims vectors are built with; a silent mix is refused.

        Raises:
            DimensionMismatch: The store holds vectors of other dimensions.
            ConfigError: The store holds vectors of another model and ``replace`` is False.
        """
        with self.db.transaction():
            current_model, current_dims = self._meta("embedding_model"), self._meta("dims")
            if not replace:
                check_embedding_model(
                    self.url, current_model, int(current_dims or 0) or None, model, dims
                )
            self._set_meta("embedding_model", model)
            self._set_meta("dims", str(dims))
            if replace and current_model and current_model != model:
                for kind in Kind:
                    lifecycle.reset_all(self.db, kind)
                self.vectors_cache.clear()

    def schema_version(self) -> int:
        """Number of migrations this code knows."""
        return SCHEMA_VERSION

    def projects(self) -> list[str]:
        """Projects that hold any live row."""
        rows = self.db.all(
            "SELECT project FROM objects WHERE deleted_at IS NULL UNION "
            "SELECT project FROM relationships WHERE deleted_at IS NULL UNION "
            "SELECT project FROM chunks WHERE deleted_at IS NULL UNION "
            "SELECT project FROM sources WHERE deleted_at IS NULL ORDER BY 1"
        )
        return [r[0] for r in rows]

    # writes --------------------------------------------------------------
    def upsert_objects(
        self, project: str, rows: Sequence[ObjectRow], *, return_ids: bool = True
    ) -> list[str]:
        """Insert or update by (project, type, key); return the stored ids in order
        (an existing row keeps its id), or ``[]`` when ``return_ids`` is False."""
        if not rows:
            return []
        now = now_iso()
        sql = (
            "INSERT INTO objects (id, project, type, key, tags, properties, labels, "
            "created_at, updated_at, text, text_hash, text_version) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT(project, type, key) DO UPDATE SET "
            "tags = excluded.tags, properties = excluded.properties, labels = excluded.labels, "
            "updated_at = CASE WHEN objects.deleted_at IS NULL AND objects.tags = excluded.tags "
            "AND objects.properties = excluded.properties AND objects.labels = excluded.labels "
            "THEN objects.updated_at ELSE excluded.updated_at END, " + on_conflict("objects")
        )
        params = [
            (
                r.id,
                project,
                r.type,
                r.key,
                dumps(list(r.tags)),
                dumps(r.properties),
                dumps(list(r.labels)),
                iso(r.created_at) or now,
                iso(r.updated_at) or now,
                r.text,
                r.text_hash,
                r.text_version,
            )
            for r in rows
        ]
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
        """Insert or update by id; endpoints must be live objects of the project (checked
        here unless the caller already resolved them in this transaction)."""
        if not rows:
            return []
        now = now_iso()
        sql = (
            "INSERT INTO relationships (id, project, type, source_id, target_id, label, "
            "properties, weight, valid_from, valid_to, description, source_chunks, created_at, "
            "updated_at, text, text_hash, text_version) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT(project, id) DO UPDATE SET type = excluded.type, "
            "source_id = excluded.source_id, target_id = excluded.target_id, "
            "label = excluded.label, properties = excluded.properties, weight = excluded.weight, "
            "valid_from = excluded.valid_from, valid_to = excluded.valid_to, "
            "description = excluded.description, source_chunks = excluded.source_chunks, "
            "updated_at = excluded.updated_at, " + on_conflict("relationships")
        )
        params = [
            (
                r.id,
                project,
                r.type,
                r.source_id,
                r.target_id,
                r.label,
                dumps(r.properties),
                r.weight,
                iso(r.valid_from),
                iso(r.valid_to),
                r.description,
                dumps(list(r.source_chunks)),
                iso(r.created_at) or now,
                iso(r.updated_at) or now,
                r.text,
                r.text_hash,
                r.text_version,
            )
            for r in rows
        ]
        with self.db.transaction():
            absent: list[str] = []
            if not endpoints_checked:
                wanted = {i for r in rows for i in (r.source_id, r.target_id)}
                absent = sorted(wanted - self._live_object_ids(project, sorted(wanted)))
            if absent:
                raise NotFound(
                    f"relationship endpoint(s) are not live objects of project {project!r}: "
                    f"{', '.join(absent[:10])}",
                    details={"missing": absent},
                )
            self.db.executemany(sql, params)
            self.vectors_cache.touch(self.db, Kind.RELATIONSHIP)
        return [r.id for r in rows]

    def upsert_sources(self, project: str, sources: Sequence[Source]) -> None:
        """Insert or update sources by id."""
        self.db.executemany(
            "INSERT INTO sources (id, project, title, uri, metadata, created_at) "
            "VALUES (?,?,?,?,?,?) ON CONFLICT(project, id) DO UPDATE SET "
            "title = excluded.title, uri = excluded.uri, metadata = excluded.metadata, "
            "deleted_at = NULL",
            [
                (s.id, project, s.title, s.uri, dumps(s.metadata), iso(s.created_at))
                for s in sources
            ],
        )

    def upsert_chunks(self, project: str, rows: Sequence[tuple[Chunk, str, str, int]]) -> None:
        """Insert or update chunks by id with (chunk, text, text_hash, text_version)."""
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
        """Add mention links (duplicates ignored)."""
        self.db.executemany(
            "INSERT OR IGNORE INTO mentions (project, source_id, chunk_id, object_id, "
            "relationship_id) VALUES (?,?,?,?,?)",
            [
                (
                    project,
                    m.source_id or "",
                    m.chunk_id or "",
                    m.object_id or "",
                    m.relationship_id or "",
                )
                for m in mentions
            ],
        )

    def delete(self, project: str, kind: RowKind, ids: Sequence[str]) -> int:
        """Soft-delete rows; deleting an object also deletes its relationships."""
        table = _table(kind)
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
        """Remove soft-deleted rows for good, with their mentions and dangling edges."""
        removed = 0
        with self.db.transaction():
            self.db.execute(
                "UPDATE relationships SET deleted_at = ? WHERE project = ? AND deleted_at IS NULL "
                "AND (source_id NOT IN (SELECT id FROM objects WHERE project = ? AND "
                "deleted_at IS NULL) OR target_id NOT IN (SELECT id FROM objects WHERE "
                "project = ? AND deleted_at IS NULL))",
                (now_iso(), project, project, project),
            )
            for table, column in (
                ("objects", "object_id"),
                ("relationships", "relationship_id"),
                ("chunks", "chunk_id"),
                ("sources", "source_id"),
            ):
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

    # reads ---------------------------------------------------------------
    def resolve(self, project: str, refs: Sequence[ObjectRef]) -> dict[ObjectRef, Endpoint]:
        """Resolve natural references to live objects (missing refs are absent)."""
        found: dict[ObjectRef, Endpoint] = {}
        unique = list(dict.fromkeys(refs))
        for part in chunked(unique, 200):
            values = ",".join("(?,?)" for _ in part)
            params: list[Any] = [project]
            for ref in part:
                params.extend((ref.type, ref.key))
            rows = self.db.all(
                f"WITH wanted(type, key) AS (VALUES {values}) "
                "SELECT o.id, o.type, o.key, o.properties FROM objects o JOIN wanted w "
                "ON o.type = w.type AND o.key = w.key WHERE o.project = ? "
                "AND o.deleted_at IS NULL",
                [*params[1:], project],
            )
            for row in rows:
                endpoint = Endpoint(
                    row["id"], row["type"], row["key"], json.loads(row["properties"])
                )
                found[ObjectRef(type=row["type"], key=row["key"])] = endpoint
        return found

    def _live_object_ids(self, project: str, ids: Sequence[str]) -> set[str]:
        live: set[str] = set()
        for part in chunked(list(ids)):
            live.update(
                r[0]
                for r in self.db.all(
                    f"SELECT id FROM objects WHERE project = ? AND deleted_at IS NULL "
                    f"AND id IN ({placeholders(len(part))})",
                    (project, *part),
                )
            )
        return live

    def endpoints(self, project: str, ids: Sequence[str]) -> dict[str, Endpoint]:
        """Live objects by id, as endpoints."""
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

    def _get(self, project: str, table: str, columns: str, ids: Sequence[str]) -> dict[str, Any]:
        rows: dict[str, Any] = {}
        for part in chunked(list(dict.fromkeys(ids))):
            for row in self.db.all(
                f"SELECT {columns} FROM {table} WHERE project = ? AND deleted_at IS NULL "
                f"AND id IN ({placeholders(len(part))})",
                (project, *part),
            ):
                rows[row["id"]] = row
        return rows

    def get_objects(self, project: str, ids: Sequence[str]) -> list[GraphObject]:
        """Live objects by id, in the order asked (missing ids skipped)."""
        rows = self._get(project, "objects", OBJECT_COLUMNS, ids)
        return [to_object(rows[i]) for i in ids if i in rows]

    def get_relationships(self, project: str, ids: Sequence[str]) -> list[Relationship]:
        """Live relationships by id, in the order asked."""
        rows = self._get(project, "relationships", RELATIONSHIP_COLUMNS, ids)
        return [to_relationship(rows[i]) for i in ids if i in rows]

    def get_chunks(self, project: str, ids: Sequence[str]) -> list[Chunk]:
        """Live chunks by id, in the order asked."""
        rows = self._get(project, "chunks", CHUNK_COLUMNS, ids)
        return [to_chunk(rows[i]) for i in ids if i in rows]

    def get_sources(self, project: str, ids: Sequence[str]) -> list[Source]:
        """Live sources by id, in the order asked."""
        rows = self._get(project, "sources", SOURCE_COLUMNS, ids)
        return [to_source(rows[i]) for i in ids if i in rows]

    def list_rows(
        self,
        project: str,
        kind: RowKind,
        *,
        limit: int = 100,
        cursor: str | None = None,
        filters: Filters | None = None,
    ) -> Page:
        """One page of live rows in insertion order; pass ``next_cursor`` for the next."""
        if not 1 <= limit <= 10_000:
            raise InvalidRequest("limit must be between 1 and 10000")
        table = _table(kind)
        after = 0
        if cursor:
            try:
                after = int(cursor)
            except ValueError:
                raise InvalidRequest(f"invalid cursor {cursor!r}") from None
        columns = {
            "objects": OBJECT_COLUMNS,
            "relationships": RELATIONSHIP_COLUMNS,
            "chunks": CHUNK_COLUMNS,
            "sources": SOURCE_COLUMNS,
        }[table]
        where: str = ""
        params: list[Any] = []
        if kind != "source":
            where, params = filter_sql(Kind(kind), filters, current_only=False)
        rows = self.db.all(
            f"SELECT rowid AS _rowid, {columns} FROM {table} t WHERE project = ? "
            f"AND deleted_at IS NULL AND rowid > ?{where} ORDER BY rowid LIMIT ?",
            (project, after, *params, limit + 1),
        )
        decode = {
            "objects": to_object,
            "relationships": to_relationship,
            "chunks": to_chunk,
            "sources": to_source,
        }[table]
        items = [decode(r) for r in rows[:limit]]
        next_cursor = str(rows[limit - 1]["_rowid"]) if len(rows) > limit else None
        return Page(items=items, next_cursor=next_cursor)

    def relationships_touching(self, project: str, object_ids: Sequence[str]) -> list[Relationship]:
        """Live relationships with either endpoint in ``object_ids``."""
        return graph.relationships_touching(self.db, project, object_ids)

    def neighbors(
        self,
        project: str,
        ids: Sequence[str],
        *,
        depth: int = 1,
        direction: Direction = "both",
        relationship_types: Sequence[str] | None = None,
        as_of: datetime | None = None,
    ) -> list[Neighbor]:
        """Objects within ``depth`` hops by breadth-first search, excluding the start ids."""
        return graph.neighbors(
            self.db,
            project,
            ids,
            depth=depth,
            direction=direction,
            relationship_types=relationship_types,
            as_of=as_of,
        )

    def edges_among(
        self,
        project: str,
        object_ids: Sequence[str],
        *,
        relationship_types: Sequence[str] | None = None,
        as_of: datetime | None = None,
    ) -> list[tuple[str, str, str, float]]:
        """(relationship id, source id, target id, weight) of live edges touching the ids."""
        return graph.edges_among(
            self.db, project, object_ids, relationship_types=relationship_types, as_of=as_of
        )

    def mentions(
        self,
        project: str,
        *,
        source_ids: Sequence[str] = (),
        chunk_ids: Sequence[str] = (),
        object_ids: Sequence[str] = (),
        relationship_ids: Sequence[str] = (),
    ) -> list[Mention]:
        """Mention links matching any of the given ids."""
        return graph.mentions(
            self.db,
            project,
            source_ids=source_ids,
            chunk_ids=chunk_ids,
            object_ids=object_ids,
            relationship_ids=relationship_ids,
        )

    def counts(self, project: str) -> dict[str, int]:
        """Live rows per kind."""
        result = {}
        for name, table in (
            ("objects", "objects"),
            ("relationships", "relationships"),
            ("chunks", "chunks"),
            ("sources", "sources"),
        ):
            row = self.db.one(
                f"SELECT count(*) FROM {table} WHERE project = ? AND deleted_at IS NULL",
                (project,),
            )
            result[name] = int(row[0]) if row else 0
        row = self.db.one("SELECT count(*) FROM mentions WHERE project = ?", (project,))
        result["mentions"] = int(row[0]) if row else 0
        return result

    def iter_rows(
        self, project: str, kind: Literal["object", "relationship", "chunk", "source", "mention"]
    ) -> Iterator[Any]:
        """Stream every live row of a kind, in insertion order, page by page."""
        if kind == "mention":
            last = 0
            while True:
                rows = self.db.all(
                    "SELECT rowid AS _rowid, * FROM mentions WHERE project = ? AND rowid > ? "
                    "ORDER BY rowid LIMIT 1000",
                    (project, last),
                )
                if not rows:
                    return
                last = rows[-1]["_rowid"]
                yield from (to_mention(r) for r in rows)
        yield from every_page(self.list_rows, project, kind)

    # embedding lifecycle -------------------------------------------------
    def set_texts(self, project: str, kind: Kind, updates: Sequence[TextUpdate]) -> int:
        """Store recomputed texts; rows whose hash changed become pending."""
        with self.db.transaction():
            changed = lifecycle.set_texts(self.db, project, kind, updates)
            if changed:
                self.vectors_cache.touch(self.db, kind)
        return changed

    def claim(
        self,
        kind: Kind,
        *,
        project: str | None,
        limit: int,
        now: float,
        lease_seconds: float = 300.0,
    ) -> list[Claim]:
        """Claim up to ``limit`` rows due for embedding."""
        with self.db.transaction():
            return lifecycle.claim(self.db, kind, project, limit, now, lease_seconds)

    def complete(
        self,
        kind: Kind,
        results: Sequence[EmbeddingResult],
        *,
        model: str,
        dims: int,
        text_version: int,
        elapsed_ms: float,
        record_stats: bool = True,
    ) -> int:
        """Write vectors; rows whose text changed since the claim stay pending."""
        with self.db.transaction():
            done = lifecycle.complete(self.db, kind, results, model, dims, elapsed_ms, record_stats)
            self.vectors_cache.touch(self.db, kind)
        return done

    def fail(
        self,
        kind: Kind,
        claims: Sequence[Claim],
        error: str,
        *,
        now: float,
        max_attempts: int,
        backoff_seconds: float,
    ) -> None:
        """Record a failed attempt; rows past ``max_attempts`` become dead."""
        with self.db.transaction():
            lifecycle.fail(self.db, kind, claims, error, now, max_attempts, backoff_seconds)

    def requeue(self, kind: Kind, *, project: str | None, statuses: Sequence[str]) -> int:
        """Make rows in ``statuses`` pending again with attempts reset."""
        with self.db.transaction():
            count = lifecycle.requeue(self.db, kind, project, statuses)
            self.vectors_cache.touch(self.db, kind)
        return count

    def next_retry_at(self, kind: Kind, *, project: str | None) -> float | None:
        """When the earliest failed row becomes due for another attempt."""
        return lifecycle.next_retry_at(self.db, kind, project)

    def embedding_counts(self, project: str | None) -> list[EmbeddingCounts]:
        """Counts by status per project and kind."""
        return lifecycle.counts(self.db, project)

    def embedding_latency(self) -> tuple[int, float]:
        """(texts embedded, total milliseconds) recorded by :meth:`complete`."""
        return lifecycle.latency(self.db)

    def iter_text_rows(self, project: str, kind: Kind) -> Iterator[list[Any]]:
        """Batches of live rows of a kind (decoded models), to recompute their texts."""
        yield from batched(self.iter_rows(project, kind.value))

    def build_indexes(self) -> list[str]:
        """Nothing to build: this store's vector indexes live in memory and are built
        when a search first needs them."""
        return []

    # search primitives ---------------------------------------------------
    def vector_search(
        self,
        project: str,
        kind: Kind,
        vector: npt.NDArray[np.float32],
        *,
        limit: int,
        filters: Filters | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Top-``limit`` embedded rows by cosine similarity, filters applied inside."""
        return search.vector_search(
            self.db.reader(),
            self.vectors_cache,
            project,
            kind,
            vector,
            limit=limit,
            filters=filters,
            ids=ids,
        )

    def text_search(
        self,
        project: str,
        kind: Kind,
        query: str,
        *,
        limit: int,
        filters: Filters | None = None,
        prefix: bool = False,
    ) -> list[tuple[str, float]]:
        """Top-``limit`` rows by BM25 over their text; any query string is safe."""
        return search.text_search(
            self.db.reader(),
            project,
            kind,
            query,
            limit=limit,
            filters=filters,
            prefix=prefix,
            lexical=self.lexical,
        )

    def objects_named(
        self, project: str, name: str, *, limit: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        """Live objects whose key equals ``name`` ignoring (ASCII) case."""
        where, params = filter_sql(Kind.OBJECT, filters)
        # sorted here: an ORDER BY type makes SQLite walk the (project, type, key) index
        # over the whole project instead of looking the key up
        rows = self.db.reader().all(
            "SELECT t.type, t.id FROM objects t WHERE t.project = ? "
            f"AND t.key = ? COLLATE NOCASE AND t.deleted_at IS NULL{where}",
            (project, name, *params),
        )
        return [(r[1], 1.0) for r in sorted((r[0], r[1]) for r in rows)[:limit]]

    def object_types(self, project: str) -> list[str]:
        """Distinct types of the project's live objects (cached until objects change)."""
        row = self.db.one("SELECT value FROM meta WHERE key = 'epoch:object'")
        epoch = row["value"] if row else "0"
        cached = self._types.get(project)
        if cached is not None and cached[0] == epoch:
            return cached[1]
        types = [
            r[0]
            for r in self.db.all(
                "SELECT type FROM objects WHERE project = ? AND deleted_at IS NULL GROUP BY type",
                (project,),
            )
        ]
        self._types[project] = (epoch, types)
        return types

    def wait_for_index(self, project: str, kind: Kind, timeout: float | None = None) -> bool:
        """Load the vector cache and wait for its ANN index (benchmarks, warm-up)."""
        entry = self.vectors_cache.entry(self.db, project, kind)
        return entry.ann.wait(timeout) if entry.ann is not None else True

    def vectors(
        self, project: str, kind: Kind, ids: Sequence[str]
    ) -> dict[str, npt.NDArray[np.float32]]:
        """Stored vectors of the given embedded rows."""
        return search.stored_vectors(self.db, project, kind, ids)

    # api keys --------------------------------------------------------------
    def create_api_key(self, key: ApiKey, key_hash: str) -> None:
        """Store a new API key record with the digest of its secret."""
        keys.create_api_key(self.db, key, key_hash)

    def api_keys(self, project: str | None = None) -> list[ApiKey]:
        """API key records (never secrets), of one project or all, oldest first."""
        return keys.api_keys(self.db, project)

    def find_api_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key record with this id and its stored digest (None when unknown)."""
        return keys.find_api_key(self.db, key_id)

    def revoke_api_key(self, key_id: str) -> bool:
        """Revoke a key; False when no active key has this id."""
        return keys.revoke_api_key(self.db, key_id)
