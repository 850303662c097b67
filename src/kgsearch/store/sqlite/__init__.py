"""The SQLite store (embedded default)."""

from kgsearch.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
