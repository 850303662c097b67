"""Stores: ``connect(url)`` picks a backend by URL scheme; ``connect(url, read_url=…)``
adds a PostgreSQL read replica (:mod:`kgsearch.store.replicated`).

``Store`` and ``StoreInfo`` are loaded when first asked for (they bring the model
types, and pydantic): a light module of this package (:mod:`kgsearch.store.counts`,
:mod:`kgsearch.store.sqlite.readonly`) is imported without them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgsearch.errors import ConfigError

if TYPE_CHECKING:
    from kgsearch.store.base import Store, StoreInfo

__all__ = ["Store", "StoreInfo", "connect", "register_store"]

_FACTORIES: dict[str, Callable[[str], Store]] = {}


def register_store(scheme: str, factory: Callable[[str], Store]) -> None:
    """Register ``factory(url)`` for URLs starting with ``scheme://``."""
    _FACTORIES[scheme] = factory


def _sqlite(url: str) -> Store:
    from kgsearch.store.sqlite import SQLiteStore

    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else url
    if path.startswith("sqlite://"):
        raise ConfigError(f"invalid SQLite URL {url!r}; use sqlite:///path/to/file.db")
    return SQLiteStore(path or ":memory:")


def _postgres(url: str) -> Store:
    from kgsearch.store.postgres import PostgresStore

    return PostgresStore(url)


register_store("sqlite", _sqlite)
register_store("postgresql", _postgres)
register_store("postgres", _postgres)


def connect(url: str, *, read_url: str | None = None, read_your_writes: bool = True) -> Store:
    """Open a store: ``sqlite:///path.db``, ``:memory:``, a bare file path, or a
    registered scheme such as ``postgresql://``.

    Args:
        url: The store (the primary, when ``read_url`` is given).
        read_url: A PostgreSQL read replica of ``url`` (a streaming standby): searches,
            contexts and listings read there, everything else goes to ``url``; it is
            opened on first use, never migrated, and reads fall back to the primary
            while it is down (see :class:`~kgsearch.store.replicated.ReplicatedStore`).
        read_your_writes: With ``read_url``: after this process writes, read from the
            primary until the replica has replayed the write.

    Raises:
        ConfigError: The scheme is not known, or ``read_url`` is given for a store that
            is not PostgreSQL.
    """
    if read_url:
        return _replicated(url, read_url, read_your_writes)
    if url == ":memory:" or "://" not in url:
        return _sqlite(str(Path(url)) if url != ":memory:" else ":memory:")
    scheme = url.split("://", 1)[0].split("+", 1)[0]
    factory = _FACTORIES.get(scheme)
    if factory is None:
        known = ", ".join(sorted(_FACTORIES))
        raise ConfigError(f"no store for URL scheme {scheme!r} (known: {known})")
    return factory(url)


def _replicated(url: str, read_url: str, read_your_writes: bool) -> Store:
    for name, value in (("store", url), ("read replica", read_url)):
        if value.split("://", 1)[0].split("+", 1)[0] not in ("postgresql", "postgres"):
            raise ConfigError(
                f"a read replica needs PostgreSQL: the {name} URL must start with postgresql://"
            )
    from kgsearch.store.postgres import replicated

    return replicated(url, read_url, read_your_writes=read_your_writes)


def __getattr__(name: str) -> Any:
    if name in ("Store", "StoreInfo"):
        return getattr(importlib.import_module("kgsearch.store.base"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
