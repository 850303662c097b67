"""Shared fixtures: a clean environment, one store per backend, an engine over it.

Every store a test opens goes through :class:`StoreFactory`, which closes them all
when the test ends (sqlite-utils ``close_all_databases``).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgsearch.engine import Engine
from kgsearch.store import connect
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder

# "postgres" joins this list once the backend exists: it runs against a real pgvector
# server (pgserver, or KGSEARCH_TEST_POSTGRES_URL) with a fresh schema per test, and is
# skipped locally with a reason that says how to enable it.
BACKENDS = ["sqlite-memory", "sqlite-file"]


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """No KGSEARCH_* variable of the caller's shell leaks into a test."""
    for name in list(os.environ):
        if name.startswith("KGSEARCH_"):
            monkeypatch.delenv(name)


class StoreFactory:
    """Opens fresh stores of one backend and remembers them to close them.

    Args:
        backend: One of :data:`BACKENDS`.
        directory: Where file-backed stores live.
    """

    def __init__(self, backend: str, directory: Path) -> None:
        self.backend = backend
        self.directory = directory
        self._counter = itertools.count()
        self._opened: list[Store] = []
        self._urls: dict[int, str] = {}

    def __call__(self) -> Store:
        """A new, empty, migrated store."""
        if self.backend == "sqlite-memory":
            url = ":memory:"
        elif self.backend == "sqlite-file":
            url = f"sqlite:///{self.directory / f'store-{next(self._counter)}.db'}"
        else:  # pragma: no cover - guarded by BACKENDS
            raise AssertionError(self.backend)
        store = self._open(url)
        self._urls[id(store)] = url
        return store

    @property
    def persistent(self) -> bool:
        """Whether a store of this backend can be opened again after closing."""
        return self.backend != "sqlite-memory"

    def reopen(self, store: Store) -> Store:
        """A second handle on the same database as ``store`` (skips for memory stores)."""
        if not self.persistent:
            pytest.skip(f"a {self.backend} store cannot be re-opened")
        return self._open(self._urls[id(store)])

    def _open(self, url: str) -> Store:
        store = connect(url)
        self._opened.append(store)
        return store

    def close_all(self) -> None:
        """Close every store this factory opened."""
        for store in reversed(self._opened):
            store.close()
        self._opened.clear()


@pytest.fixture(params=BACKENDS)
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """Opens fresh stores of the parametrized backend; closes them after the test."""
    factory = StoreFactory(request.param, tmp_path)
    yield factory
    factory.close_all()


@pytest.fixture
def store(store_factory: StoreFactory) -> Store:
    """A fresh, empty store of the parametrized backend."""
    return store_factory()


@pytest.fixture
def engine(store: Store) -> Engine:
    """An engine over ``store`` with a deterministic 32-d fake embedder."""
    return Engine(store, embedder=FakeEmbedder(32))
