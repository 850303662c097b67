"""The server store: PostgreSQL with pgvector, for teams that outgrow one file.

``postgresql://user:pass@host:5432/db?schema=kgsearch&vector_index=hnsw&pool_size=8``.
The same Store protocol and the same conformance suite as the SQLite store. Writes
live in ``writes.py`` and API keys in ``keys.py`` (mixins of this class), graph reads
in ``graph.py``, the lifecycle in ``lifecycle.py`` and search in ``search.py``, all on
one pooled :class:`Connection`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from kgsearch.errors import (
    InvalidRequest,
    MigrationError,
)
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
    StoreInfo,
    TextUpdate,
)
from kgsearch.store.common import batched, check_embedding_model, every_page
from kgsearch.store.migrations import pending
from kgsearch.store.postgres import graph, lifecycle, search
from kgsearch.store.postgres.connection import Connection, parse_url
from kgsearch.store.postgres.keys import ApiKeys
from kgsearch.store.postgres.schema import MIGRATIONS, SCHEMA_VERSION
from kgsearch.store.postgres.sql import filter_sql
from kgsearch.store.postgres.writes import GraphWrites, clean
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

__all__ = ["PostgresStore"]

RowKind = Literal["object", "relationship", "chunk", "source"]
_META_TTL_SECONDS = 2.0
_INDEX_TTL_SECONDS = 60.0
_TABLES: dict[str, tuple[str, str, Any]] = {
    "object": ("objects", OBJECT_COLUMNS, to_object),
    "relationship": ("relationships", RELATIONSHIP_COLUMNS, to_relationship),
    "chunk": ("chunks", CHUNK_COLUMNS, to_chunk),
    "source": ("sources", SOURCE_COLUMNS, to_source),
}


def _table(kind: str) -> tuple[str, str, Any]:
    try:
        return _TABLES[kind]
    except KeyError:
        raise InvalidRequest(
            f"unknown kind {kind!r}; expected one of {', '.join(_TABLES)}"
        ) from None


class PostgresStore(GraphWrites, ApiKeys):
    """The PostgreSQL + pgvector store.

    Args:
        url: ``postgresql://…`` with optional ``schema``, ``vector_index`` (``hnsw``,
            ``ivfflat`` or ``none``), ``pool_size`` and ``ef_search`` parameters.
        migrate: Apply pending migrations on open (default True).
        index_min_rows: Build the vector index once a kind holds this many vectors.
    """

    # each vector leg is a query on a pooled connection: see Store.parallel_vector_legs
    parallel_vector_legs = True

    def __init__(
        self, url: str, *, migrate: bool = True, index_min_rows: int = search.INDEX_MIN_ROWS
    ) -> None:
        libpq, options = parse_url(url)
        self.url = url
        self.options = options
        self.index_min_rows = index_min_rows
        self.db = Connection(libpq, options.schema, options.pool_size, options.ef_search)
        self.lexical = search.LexicalStats()
        self._indexed: dict[Kind, tuple[float, bool]] = {}
        self._meta_cache: dict[str, tuple[float, str | None]] = {}
        self._bulk = False
        if migrate:
            self.migrate()

    # lifecycle -----------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply pending named migrations under an advisory lock; return their names.

        When none is pending nothing is locked or created, so a role with only read
        and write grants can open an existing store.
        """
        table = self.db.one("SELECT to_regclass(%s) AS t", (f'"{self.db.schema}".migrations',))
        if table is not None and table["t"] is not None:
            applied = {r["name"] for r in self.db.all("SELECT name FROM migrations")}
            self._check_known(applied)
            if not pending(MIGRATIONS, applied):
                return []
        done: list[str] = []
        with self.db.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.db.schema,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, "
                "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            applied = {r["name"] for r in self.db.all("SELECT name FROM migrations")}
            self._check_known(applied)
            for migration in pending(MIGRATIONS, applied):
                try:
                    migration.apply(self._exec)
                    self.db.execute("INSERT INTO migrations (name) VALUES (%s)", (migration.name,))
                except Exception as exc:
                    raise MigrationError(f"migration {migration.name} failed: {exc}") from exc
                done.append(migration.name)
        return done

    def _check_known(self, applied: set[str]) -> None:
        unknown = applied - {m.name for m in MIGRATIONS}
        if unknown:
            raise MigrationError(
                f"schema {self.db.schema!r} was written by a newer kgsearch "
                f"(unknown migrations {sorted(unknown)}); upgrade kgsearch"
            )

    def _exec(self, sql: str) -> None:
        self.db.execute(sql)

    def close(self) -> None:
        """Close the connection pool."""
        self.db.close()

    def transaction(self) -> Any:
        """A write transaction; nested calls join the outer one."""
        return self.db.transaction()

    @property
    def in_transaction(self) -> bool:
        """Whether the calling thread is inside :meth:`transaction`."""
        return self.db.in_transaction

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
            (key, clean(value)),
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
            if not replace:
                check_embedding_model(self.url, current_model, current_dims, model, dims)
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
        yield from every_page(self.list_rows, project, kind)

    def objects_named(
        self, project: str, name: str, *, limit: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        """Live objects whose key equals ``name`` ignoring case."""
        if "\x00" in name:
            return []  # no stored key holds NUL
        where, params = filter_sql(Kind.OBJECT, filters)
        # sorted here, so that no plan walks an index in (type, id) order instead of
        # looking the key up
        rows = self.db.all(
            "SELECT t.type, t.id FROM objects t WHERE t.project = %s "
            f"AND lower(t.key) = lower(%s) AND t.deleted_at IS NULL{where}",
            (project, name, *params),
        )
        return [(i, 1.0) for _, i in sorted((r["type"], r["id"]) for r in rows)[:limit]]

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
            clean(update.text)
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
        yield from batched(self.iter_rows(project, kind.value))

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
        """Whether the kind has its vector index (looked up again every minute, so an
        index another process builds is used)."""
        if self.options.vector_index == "none":  # exact search only, even if one exists
            return False
        now = time.monotonic()
        cached = self._indexed.get(kind)
        if cached is None or now - cached[0] > _INDEX_TTL_SECONDS:
            cached = (now, search.vector_index_exists(self.db, kind))
            self._indexed[kind] = cached
        return cached[1]

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
