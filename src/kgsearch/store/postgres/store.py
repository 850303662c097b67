"""The server store: PostgreSQL with pgvector, for teams that outgrow one file.

``postgresql://user:pass@host:5432/db?schema=kgsearch&vector_index=hnsw&pool_size=4``.
The same Store protocol and the same conformance suite as the SQLite store. This
module opens the pool, applies the migrations under an advisory lock, runs
transactions and bulk loads, and keeps the store's metadata. :class:`PostgresStore`
composes the capability slices over one pooled
:class:`~kgsearch.store.postgres.connection.Connection`: those written once for both
stores (communities, API keys, the value cache, and the queues' and reads' shared
logic) speak PostgreSQL through :data:`~kgsearch.store.postgres.sql.POSTGRES`; this
package holds what is PostgreSQL's own: graph writes (``writes.py``) and reads
(``reads.py``), claims and array writes of the queues (``queue.py``) and search
(``search.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kgsearch.errors import MigrationError
from kgsearch.model import Kind
from kgsearch.store.common import PROJECTS_SQL, check_embedding_model
from kgsearch.store.migrations import pending
from kgsearch.store.postgres.citus import distributed, spread_tables
from kgsearch.store.postgres.connection import EF_SEARCH, Connection, parse_url
from kgsearch.store.postgres.held import HeldVectors
from kgsearch.store.postgres.lexical import LexicalStats
from kgsearch.store.postgres.queue import PostgresQueues
from kgsearch.store.postgres.schema import MIGRATIONS, SCHEMA_VERSION
from kgsearch.store.postgres.search import EXACT_MAX_ROWS, INDEX_MIN_ROWS, PostgresSearch
from kgsearch.store.postgres.sql import POSTGRES
from kgsearch.store.postgres.writes import PostgresWrites
from kgsearch.store.records import StoreInfo
from kgsearch.store.slices import SharedSlices

__all__ = ["PostgresStore"]


class PostgresStore(
    PostgresWrites,
    PostgresQueues,
    PostgresSearch,
    SharedSlices,
):
    """The PostgreSQL + pgvector store.

    Args:
        url: ``postgresql://…`` with optional ``schema``, ``vector_index`` (``hnsw``,
            ``ivfflat`` or ``none``), ``pool_size``, ``ef_search`` and ``build_memory``
            parameters (:class:`~kgsearch.store.postgres.connection.StoreOptions`).
        migrate: Apply pending migrations on open (default True).
        index_min_rows: Build the vector index once a kind holds this many vectors.
        exact_max_rows: A vector leg whose conditions leave at most this many rows (the
            planner's estimate) scans them exactly instead of walking the index.
        pool_timeout: Seconds a statement waits for a pooled connection (all busy, or
            the server unreachable) before it fails with StoreError.
    """

    dialect = POSTGRES
    server_reads = True

    def __init__(
        self,
        url: str,
        *,
        migrate: bool = True,
        index_min_rows: int = INDEX_MIN_ROWS,
        exact_max_rows: int = EXACT_MAX_ROWS,
        pool_timeout: float = 30.0,
    ) -> None:
        libpq, options = parse_url(url)
        self.url = url
        self.options = options
        self.index_min_rows = index_min_rows
        self.exact_max_rows = exact_max_rows
        self._estimates = {}
        self.db = Connection(
            libpq,
            options.schema,
            options.pool_size,
            options.ef_search or EF_SEARCH[Kind.OBJECT],
            pool_timeout=pool_timeout,
        )
        self.lexical = LexicalStats()
        self.db.after_commit = self.lexical.committed
        self._indexed = {}
        self._bulk = False
        if migrate:
            self.migrate()
        # on Citus a few statements take a form it accepts (store/postgres/citus.py)
        self.citus = distributed(self.db)
        self.spread = spread_tables(self.db) if self.citus else frozenset()
        self.lexical.spread = self.spread
        self.lexical.column_stats = not self.citus
        self.claims_by_project = self.citus
        self.db.workers_follow_settings = self.citus
        # unfiltered vector legs from vectors held here while current (held.py); not on
        # Citus, whose distributed tables carry no triggers to log their writes
        self.held = HeldVectors(self.db) if options.held_vectors and not self.citus else None

    # lifecycle -----------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply pending named migrations under an advisory lock; return their names.

        When none is pending nothing is locked or created, so a role with only read
        and write grants can open an existing store.

        Raises:
            MigrationError: The schema was written by a newer kgsearch, or a migration
                failed (all of this call's migrations are rolled back).
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
        """Refuse a schema that holds migrations this code does not know."""
        unknown = applied - {m.name for m in MIGRATIONS}
        if unknown:
            raise MigrationError(
                f"schema {self.db.schema!r} was written by a newer kgsearch "
                f"(unknown migrations {sorted(unknown)}); upgrade kgsearch"
            )

    def _exec(self, sql: str) -> None:
        self.db.execute(sql, None)

    def close(self) -> None:
        """Close the connection pool (and the held vectors' reader)."""
        if self.held is not None:
            self.held.close()
        self.db.close()

    @contextmanager
    def write_run(self) -> Iterator[None]:
        """Nothing is deferred: the ``tsvector`` is a generated column of each row."""
        yield

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """One transaction for a large load; statistics, visibility maps and indexes
        refreshed after it (``VACUUM (ANALYZE)``: the exact vector scans read only the
        covering ``*_exact`` indexes of pages marked all-visible, and BM25 plans from the
        statistics, so a fresh copy need not wait for autovacuum). The commit waits for
        its WAL to be flushed: the vacuum cannot mark pages of a commit not yet flushed
        all-visible (with ``synchronous_commit = off`` it marked none).

        Inside it, objects and relationships are written with COPY into a temporary
        staging table and one ``INSERT … SELECT … ON CONFLICT`` per batch (measured
        2.4× faster than pipelined inserts); the last of several rows with the same key
        in a batch wins, as it does row by row.
        """
        with self.db.transaction():
            self._bulk = True
            try:
                yield
            finally:
                self._bulk = False
        for table in ("objects", "relationships", "chunks", "sources", "mentions"):
            self.db.execute(f"VACUUM (ANALYZE) {table}")
        self.lexical.clear()
        self.build_indexes()

    # metadata ------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        """A value from the store's metadata table (outside transactions remembered for
        two seconds: another process's change of model shows after that long)."""
        return self.db.meta(key)

    def set_meta(self, key: str, value: str) -> None:
        # a NUL character raises InvalidRequest: PostgreSQL text cannot hold it
        self.db.set_meta(key, value)

    def info(self) -> StoreInfo:
        names = tuple(r["name"] for r in self.db.all("SELECT name FROM migrations ORDER BY name"))
        return StoreInfo(
            url=self.url,
            schema_version=len(names),
            migrations=names,
            embedding_model=self.db.meta("embedding_model"),
            dims=self._dims(),
        )

    def set_embedding_model(self, model: str, dims: int, *, replace: bool = False) -> None:
        """Record the model and dims vectors are built with; a silent mix is refused.

        Raises:
            DimensionMismatch: The store holds vectors of other dimensions.
            ConfigError: The store holds vectors of another model and ``replace`` is False.
        """
        self.db.forget_meta()
        with self.db.transaction() as conn:
            conn.execute("LOCK TABLE meta IN SHARE ROW EXCLUSIVE MODE")
            current_model, current_dims = self.db.meta("embedding_model"), self._dims()
            if not replace:
                check_embedding_model(self.url, current_model, current_dims, model, dims)
            self.db.set_meta("embedding_model", model)
            self.db.set_meta("dims", str(dims))
            if replace and current_model and current_model != model:
                self._forget_vectors()

    def schema_version(self) -> int:
        """Number of migrations this code knows."""
        return SCHEMA_VERSION

    def projects(self) -> list[str]:
        return [r["project"] for r in self.db.all(PROJECTS_SQL)]
