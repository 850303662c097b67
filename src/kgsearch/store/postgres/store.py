"""The server store: PostgreSQL with pgvector, for teams that outgrow one file.

``postgresql://user:pass@host:5432/db?schema=kgsearch&vector_index=hnsw&pool_size=8``.
The same Store protocol and the same conformance suite as the SQLite store; graph
reads and the lifecycle live in ``graph.py`` and ``lifecycle.py``, search in
``search.py``, all on one pooled :class:`Connection`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from kgsearch.errors import (
    ConfigError,
    DimensionMismatch,
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
from kgsearch.store.migrations import pending
from kgsearch.store.postgres import graph, lifecycle, search
from kgsearch.store.postgres.connection import Connection, parse_url, wrap_error
from kgsearch.store.postgres.schema import MIGRATIONS, SCHEMA_VERSION
from kgsearch.store.postgres.sql import filter_sql
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
from kgsearch.store.values import dumps

__all__ = ["PostgresStore"]

RowKind = Literal["object", "relationship", "chunk", "source"]
_META_TTL_SECONDS = 2.0
_OBJECT_COLUMNS = (
    "id, project, type, key, tags, properties, labels, created_at, updated_at, text, "
    "text_hash, text_version"
)
_RELATIONSHIP_COLUMNS = (
    "id, project, type, source_id, target_id, label, properties, weight, valid_from, "
    "valid_to, description, source_chunks, created_at, updated_at, text, text_hash, "
    "text_version"
)
_TABLES: dict[str, tuple[str, str, Any]] = {
    "object": ("objects", OBJECT_COLUMNS, to_object),
    "relationship": ("relationships", RELATIONSHIP_COLUMNS, to_relationship),
    "chunk": ("chunks", CHUNK_COLUMNS, to_chunk),
    "source": ("sources", SOURCE_COLUMNS, to_source),
}

# The same lifecycle rules on conflict as the SQLite store (see its module).
_STATE_ON_CONFLICT = """
    status = CASE
        WHEN excluded.text_hash = {t}.text_hash AND {t}.deleted_at IS NULL THEN {t}.status
        WHEN excluded.text_hash = {t}.embedded_hash AND {t}.vector IS NOT NULL THEN 'embedded'
        ELSE 'pending' END,
    attempts = CASE WHEN excluded.text_hash = {t}.text_hash THEN {t}.attempts ELSE 0 END,
    last_error = CASE WHEN excluded.text_hash = {t}.text_hash THEN {t}.last_error ELSE NULL END,
    next_attempt_at = CASE WHEN excluded.text_hash = {t}.text_hash
        THEN {t}.next_attempt_at ELSE 0 END,
    text = excluded.text, text_hash = excluded.text_hash, text_version = excluded.text_version,
    deleted_at = NULL
"""


def _table(kind: str) -> tuple[str, str, Any]:
    try:
        return _TABLES[kind]
    except KeyError:
        raise InvalidRequest(
            f"unknown kind {kind!r}; expected one of {', '.join(_TABLES)}"
        ) from None


def _utc(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def _clean(value: Any) -> Any:
    """Text for PostgreSQL, which refuses NUL characters in ``text`` and ``json``."""
    if isinstance(value, str) and "\x00" in value:
        raise InvalidRequest("text must not contain NUL (\\x00) characters")
    return value


class PostgresStore:
    """The PostgreSQL + pgvector store.

    Args:
        url: ``postgresql://…`` with optional ``schema``, ``vector_index`` (``hnsw``,
            ``ivfflat`` or ``none``), ``pool_size`` and ``ef_search`` parameters.
        migrate: Apply pending migrations on open (default True).
        index_min_rows: Build the vector index once a kind holds this many vectors.
    """

    def __init__(
        self, url: str, *, migrate: bool = True, index_min_rows: int = search.INDEX_MIN_ROWS
    ) -> None:
        libpq, options = parse_url(url)
        self.url = url
        self.options = options
        self.index_min_rows = index_min_rows
        self.db = Connection(libpq, options.schema, options.pool_size)
        self.lexical = search.LexicalStats()
        self._indexed: dict[Kind, bool] = {}
        self._meta_cache: dict[str, tuple[float, str | None]] = {}
        self._bulk = False
        if migrate:
            self.migrate()

    # lifecycle -----------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply pending named migrations under an advisory lock; return their names."""
        done: list[str] = []
        with self.db.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.db.schema,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, "
                "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            applied = {r["name"] for r in self.db.all("SELECT name FROM migrations")}
            unknown = applied - {m.name for m in MIGRATIONS}
            if unknown:
                raise MigrationError(
                    f"schema {self.db.schema!r} was written by a newer kgsearch "
                    f"(unknown migrations {sorted(unknown)}); upgrade kgsearch"
                )
            for migration in pending(MIGRATIONS, applied):
                try:
                    migration.apply(self._exec)
                    self.db.execute("INSERT INTO migrations (name) VALUES (%s)", (migration.name,))
                except Exception as exc:
                    raise MigrationError(f"migration {migration.name} failed: {exc}") from exc
                done.append(migration.name)
        return done

    def _exec(self, sql: str) -> None:
        self.db.execute(sql)

    def close(self) -> None:
        """Close the connection pool."""
        self.db.close()

    def transaction(self) -> Any:
        """A write transaction; nested calls join the outer one."""
        return self.db.transaction()

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """One transaction for a large load; statistics and indexes refreshed after it.

        Inside it, objects and relationships are written with COPY into a temporary
        staging table and one ``INSERT … SELECT … ON CONFLICT`` per batch (measured
        2.4× faster than pipelined inserts); the last of several rows with the same key
        in a batch wins, as it does row by row.
        """
        with self.db.transaction() as conn:
            conn.execute("SET LOCAL synchronous_commit = off")
            self._bulk = True
            try:
                yield
            finally:
                self._bulk = False
        for table in ("objects", "relationships", "chunks", "sources", "mentions"):
            self.db.execute(f"ANALYZE {table}")
        self.lexical.clear()
        self.build_indexes()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # metadata ------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        """A value from the store's metadata table.

        Outside transactions a value is remembered for ``_META_TTL_SECONDS`` (every
        search reads the model and dims; another process's change of model shows
        after that long); inside a transaction it is always read.
        """
        fresh = self.db.in_transaction
        cached = None if fresh else self._meta_cache.get(key)
        now = time.monotonic()
        if cached is not None and now - cached[0] < _META_TTL_SECONDS:
            return cached[1]
        row = self.db.one("SELECT value FROM meta WHERE key = %s", (key,))
        value = None if row is None else str(row["value"])
        if not fresh:
            self._meta_cache[key] = (now, value)
        return value

    def set_meta(self, key: str, value: str) -> None:
        """Set a metadata value."""
        self._meta_cache.clear()
        self.db.execute(
            "INSERT INTO meta (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, _clean(value)),
        )

    def _dims(self) -> int | None:
        dims = self.get_meta("dims")
        return int(dims) if dims else None

    def info(self) -> StoreInfo:
        """Schema version, migrations, embedding model and dims."""
        names = tuple(r["name"] for r in self.db.all("SELECT name FROM migrations ORDER BY name"))
        return StoreInfo(
            url=self.url,
            schema_version=len(names),
            migrations=names,
            embedding_model=self.get_meta("embedding_model"),
            dims=self._dims(),
        )

    def set_embedding_model(self, model: str, dims: int, *, replace: bool = False) -> None:
        """Record the model and dims vectors are built with; a silent mix is refused.

        Raises:
            DimensionMismatch: The store holds vectors of other dimensions.
            ConfigError: The store holds vectors of another model and ``replace`` is False.
        """
        self._meta_cache.clear()
        with self.db.transaction() as conn:
            conn.execute("LOCK TABLE meta IN SHARE ROW EXCLUSIVE MODE")
            current_model, current_dims = self.get_meta("embedding_model"), self._dims()
            if current_model and not replace:
                if current_dims and current_dims != dims:
                    raise DimensionMismatch(
                        f"store {self.url} holds {current_dims}-d vectors of "
                        f"{current_model}; the embedder {model} makes {dims}-d vectors. "
                        "Re-embed with `kgsearch embed generate --model ... --force`.",
                        details={"store_dims": current_dims, "embedder_dims": dims},
                    )
                if current_model != model:
                    raise ConfigError(
                        f"store {self.url} was embedded with {current_model}, not {model}. "
                        "Switch models explicitly with `kgsearch embed generate --model "
                        f"{model} --force`, which re-embeds every row.",
                        details={"store_model": current_model, "embedder_model": model},
                    )
            self.set_meta("embedding_model", model)
            self.set_meta("dims", str(dims))
            if replace and current_model and current_model != model:
                for kind in Kind:
                    lifecycle.reset_all(self.db, kind)
                    self.db.execute(f"DROP INDEX IF EXISTS {kind.table}_vector")
                self._indexed.clear()

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
        return [r["project"] for r in rows]

    # writes --------------------------------------------------------------
    def _touched(self) -> None:
        self.lexical.clear()

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
        """Insert or update by (project, type, key); return the stored ids in order."""
        if not rows:
            return []
        now = datetime.now(UTC)
        sql = (
            f"INSERT INTO objects AS objects ({_OBJECT_COLUMNS}) "
            "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) "
            "ON CONFLICT (project, type, key) DO UPDATE SET "
            "tags = excluded.tags, properties = excluded.properties, labels = excluded.labels, "
            "updated_at = CASE WHEN objects.deleted_at IS NULL "
            "AND objects.tags::text = excluded.tags::text "
            "AND objects.properties::text = excluded.properties::text "
            "AND objects.labels::text = excluded.labels::text "
            "THEN objects.updated_at ELSE excluded.updated_at END, "
            + _STATE_ON_CONFLICT.format(t="objects")
        )
        params = [
            (
                r.id,
                project,
                _clean(r.type),
                _clean(r.key),
                dumps(list(r.tags)),
                dumps(r.properties),
                dumps(list(r.labels)),
                _utc(r.created_at) or now,
                _utc(r.updated_at) or now,
                _clean(r.text),
                r.text_hash,
                r.text_version,
            )
            for r in rows
        ]
        with self.db.transaction():
            self._write(sql, _OBJECT_COLUMNS, "project, type, key", params)
            self._touched()
            if not return_ids:
                return []
            resolved = self.resolve(project, [ObjectRef(type=r.type, key=r.key) for r in rows])
        return [resolved[ObjectRef(type=r.type, key=r.key)].id for r in rows]

    def upsert_relationships(
        self, project: str, rows: Sequence[RelationshipRow], *, endpoints_checked: bool = False
    ) -> list[str]:
        """Insert or update by id; endpoints must be live objects of the project."""
        if not rows:
            return []
        now = datetime.now(UTC)
        sql = (
            f"INSERT INTO relationships AS relationships ({_RELATIONSHIP_COLUMNS}) VALUES "
            "(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) "
            "ON CONFLICT (project, id) DO UPDATE SET type = excluded.type, "
            "source_id = excluded.source_id, target_id = excluded.target_id, "
            "label = excluded.label, properties = excluded.properties, weight = excluded.weight, "
            "valid_from = excluded.valid_from, valid_to = excluded.valid_to, "
            "description = excluded.description, source_chunks = excluded.source_chunks, "
            "updated_at = excluded.updated_at, " + _STATE_ON_CONFLICT.format(t="relationships")
        )
        params = [
            (
                r.id,
                project,
                _clean(r.type),
                r.source_id,
                r.target_id,
                _clean(r.label),
                dumps(r.properties),
                r.weight,
                _utc(r.valid_from),
                _utc(r.valid_to),
                _clean(r.description),
                dumps(list(r.source_chunks)),
                _utc(r.created_at) or now,
                _utc(r.updated_at) or now,
                _clean(r.text),
                r.text_hash,
                r.text_version,
            )
            for r in rows
        ]
        with self.db.transaction():
            if not endpoints_checked:
                wanted = sorted({i for r in rows for i in (r.source_id, r.target_id)})
                live = {
                    r["id"]
                    for r in self.db.all(
                        "SELECT id FROM objects WHERE project = %s AND deleted_at IS NULL "
                        "AND id = ANY(%s)",
                        (project, wanted),
                    )
                }
                absent = [i for i in wanted if i not in live]
                if absent:
                    raise NotFound(
                        f"relationship endpoint(s) are not live objects of project {project!r}: "
                        f"{', '.join(absent[:10])}",
                        details={"missing": absent},
                    )
            self._write(sql, _RELATIONSHIP_COLUMNS, "project, id", params)
            self._touched()
        return [r.id for r in rows]

    def upsert_sources(self, project: str, sources: Sequence[Source]) -> None:
        """Insert or update sources by id."""
        self.db.executemany(
            "INSERT INTO sources (id, project, title, uri, metadata, created_at) "
            "VALUES (%s,%s,%s,%s,%s,%s) ON CONFLICT (project, id) DO UPDATE SET "
            "title = excluded.title, uri = excluded.uri, metadata = excluded.metadata, "
            "deleted_at = NULL",
            [
                (
                    s.id,
                    project,
                    _clean(s.title),
                    _clean(s.uri),
                    dumps(s.metadata),
                    _utc(s.created_at) or datetime.now(UTC),
                )
                for s in sources
            ],
        )

    def upsert_chunks(self, project: str, rows: Sequence[tuple[Chunk, str, str, int]]) -> None:
        """Insert or update chunks by id with (chunk, text, text_hash, text_version)."""
        now = datetime.now(UTC)
        with self.db.transaction():
            self.db.executemany(
                "INSERT INTO chunks AS chunks (id, project, source_id, body, position, metadata, "
                "created_at, updated_at, text, text_hash, text_version) "
                "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (project, id) DO UPDATE "
                "SET source_id = excluded.source_id, body = excluded.body, "
                "position = excluded.position, metadata = excluded.metadata, "
                "updated_at = excluded.updated_at, " + _STATE_ON_CONFLICT.format(t="chunks"),
                [
                    (
                        c.id,
                        project,
                        c.source_id,
                        _clean(c.text),
                        c.position,
                        dumps(c.metadata),
                        _utc(c.created_at) or now,
                        _utc(c.updated_at) or now,
                        _clean(text),
                        text_hash,
                        version,
                    )
                    for c, text, text_hash, version in rows
                ],
            )
            self._touched()

    def add_mentions(self, project: str, mentions: Sequence[Mention]) -> None:
        """Add mention links (duplicates ignored)."""
        self.db.executemany(
            "INSERT INTO mentions (project, source_id, chunk_id, object_id, relationship_id) "
            "VALUES (%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING",
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
        table = _table(kind)[0]
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
            self._touched()
        return count

    def purge(self, project: str) -> int:
        """Remove soft-deleted rows for good, with their mentions and dangling edges."""
        removed = 0
        with self.db.transaction():
            self.db.execute(
                "UPDATE relationships r SET deleted_at = %s WHERE r.project = %s "
                "AND r.deleted_at IS NULL AND (r.source_id NOT IN (SELECT id FROM objects "
                "WHERE project = %s AND deleted_at IS NULL) OR r.target_id NOT IN (SELECT id "
                "FROM objects WHERE project = %s AND deleted_at IS NULL))",
                (datetime.now(UTC), project, project, project),
            )
            for table, column in (
                ("objects", "object_id"),
                ("relationships", "relationship_id"),
                ("chunks", "chunk_id"),
                ("sources", "source_id"),
            ):
                self.db.execute(
                    f"DELETE FROM mentions WHERE project = %s AND {column} IN "
                    f"(SELECT id FROM {table} WHERE project = %s AND deleted_at IS NOT NULL)",
                    (project, project),
                )
                removed += self.db.execute(
                    f"DELETE FROM {table} WHERE project = %s AND deleted_at IS NOT NULL",
                    (project,),
                )
            self._touched()
        return removed

    # reads ---------------------------------------------------------------
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
        table, columns, decode = _table(kind)
        rows = {
            r["id"]: r
            for r in self.db.all(
                f"SELECT {columns} FROM {table} WHERE project = %s AND deleted_at IS NULL "
                "AND id = ANY(%s)",
                (project, list(dict.fromkeys(ids))),
            )
        }
        return [decode(rows[i]) for i in ids if i in rows]

    def get_objects(self, project: str, ids: Sequence[str]) -> list[GraphObject]:
        """Live objects by id, in the order asked (missing ids skipped)."""
        return self._get(project, "object", ids)

    def get_relationships(self, project: str, ids: Sequence[str]) -> list[Relationship]:
        """Live relationships by id, in the order asked."""
        return self._get(project, "relationship", ids)

    def get_chunks(self, project: str, ids: Sequence[str]) -> list[Chunk]:
        """Live chunks by id, in the order asked."""
        return self._get(project, "chunk", ids)

    def get_sources(self, project: str, ids: Sequence[str]) -> list[Source]:
        """Live sources by id, in the order asked."""
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
        """One page of live rows in insertion order; pass ``next_cursor`` for the next."""
        if not 1 <= limit <= 10_000:
            raise InvalidRequest("limit must be between 1 and 10000")
        table, columns, decode = _table(kind)
        after = 0
        if cursor:
            try:
                after = int(cursor)
            except ValueError:
                raise InvalidRequest(f"invalid cursor {cursor!r}") from None
        where: str = ""
        params: list[Any] = []
        if kind != "source":
            where, params = filter_sql(Kind(kind), filters, current_only=False)
        rows = self.db.all(
            f"SELECT seq AS _seq, {columns} FROM {table} t WHERE project = %s "
            f"AND deleted_at IS NULL AND seq > %s{where} ORDER BY seq LIMIT %s",
            (project, after, *params, limit + 1),
        )
        items = [decode(r) for r in rows[:limit]]
        next_cursor = str(rows[limit - 1]["_seq"]) if len(rows) > limit else None
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
        cursor: str | None = None
        while True:
            page = self.list_rows(
                project, kind, limit=1000, cursor=cursor, filters=Filters(as_of=None)
            )
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def object_types(self, project: str) -> list[str]:
        """Distinct types of the project's live objects."""
        return [
            r["type"]
            for r in self.db.all(
                "SELECT DISTINCT type FROM objects WHERE project = %s AND deleted_at IS NULL "
                "ORDER BY type",
                (project,),
            )
        ]

    # embedding lifecycle -------------------------------------------------
    def set_texts(self, project: str, kind: Kind, updates: Sequence[TextUpdate]) -> int:
        """Store recomputed texts; rows whose hash changed become pending."""
        for update in updates:
            _clean(update.text)
        with self.db.transaction():
            changed = lifecycle.set_texts(self.db, project, kind, updates)
            self._touched()
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
        """Claim up to ``limit`` due rows; concurrent claimers never get the same row."""
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
            return lifecycle.complete(self.db, kind, results, model, dims, elapsed_ms, record_stats)

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
            return lifecycle.requeue(self.db, kind, project, statuses)

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
        batch: list[Any] = []
        for item in self.iter_rows(project, kind.value):
            batch.append(item)
            if len(batch) >= 1000:
                yield batch
                batch = []
        if batch:
            yield batch

    def build_indexes(self) -> list[str]:
        """Build each kind's vector index once it holds enough vectors (after a bulk load
        or an embedding run; never on an empty table). Returns the kinds indexed now."""
        dims = self._dims()
        built: list[str] = []
        if dims is None:
            return built
        for kind in Kind:
            if search.build_vector_index(
                self.db, kind, dims, self.options.vector_index, min_rows=self.index_min_rows
            ):
                built.append(kind.value)
            self._indexed.pop(kind, None)
        return built

    # search primitives ---------------------------------------------------
    def _has_index(self, kind: Kind) -> bool:
        if self.options.vector_index == "none":  # exact search only, even if one exists
            return False
        if kind not in self._indexed:
            self._indexed[kind] = search.vector_index_exists(self.db, kind)
        return self._indexed[kind]

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
            self.db,
            project,
            kind,
            vector,
            limit=limit,
            dims=self._dims(),
            indexed=self._has_index(kind),
            filters=filters,
            ids=ids,
            ef_search=self.options.ef_search,
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
            self.db, self.lexical, project, kind, query, limit=limit, filters=filters, prefix=prefix
        )

    def vectors(
        self, project: str, kind: Kind, ids: Sequence[str]
    ) -> dict[str, npt.NDArray[np.float32]]:
        """Stored vectors of the given embedded rows."""
        return search.stored_vectors(self.db, project, kind, ids)

    # api keys --------------------------------------------------------------
    def create_api_key(self, key: ApiKey, key_hash: str) -> None:
        """Store a new API key record with the digest of its secret."""
        self.db.execute(
            "INSERT INTO api_keys (id, project, name, scopes, created_at, revoked_at, key_hash) "
            "VALUES (%s,%s,%s,%s,%s,%s,%s)",
            (
                key.id,
                key.project,
                _clean(key.name),
                dumps(list(key.scopes)),
                _utc(key.created_at),
                _utc(key.revoked_at),
                key_hash,
            ),
        )

    def api_keys(self, project: str | None = None) -> list[ApiKey]:
        """API key records (never secrets), of one project or all, oldest first."""
        scope, params = ("WHERE project = %s", [project]) if project is not None else ("", [])
        rows = self.db.all(
            f"SELECT id, project, name, scopes, created_at, revoked_at FROM api_keys {scope} "
            "ORDER BY created_at, id",
            params,
        )
        return [ApiKey(**r) for r in rows]

    def find_api_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key record with this id and its stored digest (None when unknown)."""
        row = self.db.one(
            "SELECT id, project, name, scopes, created_at, revoked_at, key_hash FROM api_keys "
            "WHERE id = %s",
            (key_id,),
        )
        if row is None:
            return None
        digest = row.pop("key_hash")
        return ApiKey(**row), str(digest)

    def revoke_api_key(self, key_id: str) -> bool:
        """Revoke a key; False when no active key has this id."""
        return (
            self.db.execute(
                "UPDATE api_keys SET revoked_at = now() WHERE id = %s AND revoked_at IS NULL",
                (key_id,),
            )
            > 0
        )
