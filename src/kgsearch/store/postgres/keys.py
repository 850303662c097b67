"""API keys in PostgreSQL (table of migration ``m001_create_graph``); see ``kgsearch.keys``.

:class:`PostgresKeys` is the ``KeyStore`` slice of
:class:`~kgsearch.store.postgres.store.PostgresStore`: one row per key with its
project, scopes and the digest of its secret, never the secret itself.
"""

from __future__ import annotations

from kgsearch.keys import ApiKey
from kgsearch.store.postgres.connection import Connection
from kgsearch.store.postgres.sql import clean, utc
from kgsearch.store.values import dumps

__all__ = ["PostgresKeys"]


class PostgresKeys:
    """The ``KeyStore`` capability over PostgreSQL."""

    db: Connection

    def create_api_key(self, key: ApiKey, key_hash: str) -> None:
        """Store a new API key record with the digest of its secret."""
        self.db.execute(
            "INSERT INTO api_keys (id, project, name, scopes, created_at, revoked_at, key_hash) "
            "VALUES (%s,%s,%s,%s,%s,%s,%s)",
            (
                key.id,
                key.project,
                clean(key.name),
                dumps(list(key.scopes)),
                utc(key.created_at),
                utc(key.revoked_at),
                key_hash,
            ),
        )

    def api_keys(self, project: str | None = None) -> list[ApiKey]:
        """API key records (never secrets), of one project or all, oldest first."""
        scope, params = ("WHERE project = %s", [project]) if project is not None else ("", [])
        rows = self.db.all(
            f"SELECT id, project, name, scopes, created_at, revoked_at FROM api_keys {scope} "
            "ORDER BY created_at, id",
            params,
        )
        return [ApiKey(**r) for r in rows]

    def find_api_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key record with this id and its stored digest (None when unknown)."""
        row = self.db.one(
            "SELECT id, project, name, scopes, created_at, revoked_at, key_hash FROM api_keys "
            "WHERE id = %s",
            (key_id,),
        )
        if row is None:
            return None
        digest = row.pop("key_hash")
        return ApiKey(**row), str(digest)

    def revoke_api_key(self, key_id: str) -> bool:
        """Revoke a key; False when no active key has this id."""
        return (
            self.db.execute(
                "UPDATE api_keys SET revoked_at = now() WHERE id = %s AND revoked_at IS NULL",
                (key_id,),
            )
            > 0
        )
