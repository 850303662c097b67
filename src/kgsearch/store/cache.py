"""The value cache, written once for both stores (``Cache``; table ``cache``).

Text values by (namespace, key), shared by every project, such as LLM responses keyed
by a digest of the request.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgsearch.errors import InvalidRequest
from kgsearch.store.dialect import Slice

__all__ = ["ValueCache"]


class ValueCache(Slice):
    """``Cache`` over a store's connection and dialect."""

    def cache_get(self, namespace: str, key: str) -> str | None:
        try:
            wanted = (self.dialect.text(namespace), self.dialect.text(key))
        except InvalidRequest:
            return None  # a key this store refuses to write is never cached
        row = self.db.one(
            self.dialect.sql("SELECT value FROM cache WHERE namespace = ? AND key = ?"), wanted
        )
        return None if row is None else str(row["value"])

    def cache_put(self, namespace: str, key: str, value: str) -> None:
        text = self.dialect.text
        self.db.write(
            self.dialect.sql(
                "INSERT INTO cache (namespace, key, value, created_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, "
                "created_at = excluded.created_at"
            ),
            (text(namespace), text(key), text(value), self.dialect.stamp()),
        )

    def cache_delete(self, namespace: str, keys: Sequence[str]) -> int:
        text = self.dialect.text
        gone = 0
        for key in dict.fromkeys(keys):
            gone += self.db.write(
                self.dialect.sql("DELETE FROM cache WHERE namespace = ? AND key = ?"),
                (text(namespace), text(key)),
            )
        return gone
