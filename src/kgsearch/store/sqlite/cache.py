"""The value cache of the SQLite store (table of migration ``m006_create_cache``).

:class:`SQLiteCache` is the ``Cache`` slice of
:class:`~kgsearch.store.sqlite.store.SQLiteStore`: text values by (namespace, key),
shared by every project, such as LLM responses keyed by a digest of the request.
"""

from __future__ import annotations

from kgsearch.store.sqlite.connection import Connection
from kgsearch.store.sqlite.sql import now_iso

__all__ = ["SQLiteCache"]


class SQLiteCache:
    """The ``Cache`` capability over SQLite."""

    db: Connection

    def cache_get(self, namespace: str, key: str) -> str | None:
        """The value cached under (namespace, key), or None."""
        row = self.db.one(
            "SELECT value FROM cache WHERE namespace = ? AND key = ?", (namespace, key)
        )
        return None if row is None else str(row["value"])

    def cache_put(self, namespace: str, key: str, value: str) -> None:
        """Cache a value, replacing any under the same (namespace, key)."""
        self.db.execute(
            "INSERT INTO cache (namespace, key, value, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(namespace, key) DO UPDATE SET value = excluded.value, "
            "created_at = excluded.created_at",
            (namespace, key, value, now_iso()),
        )
