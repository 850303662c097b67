"""API keys in SQLite (table of migration ``m002_create_api_keys``); see ``kgsearch.keys``.

:class:`SQLiteKeys` is the ``KeyStore`` slice of
:class:`~kgsearch.store.sqlite.store.SQLiteStore`: one row per key with its project,
scopes and the digest of its secret, never the secret itself.
"""

from __future__ import annotations

import json
import sqlite3

from kgsearch.keys import ApiKey
from kgsearch.store.sqlite.connection import Connection
from kgsearch.store.sqlite.sql import dumps, iso, now_iso, parse_dt

__all__ = ["SQLiteKeys"]

_COLUMNS = "id, project, name, scopes, created_at, revoked_at"


def _to_key(row: sqlite3.Row) -> ApiKey:
    created = parse_dt(row["created_at"])
    assert created is not None
    return ApiKey(
        id=row["id"],
        project=row["project"],
        name=row["name"],
        scopes=json.loads(row["scopes"]),
        created_at=created,
        revoked_at=parse_dt(row["revoked_at"]),
    )


class SQLiteKeys:
    """The ``KeyStore`` capability over SQLite."""

    db: Connection

    def create_api_key(self, key: ApiKey, key_hash: str) -> None:
        """Store a new API key record with the digest of its secret."""
        self.db.execute(
            f"INSERT INTO api_keys ({_COLUMNS}, key_hash) VALUES (?,?,?,?,?,?,?)",
            (
                key.id,
                key.project,
                key.name,
                dumps(list(key.scopes)),
                iso(key.created_at),
                iso(key.revoked_at),
                key_hash,
            ),
        )

    def api_keys(self, project: str | None = None) -> list[ApiKey]:
        """API key records (never secrets), of one project or all, oldest first."""
        if project is None:
            rows = self.db.all(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, id")
        else:
            rows = self.db.all(
                f"SELECT {_COLUMNS} FROM api_keys WHERE project = ? ORDER BY created_at, id",
                (project,),
            )
        return [_to_key(r) for r in rows]

    def find_api_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key record with this id and its stored digest (None when unknown)."""
        row = self.db.one(f"SELECT {_COLUMNS}, key_hash FROM api_keys WHERE id = ?", (key_id,))
        return None if row is None else (_to_key(row), str(row["key_hash"]))

    def revoke_api_key(self, key_id: str) -> bool:
        """Revoke a key; False when no active key has this id."""
        cur = self.db.execute(
            "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
            (now_iso(), key_id),
        )
        return cur.rowcount > 0
