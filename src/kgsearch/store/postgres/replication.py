"""PostgreSQL's side of read replicas: WAL positions and opening a standby.

A streaming standby replays the primary's write-ahead log; a position in it (an LSN)
orders every commit. :class:`PostgresWalClock` reads the primary's insert position
after a commit (``pg_current_wal_insert_lsn()``: past the commit record even when the
commit was asynchronous, as bulk loads' are) and asks the standby whether it has
replayed that far (``pg_last_wal_replay_lsn()``). :func:`open_replica` opens a
standby without migrating it (a hot standby refuses every write) and with a short wait
for a pooled connection, so a read falls back to the primary within seconds when the
standby is down.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgsearch.errors import ConfigError, StoreError
from kgsearch.store.postgres.connection import parse_url
from kgsearch.store.postgres.store import PostgresStore
from kgsearch.store.replicated import ReplicatedStore

if TYPE_CHECKING:
    from kgsearch.store.base import Store

__all__ = ["REPLICA_POOL_TIMEOUT", "PostgresWalClock", "open_replica", "replicated"]

# Seconds a replica read waits for a pooled connection before it falls back.
REPLICA_POOL_TIMEOUT = 2.0


def _db(store: Store) -> PostgresStore:
    if not isinstance(store, PostgresStore):
        raise StoreError("read replicas need PostgreSQL stores on both sides")
    return store


class PostgresWalClock:
    """WAL positions of a PostgreSQL primary and how far a standby replayed them."""

    def written(self, primary: Store) -> str:
        """The primary's WAL insert position now (an LSN such as ``0/3000148``)."""
        row = _db(primary).db.one("SELECT pg_current_wal_insert_lsn()::text AS lsn")
        return str(row["lsn"]) if row else "0/0"

    def replayed(self, replica: Store, position: str) -> bool:
        """Whether the standby has replayed the WAL up to ``position`` (a server that is
        not a standby has everything it holds: True)."""
        row = _db(replica).db.one(
            "SELECT coalesce(pg_last_wal_replay_lsn() >= %s::pg_lsn, true) AS done",
            (position,),
        )
        return bool(row and row["done"])


def open_replica(url: str) -> PostgresStore:
    """Open the read replica at ``url``: no migrations, a short pool wait.

    Raises:
        StoreError: The replica cannot be reached.
        ConfigError: The URL is not a valid PostgreSQL store URL.
    """
    return PostgresStore(url, migrate=False, pool_timeout=REPLICA_POOL_TIMEOUT)


def replicated(url: str, read_url: str, *, read_your_writes: bool = True) -> ReplicatedStore:
    """The store at ``url`` (opened and migrated now) with the read replica at
    ``read_url`` (opened on first use).

    Raises:
        ConfigError: A URL is invalid, or the two name different schemas.
        StoreError: The primary cannot be reached.
    """
    if parse_url(url)[1].schema != parse_url(read_url)[1].schema:
        raise ConfigError("the read replica URL must name the same schema as the store URL")
    return ReplicatedStore(
        PostgresStore(url),
        lambda: open_replica(read_url),
        clock=PostgresWalClock(),
        read_your_writes=read_your_writes,
    )
