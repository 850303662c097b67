"""Fixtures of the browser tests: Debian's Chromium driven by Playwright against a
real uvicorn server over a real SQLite store (see tests/ui_browser.py for the data).

Embeddings come from the deterministic fake embedder (the UI is under test, not the
model); extraction in the upload test is the real spaCy extractor. Screenshots go to
``tests/ui/artifacts/``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from live_server import LiveServer
from playwright.sync_api import Browser, sync_playwright
from ui_browser import CHROMIUM, CHROMIUM_ARGS, Site, Watched, open_page, seed

from kgsearch import Engine, connect
from kgsearch.api.app import create_app
from kgsearch.testing import FakeEmbedder


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """A keyed server (background embedding on) over a seeded SQLite file."""
    path = tmp_path_factory.mktemp("ui") / "ui.db"
    engine = Engine(connect(str(path)), embedder=FakeEmbedder(32))
    ids = seed(engine)
    keys = {
        "alpha": engine.create_api_key("alpha", ["read", "write", "debug"])[0],
        "beta": engine.create_api_key("beta", ["read"])[0],
    }
    server = LiveServer(create_app(engine, worker=True, worker_interval=0.2))
    url = server.start()
    yield Site(url, engine, keys, ids)
    server.stop()
    engine.close()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless, software WebGL (SwiftShader)."""
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def tab(browser: Browser) -> Iterator[Watched]:
    """A fresh page; closed after the test."""
    watched = open_page(browser)
    yield watched
    watched.page.context.close()
