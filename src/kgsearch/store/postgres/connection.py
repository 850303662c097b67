"""A psycopg 3 connection pool with per-thread transactions and wrapped driver errors.

Statements outside a transaction borrow a pooled connection in autocommit mode; inside
``transaction()`` every statement of the calling thread runs on that transaction's
connection, and nested calls join it (as the SQLite store's connection does). The
connection also reads the store's ``meta`` table, remembering values for a moment
outside transactions, since every search needs the vectors' dims. Every cursor reports
its statements to the calling thread's tracer (:class:`~kgsearch.store.postgres.cursor.
TracedCursor`), so statements run on a transaction's own connection are heard too.
"""

from __future__ import annotations

import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from kgsearch.errors import ConfigError, Conflict, InvalidRequest, KgsearchError, StoreError
from kgsearch.model import Kind
from kgsearch.store.common import pg_conflict, store_failure
from kgsearch.store.postgres.sql import clean
from kgsearch.store.tracing import active, note

try:
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import errors as pg_errors
    from psycopg import sql as pg_sql
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigError(
        "the PostgreSQL store needs the 'postgres' extra: pip install 'kgsearch[postgres]'"
    ) from exc

from kgsearch.store.postgres.cursor import TracedCursor

__all__ = [
    "BUILD_MEMORY",
    "EF_SEARCH",
    "POOL_SIZE",
    "Connection",
    "StoreOptions",
    "TracedCursor",
    "parse_url",
    "wrap_error",
]

_IDENT_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_")
# Outside transactions a metadata value is remembered this long: every search reads the
# model and dims, and another process's change of model shows after that long.
_META_TTL_SECONDS = 2.0
# Most connections a store keeps open, unless the URL's ``pool_size`` says otherwise. A
# search runs its legs side by side, each statement on a connection (a server process);
# more statements at once than the server has cores only make them contend (CPU, cache):
# on the 2-core benchmark machine 4 gave PostgreSQL search a lower p50 and p95 than 8
# (docs/benchmarks.md), and it is psycopg-pool's own default.
POOL_SIZE = 4
# HNSW candidates a vector query walks per kind, unless the URL's ``ef_search`` sets one
# for all: the least beam whose recall@10 against the exact scan is at least 0.95 on
# the MetaQA benchmark with some room (docs/benchmarks.md: objects, short texts crowded
# together, need 200; relationships, longer and more distinct, 0.97 at 64).
EF_SEARCH = {Kind.OBJECT: 200, Kind.RELATIONSHIP: 64, Kind.CHUNK: 200, Kind.COMMUNITY: 200}
# ``maintenance_work_mem`` of a vector index build, unless the URL's ``build_memory``
# sets it: an HNSW graph of 384-dim rows (m = 32) takes about 2.7 KB a row, so 512 MB
# holds about 190,000; one that outgrows it is finished on disk, many times slower
# (pgvector says "hnsw graph no longer fits into maintenance_work_mem").
BUILD_MEMORY = "512MB"
_BUILD_MEMORY = re.compile(r"[1-9][0-9]{0,5}(MB|GB)")


class StoreOptions:
    """kgsearch's own URL parameters, removed before the URL reaches libpq.

    * ``schema`` — the PostgreSQL schema holding kgsearch's tables (default ``public``);
      several kgsearch stores can share one database in separate schemas.
    * ``vector_index`` — ``hnsw`` (default), ``ivfflat`` or ``none``.
    * ``pool_size`` — most connections kept open (default :data:`POOL_SIZE`).
    * ``ef_search`` — HNSW candidates per query, every kind (at least the limit);
      without it, :data:`EF_SEARCH` per kind.
    * ``build_memory`` — ``maintenance_work_mem`` of the vector index builds, in MB or
      GB (default :data:`BUILD_MEMORY`); on Citus, of each worker's shard builds.
    * ``held_vectors`` — ``on`` (default): unfiltered vector legs are answered from
      vectors held in the process while they are current (``held.py``); ``off``:
      PostgreSQL answers every leg.
    """

    def __init__(
        self,
        schema: str,
        vector_index: str,
        pool_size: int,
        ef_search: int | None = None,
        build_memory: str = BUILD_MEMORY,
        held_vectors: bool = True,
    ) -> None:
        self.schema = schema
        self.held_vectors = held_vectors
        self.vector_index = vector_index
        self.pool_size = pool_size
        self.ef_search = ef_search
        self.build_memory = build_memory

    def beam(self, kind: Kind) -> int:
        """The HNSW candidates a vector query of the kind walks."""
        return self.ef_search or EF_SEARCH[kind]


def parse_url(url: str) -> tuple[str, StoreOptions]:
    """Split a ``postgresql://`` URL into the libpq URL and kgsearch's options.

    Raises:
        ConfigError: An option has an invalid value.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.split("+", 1)[0]
    params = parse_qsl(parts.query, keep_blank_values=True)
    own = {"schema", "vector_index", "pool_size", "ef_search", "build_memory", "held_vectors"}
    ours = {k: v for k, v in params if k in own}
    rest = [(k, v) for k, v in params if k not in ours]
    schema = ours.get("schema", "public")
    if not schema or set(schema) - _IDENT_CHARS or schema[0].isdigit() or len(schema) > 63:
        raise ConfigError(
            f"invalid schema {schema!r} in store URL: use lowercase letters, digits and _"
        )
    index = ours.get("vector_index", "hnsw")
    if index not in {"hnsw", "ivfflat", "none"}:
        raise ConfigError(f"vector_index must be hnsw, ivfflat or none, not {index!r}")
    try:
        pool_size = int(ours.get("pool_size", str(POOL_SIZE)))
    except ValueError:
        pool_size = 0
    if not 1 <= pool_size <= 100:
        raise ConfigError("pool_size must be a whole number between 1 and 100")
    try:
        ef_search = int(ours["ef_search"]) if "ef_search" in ours else None
    except ValueError:
        ef_search = 0
    if ef_search is not None and not 10 <= ef_search <= 1000:
        raise ConfigError("ef_search must be a whole number between 10 and 1000")
    memory = ours.get("build_memory", BUILD_MEMORY)
    if not _BUILD_MEMORY.fullmatch(memory):
        raise ConfigError(f"build_memory must be a size in MB or GB, like 2GB, not {memory!r}")
    held = ours.get("held_vectors", "on")
    if held not in {"on", "off"}:
        raise ConfigError(f"held_vectors must be on or off, not {held!r}")
    libpq = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(rest), ""))
    if scheme not in {"postgresql", "postgres"}:
        raise ConfigError(f"not a PostgreSQL URL: {url!r}")
    return libpq, StoreOptions(schema, index, pool_size, ef_search, memory, held == "on")


# Serialises first-time set-up (schema, extension) among processes opening one database.
_PREPARE_LOCK = 0x6B6773_0001
# halfvec storage needs pgvector 0.7, iterative index scans 0.8.
_PGVECTOR_MIN = (0, 8)
# An iterative HNSW scan visits at most this many rows before the store falls back to
# an exact scan of the filtered rows (pgvector's default; past it, on tables of ~10^5
# rows, the exact scan is as cheap as walking on).
_MAX_SCAN_TUPLES = 20_000
# A run-time setting's name as the store writes them (``hnsw.ef_search``); the value
# is always sent as a literal.
_SETTING_NAME = re.compile(r"[a-z_]+(\.[a-z_]+)?")
# Settings a statement of :meth:`Connection.all_with` may leave in a pooled session for
# statements that do not name them: they change only how a vector index is walked, and
# every statement walking one names each of them (search.py). Undoing them for the next
# statement, then setting them again for the next vector leg, cost a round trip each,
# about six a search on the sample graph (objects and relationships walk other beams).
_LEG_SETTINGS = frozenset({"hnsw.ef_search", "hnsw.iterative_scan", "ivfflat.iterative_scan"})


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def _prepare(conn: psycopg.Connection[Any], schema: str) -> str:
    """Create the schema and the pgvector extension if missing; return the schema the
    extension lives in. Nothing is created (no CREATE privilege needed) when both exist."""
    find = (
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'vector'"
    )
    have_schema = conn.execute(
        "SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)
    ).fetchone()
    found = conn.execute(find).fetchone()
    if have_schema is None or found is None:
        conn.execute("SELECT pg_advisory_lock(%s)", (_PREPARE_LOCK,))
        try:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_PREPARE_LOCK,))
        found = conn.execute(find).fetchone()
    if found is None:  # pragma: no cover - CREATE EXTENSION raised otherwise
        raise StoreError("the pgvector extension is not installed")
    version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    have = str((version.fetchone() or ("0",))[0])
    if _version(have) < _PGVECTOR_MIN:
        with suppress(psycopg.Error):  # the server may have newer binaries than the schema
            conn.execute("ALTER EXTENSION vector UPDATE")
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        have = str((row.fetchone() or ("0",))[0])
        if _version(have) < _PGVECTOR_MIN:
            raise StoreError(
                f"kgsearch needs pgvector 0.8 or newer (the database has {have}): install it "
                "on the server and run ALTER EXTENSION vector UPDATE (docs/postgres.md)"
            )
    return str(found[0])


def wrap_error(exc: Exception) -> Exception:
    """The kgsearch error for a driver error."""
    if isinstance(exc, pg_errors.DeadlockDetected | pg_errors.SerializationFailure):
        return Conflict("a concurrent write conflicted with this one; retry it")
    if isinstance(exc, pg_errors.UniqueViolation | pg_errors.IntegrityError):
        return pg_conflict(exc.diag.table_name, exc.diag.message_detail, str(exc))
    if isinstance(exc, pg_errors.NumericValueOutOfRange):
        return InvalidRequest("a number is too large for the store")
    if isinstance(exc, pg_errors.DataError | pg_errors.UntranslatableCharacter):
        # the primary message only: the full text quotes the statement's context
        primary = (exc.diag.message_primary or type(exc).__name__).splitlines()[0]
        return InvalidRequest(f"value not accepted by PostgreSQL: {primary[:200]}")
    if isinstance(exc, UnicodeEncodeError):
        return InvalidRequest(f"text is not valid Unicode: {exc.reason}")
    if isinstance(exc, OverflowError):
        return InvalidRequest(f"a number is too large for the store: {exc}")
    if isinstance(exc, ValueError) and "NUL" in str(exc):
        return InvalidRequest("text must not contain NUL (\\x00) characters")
    if isinstance(exc, KgsearchError):
        return exc
    return store_failure("PostgreSQL", str(exc))


def _checked(name: str) -> str:
    """A run-time setting's name, checked to be one (it is written into statements)."""
    if not _SETTING_NAME.fullmatch(name):
        raise StoreError(f"not a setting name: {name!r}")
    return name


def _set(name: str, value: str) -> pg_sql.Composable:
    """``SET name = 'value'`` for the session."""
    return pg_sql.SQL("SET {} = {}").format(pg_sql.SQL(_checked(name)), pg_sql.Literal(value))


class Connection:
    """A pool of connections to one database, scoped to one schema.

    Args:
        url: A libpq URL (kgsearch's own parameters already removed).
        schema: The schema every connection's ``search_path`` starts with.
        pool_size: Most connections kept open.
        ef_search: Each connection's HNSW search beam (``hnsw.ef_search``), so a vector
            query walking that beam needs no ``SET LOCAL`` (and no transaction).
        pool_timeout: Seconds a statement waits for a pooled connection before it fails
            (a read replica's is short, so a read falls back to the primary quickly).

    ``workers_follow_settings`` is set on a Citus coordinator: the settings of
    :meth:`all_with` are then sent on to the workers (and session settings, which Citus
    keeps on the coordinator, have to be given per statement that way).
    """

    def __init__(
        self,
        url: str,
        schema: str,
        pool_size: int,
        ef_search: int = 200,
        *,
        pool_timeout: float = 30.0,
    ) -> None:
        self.url = url
        self.schema = schema
        self.ef_search = ef_search
        self.workers_follow_settings = False
        self._local = threading.local()
        self._meta: dict[str, tuple[float, str | None]] = {}
        # per pooled connection, the run-time settings a statement of all_with left in its
        # session that differ from the connection's own (see _ensure)
        self._changed: weakref.WeakKeyDictionary[psycopg.Connection[Any], dict[str, str]] = (
            weakref.WeakKeyDictionary()
        )
        self._changed_lock = threading.Lock()
        self._own = self._defaults()
        # called after each outermost transaction commits (the store marks its cached
        # figures stale again: a search may have read them while the write was open)
        self.after_commit: Callable[[], None] | None = None
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                self.vector_schema = _prepare(conn, schema)
        except psycopg.Error as exc:
            raise StoreError(f"cannot open PostgreSQL store: {exc}") from exc
        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True, "row_factory": dict_row, "cursor_factory": TracedCursor},
            configure=self._configure,
            timeout=pool_timeout,
            open=False,
        )
        try:
            self.pool.open(wait=True, timeout=30)
        except Exception as exc:
            self.pool.close()
            raise StoreError(f"cannot open PostgreSQL connection pool: {exc}") from exc

    def _defaults(self) -> dict[str, str]:
        """The run-time settings :meth:`_configure` gives every connection (a setting
        not among them is the server's)."""
        return {
            "hnsw.ef_search": str(int(self.ef_search)),
            "ivfflat.probes": "10",
            # plain index scans by default (an iterative scan's bookkeeping costs time
            # even when every row passes); a leg whose conditions drop many indexed
            # rows turns iterative scans on for its statement (see search.py), walking
            # the index until enough rows pass, up to this many visited rows
            "hnsw.iterative_scan": "off",
            "hnsw.max_scan_tuples": str(_MAX_SCAN_TUPLES),
            "ivfflat.iterative_scan": "off",
            # the store's tables and indexes are read from memory (or SSD): an index
            # page costs about what a table page does, so exact vector scans read their
            # covering index alone (schema m013) instead of the whole table
            "random_page_cost": "1.1",
            # no JIT compilation: it pays off for long analytic queries, while a
            # store's statement takes milliseconds and compiling takes tens of them
            # (none of the sample graph's statements costs the 100,000 that turn it on
            # by default; counts over a few million rows would)
            "jit": "off",
        }

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        path = ", ".join(f'"{s}"' for s in dict.fromkeys([self.schema, self.vector_schema]))
        conn.execute(
            pg_sql.SQL("; ").join(
                [
                    pg_sql.SQL(f"SET search_path TO {path}, public"),
                    pg_sql.SQL("SET TIME ZONE 'UTC'"),
                    *(_set(name, value) for name, value in self._own.items()),
                ]
            )
        )
        register_vector(conn)

    def close(self) -> None:
        """Close every pooled connection."""
        self.pool.close()

    def dedicated(self) -> psycopg.Connection[Any]:
        """A connection of its own, outside the pool, set up as pooled ones are (for a
        background reader that must not wait behind searches for a pooled one); the
        caller closes it.

        Raises:
            StoreError: The server cannot be reached.
        """
        try:
            conn = psycopg.connect(
                self.url, autocommit=True, row_factory=dict_row, cursor_factory=TracedCursor
            )
        except psycopg.Error as exc:
            raise wrap_error(exc) from exc
        self._configure(conn)
        return conn

    @contextmanager
    def _connection(
        self, settings: Mapping[str, str] | None = None
    ) -> Iterator[psycopg.Connection[Any]]:
        """The calling thread's transaction's connection, or a pooled one whose session
        has ``settings`` (and the connection's own for every other)."""
        current = getattr(self._local, "conn", None)
        if current is not None:
            yield current
            return
        try:
            pooled = self.pool.connection()
            conn = pooled.__enter__()
        except psycopg.Error as exc:  # e.g. PoolTimeout: every connection busy or down
            raise wrap_error(exc) from exc
        try:
            self._ensure(conn, settings or {})
            yield conn
        except BaseException as exc:
            if not pooled.__exit__(type(exc), exc, exc.__traceback__):
                raise
        else:
            pooled.__exit__(None, None, None)

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """BEGIN … COMMIT on one connection, rolled back on any exception; nested calls
        on the same thread join the outer transaction."""
        current = getattr(self._local, "conn", None)
        if current is not None:
            yield current
            return
        try:
            with self.pool.connection() as conn:
                self._ensure(conn, {}, strict=True)
                self._local.conn = conn
                try:
                    with conn.transaction():
                        yield conn
                finally:
                    self._local.conn = None
        except psycopg.Error as exc:
            raise wrap_error(exc) from exc
        if self.after_commit is not None:
            self.after_commit()

    @property
    def held_here(self) -> bool:
        """Whether the calling thread is inside :meth:`transaction`."""
        return getattr(self._local, "conn", None) is not None

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = ()) -> int:
        """Run one statement; return the affected row count (``params=None``: the
        statement is sent as written, ``%`` signs and all)."""
        with self._connection() as conn:
            try:
                return conn.execute(sql, params).rowcount
            except (psycopg.Error, UnicodeEncodeError, OverflowError, ValueError) as exc:
                raise wrap_error(exc) from exc

    def write(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; return how many rows it changed."""
        return self.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for many parameter rows (pipelined by psycopg)."""
        if not rows:
            return
        with self._connection() as conn:
            try:
                with conn.cursor() as cur:
                    cur.executemany(sql, rows)
            except (psycopg.Error, UnicodeEncodeError, OverflowError, ValueError) as exc:
                raise wrap_error(exc) from exc

    def all(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[dict[str, Any]]:
        """Run a query and fetch every row as a dict."""
        with self._connection() as conn:
            try:
                return conn.execute(sql, params).fetchall()
            except (psycopg.Error, UnicodeEncodeError, OverflowError, ValueError) as exc:
                raise wrap_error(exc) from exc

    def all_with(
        self, settings: Mapping[str, str], sql: str, params: Sequence[Any] = ()
    ) -> list[dict[str, Any]]:
        """Run a query with run-time settings of its own, every row as a dict. Outside a
        transaction they go into the pooled connection's session (one ``SET``, none when
        it has them) and are undone for the next statement that takes it, but for the
        vector-walk settings, kept until a statement names them (:meth:`_ensure`); inside
        one, and on Citus, as ``SET LOCAL`` (:meth:`set_local`), ending with the
        transaction."""
        if not settings:
            return self.all(sql, params)
        if not (self.held_here or self.workers_follow_settings):
            # the pooled connection's session takes the settings (none sent when it
            # has them already) and keeps them until a statement wanting others takes
            # it: a pipelined transaction per statement cost more client CPU than the
            # statement (2 ms a search on the sample graph)
            if active():  # heard whether or not the session had them already (those
                # that are the connection's own go unsaid)
                for name, value in settings.items():
                    if self._own.get(name) != value:
                        note(f"setting {name} = {value}")
            with self._connection(settings) as conn:
                try:
                    return conn.execute(sql, params).fetchall()
                except (psycopg.Error, UnicodeEncodeError, OverflowError, ValueError) as exc:
                    raise wrap_error(exc) from exc
        with self._connection() as conn:
            try:
                if self.held_here:  # the settings last until the caller's commit
                    self.set_local(conn, settings)
                    return conn.execute(sql, params).fetchall()
                with conn.pipeline():
                    with conn.transaction():
                        self.set_local(conn, settings)
                        cursor = conn.execute(sql, params)
                    return cursor.fetchall()
            except (psycopg.Error, UnicodeEncodeError, OverflowError, ValueError) as exc:
                raise wrap_error(exc) from exc

    def set_local(self, conn: psycopg.Connection[Any], settings: Mapping[str, str]) -> None:
        """Set run-time settings for ``conn``'s current transaction (one of
        :meth:`transaction`, or a pipeline's). On Citus they are sent as
        ``SET LOCAL`` statements with ``citus.propagate_set_commands = 'local'``, the
        one form Citus passes on to the workers that run the statement (``set_config``
        and session settings stay on the coordinator)."""
        if not self.workers_follow_settings:
            for name, value in settings.items():
                conn.execute("SELECT set_config(%s, %s, true)", (name, value))
            return
        if settings:
            conn.execute("SET LOCAL citus.propagate_set_commands = 'local'")
        for name, value in settings.items():
            if not _SETTING_NAME.fullmatch(name):
                raise StoreError(f"not a setting name: {name!r}")
            conn.execute(
                pg_sql.SQL("SET LOCAL {} = {}").format(pg_sql.SQL(name), pg_sql.Literal(value))
            )

    def _ensure(
        self, conn: psycopg.Connection[Any], settings: Mapping[str, str], *, strict: bool = False
    ) -> None:
        """Give a pooled connection's session ``settings``, and the connection's own
        value (:meth:`_defaults`, else the server's) for each setting an earlier
        statement changed, in one round trip; none when it has them already. Unless
        ``strict`` (a transaction), the vector-walk settings of :data:`_LEG_SETTINGS` an
        earlier statement left are kept unless ``settings`` names them.

        Raises:
            StoreError: A setting's name is not one (or a driver error, wrapped).
        """
        defaults = self._own
        with self._changed_lock:
            changed = self._changed.get(conn, {})
        if strict:
            wanted = {}
        else:  # a value not known to be the session's ("?") is set again
            wanted = {k: v for k, v in changed.items() if k in _LEG_SETTINGS and v != "?"}
        wanted.update(settings)
        wanted = {k: v for k, v in wanted.items() if defaults.get(k) != v}
        if changed == wanted:
            return
        statements: list[pg_sql.Composable] = []
        for name, value in wanted.items():
            if changed.get(name) != value:
                statements.append(_set(name, value))
        for name in changed.keys() - wanted.keys():
            statements.append(
                _set(name, defaults[name])
                if name in defaults
                else pg_sql.SQL("RESET {}").format(pg_sql.SQL(_checked(name)))
            )
        with self._changed_lock:  # unknown until the server answers: an error or an
            # interrupt (the server may have applied them) sets every one again next time
            self._changed[conn] = {**changed, **{k: "?" for k in (*settings, *changed)}}
        try:
            conn.execute(pg_sql.SQL("; ").join(statements))
        except psycopg.Error as exc:
            raise wrap_error(exc) from exc
        with self._changed_lock:
            self._changed[conn] = wanted

    def one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> dict[str, Any] | None:
        """Run a query and fetch the first row."""
        rows = self.all(sql, params)
        return rows[0] if rows else None

    @contextmanager
    def session(self) -> Iterator[psycopg.Connection[Any]]:
        """The connection the calling thread would use (for ``SET LOCAL`` and COPY)."""
        with self._connection() as conn:
            yield conn

    def meta(self, key: str) -> str | None:
        """A value of the store's ``meta`` table: remembered for ``_META_TTL_SECONDS``
        outside transactions, always read inside one (which may have changed it)."""
        fresh = self.held_here
        cached = None if fresh else self._meta.get(key)
        now = time.monotonic()
        if cached is not None and now - cached[0] < _META_TTL_SECONDS:
            return cached[1]
        row = self.one("SELECT value FROM meta WHERE key = %s", (key,))
        value = None if row is None else str(row["value"])
        if not fresh:
            self._meta[key] = (now, value)
        return value

    def set_meta(self, key: str, value: str) -> None:
        """Set a value of the store's ``meta`` table (every remembered value is dropped).

        Raises:
            InvalidRequest: The value holds a NUL character.
        """
        self.forget_meta()
        self.execute(
            "INSERT INTO meta (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, clean(value)),
        )

    def forget_meta(self) -> None:
        """Drop every remembered metadata value (the next reads go to the table)."""
        self._meta.clear()
