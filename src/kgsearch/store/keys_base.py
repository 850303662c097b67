"""The ``KeyStore`` and ``Cache`` capabilities (re-exported by
:mod:`kgsearch.store.base`, where ``Store`` unites them with the others): kept in a
module of their own so ``base.py`` stays small."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kgsearch.keys import ApiKey, KeyLimits

__all__ = ["Cache", "KeyStore"]


class KeyStore(Protocol):
    """API key records for the REST/MCP servers; only a digest of each secret is kept."""

    def create_api_key(self, key: ApiKey, key_hash: str) -> None:
        """Store a new API key record with the digest of its secret."""
        ...

    def api_keys(self, project: str | None = None) -> list[ApiKey]:
        """API key records (never secrets), of one project or all, oldest first."""
        ...

    def find_api_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key record with this id and its stored digest (None when unknown)."""
        ...

    def revoke_api_key(self, key_id: str) -> bool:
        """Revoke a key; False when no active key has this id."""
        ...

    def set_api_key_limits(self, key_id: str, limits: KeyLimits | None) -> bool:
        """Set (None: clear) a key's own LLM budget; False when no key has this id."""
        ...


class Cache(Protocol):
    """A small key/value cache shared by every project (LLM responses)."""

    def cache_get(self, namespace: str, key: str) -> str | None:
        """The cached value, or None."""

    def cache_put(self, namespace: str, key: str, value: str) -> None:
        """Store a value, replacing any under the same key."""

    def cache_delete(self, namespace: str, keys: Sequence[str]) -> int:
        """Remove these keys' values; return how many were there."""
