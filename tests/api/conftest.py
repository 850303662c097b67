"""Fixtures of the REST tests: real uvicorn servers and an engine over a fresh file.

``serve(app)`` starts uvicorn in a thread on 127.0.0.1 (port 0, so the OS picks a
free one) and returns the base URL; every server started in a test is stopped at
its end. ``api_engine`` is an engine over a fresh SQLite file with the fake embedder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import LiveServer, client

from kgsearch import Engine, connect
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
