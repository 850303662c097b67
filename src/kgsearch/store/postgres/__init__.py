"""The PostgreSQL + pgvector store (install the ``postgres`` extra)."""

from kgsearch.store.postgres.replication import PostgresWalClock, open_replica, replicated
from kgsearch.store.postgres.store import PostgresStore

__all__ = ["PostgresStore", "PostgresWalClock", "open_replica", "replicated"]
