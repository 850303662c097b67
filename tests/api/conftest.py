"""Fixtures of the REST tests: real uvicorn servers and an engine over a fresh file.

``serve(app)`` starts uvicorn in a thread on 127.0.0.1 (port 0, so the OS picks a
free one) and returns the base URL; every server started in a test is stopped at
its end. ``api_engine`` is an engine over a fresh SQLite file with the fake embedder.

Starting a server and warming FastAPI's routes costs about 0.4 s, so ``base_url``
serves each test's fresh ``api_engine`` from one server per test module: the app
looks its engine up in ``app.state`` on every request, and the fixture swaps it.
A module can set ``APP_OPTIONS`` (keyword arguments of ``create_app``) for its server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import LiveServer, client

from kgsearch import Engine, connect
from kgsearch.api.app import create_app
from kgsearch.api.background import BackfillJobs
from kgsearch.api.jobs import JobRegistry
from kgsearch.testing import FakeEmbedder

Serve = Callable[..., str]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Start real servers for a test: ``base_url = serve(app)``."""
    servers: list[LiveServer] = []

    def start(app: Any) -> str:
        server = LiveServer(app)
        servers.append(server)
        return server.start()

    yield start
    for server in reversed(servers):
        server.stop()


@pytest.fixture
def http() -> Iterator[Callable[..., httpx.Client]]:
    """Make httpx clients (``http(base_url, key)``); all are closed after the test."""
    made: list[httpx.Client] = []

    def make(base_url: str, key: str | None = None, **headers: str) -> httpx.Client:
        made.append(client(base_url, key, **headers))
        return made[-1]

    yield make
    for c in made:
        c.close()


@pytest.fixture
def api_engine(tmp_path: Path) -> Iterator[Engine]:
    """An engine over a fresh SQLite file with a deterministic 32-d fake embedder."""
    engine = Engine(connect(str(tmp_path / "api.db")), embedder=FakeEmbedder(32))
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def module_server(request: pytest.FixtureRequest) -> Iterator[tuple[Any, str]]:
    """One keyed server per test module, built with the module's ``APP_OPTIONS``."""
    engine = Engine(connect(":memory:"), embedder=FakeEmbedder(32))
    app = create_app(engine, **getattr(request.module, "APP_OPTIONS", {}))
    live = LiveServer(app)
    base = live.start()
    yield app, base
    live.stop()
    engine.close()


@pytest.fixture
def base_url(module_server: tuple[Any, str], api_engine: Engine) -> Iterator[str]:
    """The module's server, serving this test's ``api_engine``."""
    app, base = module_server
    state = app.state
    previous = state.engine, state.jobs, state.extraction_jobs
    state.engine, state.jobs = api_engine, BackfillJobs(api_engine)
    state.extraction_jobs = JobRegistry()
    yield base
    state.jobs.stop_all()
    state.extraction_jobs.stop_all()
    state.engine, state.jobs, state.extraction_jobs = previous
