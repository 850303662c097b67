"""The PostgreSQL + pgvector store (install the ``postgres`` extra)."""

from kgsearch.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
