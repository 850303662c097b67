"""API key records, written once for both stores (``KeyStore``; see :mod:`kgsearch.keys`).

One row per key with its project, scopes and the digest of its secret, never the
secret itself (table ``api_keys``).
"""

from __future__ import annotations

import json
from typing import Any

from kgsearch.keys import ApiKey, KeyLimits
from kgsearch.store.dialect import Slice
from kgsearch.store.values import dumps, parse_dt

__all__ = ["KEY_BY_ID", "ApiKeys", "found_key"]

_COLUMNS = "id, project, name, scopes, created_at, revoked_at, llm_limits"
KEY_BY_ID = f"SELECT {_COLUMNS}, key_hash FROM api_keys WHERE id = ?"
"""One key's record and digest (``?`` placeholders)."""


def _to_key(row: Any) -> ApiKey:
    scopes = row["scopes"]
    limits = row["llm_limits"]
    return ApiKey(
        llm_limits=None if limits is None else KeyLimits.model_validate_json(limits),
        id=row["id"],
        project=row["project"],
        name=row["name"],
        scopes=json.loads(scopes) if isinstance(scopes, str) else scopes,
        created_at=parse_dt(row["created_at"]),
        revoked_at=parse_dt(row["revoked_at"]),
    )


def found_key(row: Any) -> tuple[ApiKey, str] | None:
    """The record and secret digest of a :data:`KEY_BY_ID` row (None: no such key)."""
    return None if row is None else (_to_key(row), str(row["key_hash"]))


def _limits(limits: KeyLimits | None) -> str | None:
    return None if limits is None else limits.model_dump_json(exclude_none=True)


class ApiKeys(Slice):
    """``KeyStore`` over a store's connection and dialect."""

    def create_api_key(self, key: ApiKey, key_hash: str) -> None:
        d = self.dialect
        self.db.write(
            d.sql(f"INSERT INTO api_keys ({_COLUMNS}, key_hash) VALUES (?,?,?,?,?,?,?,?)"),
            (
                key.id,
                key.project,
                d.text(key.name),
                dumps(list(key.scopes)),
                d.time(key.created_at),
                d.time(key.revoked_at),
                _limits(key.llm_limits),
                key_hash,
            ),
        )

    def api_keys(self, project: str | None = None) -> list[ApiKey]:
        scope, params = ("WHERE project = ?", [project]) if project is not None else ("", [])
        rows = self.db.all(
            self.dialect.sql(f"SELECT {_COLUMNS} FROM api_keys {scope} ORDER BY created_at, id"),
            params,
        )
        return [_to_key(r) for r in rows]

    def find_api_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        return found_key(self.db.one(self.dialect.sql(KEY_BY_ID), (key_id,)))

    def set_api_key_limits(self, key_id: str, limits: KeyLimits | None) -> bool:
        changed = self.db.write(
            self.dialect.sql("UPDATE api_keys SET llm_limits = ? WHERE id = ?"),
            (_limits(limits), key_id),
        )
        return changed > 0

    def revoke_api_key(self, key_id: str) -> bool:
        changed = self.db.write(
            self.dialect.sql(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"
            ),
            (self.dialect.stamp(), key_id),
        )
        return changed > 0
