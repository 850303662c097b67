"""SQL of the API-key table (migration ``m002_create_api_keys``) for the SQLite store."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime

from kgsearch.keys import ApiKey
from kgsearch.store.sqlite.connection import Connection
from kgsearch.store.sqlite.sql import dumps, iso, now_iso, parse_dt

__all__ = ["api_keys", "create_api_key", "find_api_key", "revoke_api_key"]

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


def create_api_key(db: Connection, key: ApiKey, key_hash: str) -> None:
    """Insert a key record with the digest of its secret."""
    db.execute(
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


def api_keys(db: Connection, project: str | None) -> list[ApiKey]:
    """Key records, oldest first, of one project or all."""
    if project is None:
        rows = db.all(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, id")
    else:
        rows = db.all(
            f"SELECT {_COLUMNS} FROM api_keys WHERE project = ? ORDER BY created_at, id",
            (project,),
        )
    return [_to_key(r) for r in rows]


def find_api_key(db: Connection, key_id: str) -> tuple[ApiKey, str] | None:
    """A key record and its stored digest, revoked or not."""
    row = db.one(f"SELECT {_COLUMNS}, key_hash FROM api_keys WHERE id = ?", (key_id,))
    return None if row is None else (_to_key(row), str(row["key_hash"]))


def revoke_api_key(db: Connection, key_id: str, when: datetime | None = None) -> bool:
    """Mark a key revoked; False when no active key has this id."""
    cur = db.execute(
        "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
        (iso(when) if when else now_iso(), key_id),
    )
    return cur.rowcount > 0
