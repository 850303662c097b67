"""The value cache of the PostgreSQL store (table of migration ``m004_create_cache``).

:class:`PostgresCache` is the ``Cache`` slice of
:class:`~kgsearch.store.postgres.store.PostgresStore`: text values by (namespace, key),
shared by every project, such as LLM responses keyed by a digest of the request.
"""

from __future__ import annotations

from kgsearch.store.postgres.connection import Connection
from kgsearch.store.postgres.sql import clean

__all__ = ["PostgresCache"]


class PostgresCache:
    """The ``Cache`` capability over PostgreSQL."""

    db: Connection

    def cache_get(self, namespace: str, key: str) -> str | None:
        """The value cached under (namespace, key), or None."""
        if "\x00" in namespace + key:
            return None  # no stored key holds NUL
        row = self.db.one(
            "SELECT value FROM cache WHERE namespace = %s AND key = %s", (namespace, key)
        )
        return None if row is None else str(row["value"])

    def cache_put(self, namespace: str, key: str, value: str) -> None:
        """Cache a value, replacing any under the same (namespace, key).

        Raises:
            InvalidRequest: A NUL character, which PostgreSQL text cannot hold.
        """
        # excluded.created_at is the insert's default, now(): Citus accepts no function
        # but an immutable one in DO UPDATE SET
        self.db.execute(
            "INSERT INTO cache (namespace, key, value) VALUES (%s, %s, %s) "
            "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, "
            "created_at = excluded.created_at",
            (clean(namespace), clean(key), clean(value)),
        )
