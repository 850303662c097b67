"""The embedded default store: one SQLite file (WAL), FTS5 lexical index, vectors as blobs.

This module opens the file, applies the migrations, runs transactions and bulk loads,
and keeps the store's metadata. :class:`SQLiteStore` composes the capability slices
over one :class:`~kgsearch.store.sqlite.connection.Connection`: those written once for
both stores (graph writes, communities, API keys, the value cache, and the queues' and
reads' shared logic) speak SQLite through :data:`~kgsearch.store.sqlite.sql.SQLITE`;
this package holds what is SQLite's own: reads (``reads.py``), claims and row writes of
the queues (``queue.py``) and search (``search.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kgsearch.errors import MigrationError
from kgsearch.keys import ApiKey
from kgsearch.store.ann import ANN_MIN_ROWS
from kgsearch.store.common import check_embedding_model
from kgsearch.store.counts import META_SQL, MIGRATIONS_SQL, PROJECTS_SQL
from kgsearch.store.graph_writes import GraphWritesCore
from kgsearch.store.keys import KEY_BY_ID, found_key
from kgsearch.store.migrations import pending
from kgsearch.store.records import StoreInfo
from kgsearch.store.slices import SharedSlices
from kgsearch.store.sqlite.connection import CACHE_PAGES_KIB, Connection
from kgsearch.store.sqlite.lexical import LexicalStats
from kgsearch.store.sqlite.queue import SQLiteQueues
from kgsearch.store.sqlite.row_cache import RowCache
from kgsearch.store.sqlite.schema import (
    LIVE_INDEXES,
    MIGRATIONS,
    SCHEMA_VERSION,
    SECONDARY_INDEXES,
    fts_triggers,
)
from kgsearch.store.sqlite.search import SQLiteSearch, VectorCache
from kgsearch.store.sqlite.sql import SQLITE, now_iso
from kgsearch.store.sqlite.write_runs import WriteRuns

__all__ = ["SQLiteStore"]


class SQLiteStore(
    GraphWritesCore,
    SQLiteQueues,
    SQLiteSearch,
    SharedSlices,
    WriteRuns,
):
    """The embedded store. ``path`` is a file path or ``:memory:``.

    Args:
        path: Where the database lives; parent folders are created.
        migrate: Apply pending migrations on open (default True).
        ann_min_rows: Collections this large get an HNSW index (None: always exact);
            it is saved in the folder ``<path>.ann`` and reused while the vectors
            are unchanged.
    """

    dialect = SQLITE
    server_reads = False

    def __init__(
        self, path: str, *, migrate: bool = True, ann_min_rows: int | None = ANN_MIN_ROWS
    ) -> None:
        self.path = path
        self.url = "sqlite:///" + path if path != ":memory:" else "sqlite:///:memory:"
        self.db = Connection(path)
        self.vectors_cache = VectorCache(ann_min_rows, self.saved_folder)
        self.lexical = LexicalStats()
        self.row_cache = RowCache()
        self._types = {}
        self._runs = 0
        if migrate:
            self.migrate()

    @property
    def saved_folder(self) -> Path | None:
        """Where files built from the store are saved beside it (None in memory)."""
        return None if self.path == ":memory:" else Path(self.path + ".ann")

    # lifecycle -----------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply pending named migrations, each in its own transaction; return the names
        applied.

        Raises:
            MigrationError: The database was written by a newer kgsearch, or a
                migration failed (it is rolled back).
        """
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
        self.heal_fts()  # what an extraction run that died left un-indexed
        return done

    def _exec(self, sql: str) -> None:
        self.db.execute(sql)

    def find_api_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key's record and digest, read on the calling thread's own connection: a
        REST server checks keys on its event loop (``api/auth.py``), which must never
        wait for a write holding the store's connection; WAL shows it every committed
        revocation."""
        return found_key(self.db.reader().one(KEY_BY_ID, (key_id,)))

    def close(self) -> None:
        """Close the connection and drop cached vector indexes and rows."""
        self.vectors_cache.clear()
        self.row_cache.clear()
        self.db.close()

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
            for sql in LIVE_INDEXES.values():
                self.db.execute(f"DROP INDEX IF EXISTS {sql.split()[5]}")
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
                if self._deferrable():  # the rebuild indexed every row's current text
                    self.db.execute("DELETE FROM fts_stale WHERE tbl = ?", (table,))
                fts_triggers(self._exec, table)
            for sql in LIVE_INDEXES.values():
                self.db.execute(sql)
        self.db.execute(f"PRAGMA cache_size={CACHE_PAGES_KIB}")
        self.lexical.clear()

    # metadata ------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self.db.one(META_SQL, (key,))
        return None if row is None else str(row["value"])

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def info(self) -> StoreInfo:
        names = tuple(r["name"] for r in self.db.all(MIGRATIONS_SQL))
        dims = self.get_meta("dims")
        return StoreInfo(
            url=self.url,
            schema_version=len(names),
            migrations=names,
            embedding_model=self.get_meta("embedding_model"),
            dims=int(dims) if dims else None,
        )

    def set_embedding_model(self, model: str, dims: int, *, replace: bool = False) -> None:
        """Record the model and dims vectors are built with; a silent mix is refused.

        Raises:
            DimensionMismatch: The store holds vectors of other dimensions.
            ConfigError: The store holds vectors of another model and ``replace`` is False.
        """
        with self.db.transaction():
            current_model, current_dims = self.get_meta("embedding_model"), self.get_meta("dims")
            if not replace:
                check_embedding_model(
                    self.url, current_model, int(current_dims or 0) or None, model, dims
                )
            self.set_meta("embedding_model", model)
            self.set_meta("dims", str(dims))
            if replace and current_model and current_model != model:
                self._forget_vectors()

    def schema_version(self) -> int:
        """Number of migrations this code knows."""
        return SCHEMA_VERSION

    def projects(self) -> list[str]:
        return [r[0] for r in self.db.all(PROJECTS_SQL)]
