"""The SQLite store (embedded default).

``SQLiteStore`` is loaded when first asked for: the read-only counting path
(:mod:`kgsearch.store.sqlite.readonly`) is imported without it (and without pydantic
and numpy).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kgsearch.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]


def __getattr__(name: str) -> Any:
    if name == "SQLiteStore":
        return importlib.import_module("kgsearch.store.sqlite.store").SQLiteStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
