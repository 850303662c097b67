"""Fixtures of the browser tests: Debian's Chromium driven by Playwright against a
real uvicorn server over a real SQLite store.

The store holds two projects: ``alpha`` (a small graph, a hub with 30 leaves, and
rows whose names, properties, descriptions and chunk text are HTML and ``<script>``)
and ``beta`` (a secret its key alone may see). Embeddings come from the
deterministic fake embedder (the UI is under test, not the model); extraction in the
upload test is the real spaCy extractor. Screenshots go to ``tests/ui/artifacts/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from live_server import LiveServer
from playwright.sync_api import Browser, Page, sync_playwright
from ui_seed import seed

from kgsearch import Engine, connect
from kgsearch.api.app import create_app
from kgsearch.testing import FakeEmbedder

ARTIFACTS = Path(__file__).parent / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class Site:
    """A running server and what was seeded into it."""

    url: str
    engine: Engine
    keys: dict[str, str]
    ids: dict[str, str]


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


@dataclass
class Watched:
    """A page with what it logged: page errors and dialogs (alert/confirm)."""

    page: Page
    errors: list[str]
    dialogs: list[str]

    def shot(self, name: str) -> Path:
        """Save a screenshot under tests/ui/artifacts/ and return its path."""
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=False)
        return path


def open_page(browser: Browser, **context: Any) -> Watched:
    """A fresh browser context (its own session storage) at 1280×800."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 800}, **context)
    page = ctx.new_page()
    watched = Watched(page, [], [])
    page.on("pageerror", lambda e: watched.errors.append(str(e)))
    page.on("console", lambda m: watched.errors.append(m.text) if m.type == "error" else None)

    def dialog(d: Any) -> None:
        watched.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    return watched


@pytest.fixture
def tab(browser: Browser) -> Iterator[Watched]:
    """A fresh page; closed after the test."""
    watched = open_page(browser)
    yield watched
    watched.page.context.close()


def sign_in(tab: Watched, site: Site, project: str = "alpha", hash: str = "") -> Page:
    """Open /ui, enter the project's key and wait for the signed-in shell."""
    page = tab.page
    page.goto(site.url + "/ui/" + hash)
    page.fill("#login-key", site.keys[project])
    page.press("#login-key", "Enter")
    page.wait_for_selector("#who:has-text('project " + project + "')")
    return page
