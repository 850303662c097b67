"""Helpers of the web UI's browser tests (tests/ui) and scripts/bench_ui.py: Debian's
Chromium driven by Playwright, the seeded data, signing in, screenshots.

The seeded store holds two projects: ``alpha`` (a small graph, a hub with 30 leaves,
and rows whose names, properties, descriptions and chunk text are HTML and
``<script>``) and ``beta`` (a secret only its own key may see).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page

from kgsearch import ChunkIn, Engine, MentionIn, ObjectIn, RelationshipIn, SourceIn

HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">Eve<script>window.__pwned=1</script>'
HOSTILE_TEXT = "<script>window.__pwned=1</script><b>bold?</b> Eve met Ada."
HOSTILE_DESC = "<iframe src=javascript:window.__pwned=1></iframe> a description"
LEAVES = 30
SUB_LEAVES = 5


def seed(engine: Engine) -> dict[str, str]:
    """Write both projects and embed them; return the ids the tests use."""
    objects = [
        ObjectIn(type="Person", key="ada", properties={"name": "Ada Lovelace", "role": "analyst"}),
        ObjectIn(type="Org", key="acme", properties={"name": "Acme Corp"}),
        ObjectIn(
            type="Person",
            key="eve",
            properties={
                "name": HOSTILE_NAME,
                "note": "<script>window.__pwned=1</script>",
                "description": HOSTILE_DESC,
            },
        ),
        ObjectIn(type="Topic", key="hub", properties={"name": "Hub Topic"}),
    ]
    objects += [
        ObjectIn(type="Leaf", key=f"leaf{i}", properties={"name": f"Leaf {i}"})
        for i in range(LEAVES)
    ]
    objects += [
        ObjectIn(type="Twig", key=f"twig{i}", properties={"name": f"Twig {i}"})
        for i in range(SUB_LEAVES)
    ]
    stored = engine.add_objects(objects, project="alpha")
    ids = {o.key: o.id for o in stored}
    rels = [
        RelationshipIn.model_validate(
            {
                "type": "WORKS_FOR",
                "source": {"type": "Person", "key": "ada"},
                "target": {"type": "Org", "key": "acme"},
            }
        ),
        RelationshipIn.model_validate(
            {
                "type": "KNOWS",
                "source": {"type": "Person", "key": "eve"},
                "target": {"type": "Person", "key": "ada"},
                "description": HOSTILE_DESC,
            }
        ),
    ]
    rels += [
        RelationshipIn.model_validate(
            {
                "type": "HAS",
                "source": {"type": "Topic", "key": "hub"},
                "target": {"type": "Leaf", "key": f"leaf{i}"},
            }
        )
        for i in range(LEAVES)
    ]
    rels += [
        RelationshipIn.model_validate(
            {
                "type": "GROWS",
                "source": {"type": "Leaf", "key": "leaf0"},
                "target": {"type": "Twig", "key": f"twig{i}"},
            }
        )
        for i in range(SUB_LEAVES)
    ]
    engine.add_relationships(rels, project="alpha")
    engine.add_sources([SourceIn(id="doc1", title="<b>Notes</b>")], project="alpha")
    engine.add_chunks([ChunkIn(id="c1", text=HOSTILE_TEXT, source_id="doc1")], project="alpha")
    engine.add_mentions([MentionIn(chunk_id="c1", object=ids["eve"])], project="alpha")
    secret = engine.add_objects(
        [ObjectIn(type="Secret", key="vault", properties={"name": "Beta Vault Ada"})],
        project="beta",
    )
    ids["vault"] = secret[0].id
    engine.embed_pending()
    return ids


ARTIFACTS = Path(__file__).parent / "ui" / "artifacts"
DOC_IMAGES = Path(__file__).resolve().parents[1] / "docs" / "img"
DOC_SCREENSHOTS = "UI_DOC_SCREENSHOTS"
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


@dataclass
class Watched:
    """A page with what it logged: page errors and dialogs (alert/confirm)."""

    page: Page
    errors: list[str]
    dialogs: list[str]

    def shot(self, name: str, *, doc: bool = False) -> Path:
        """Save a screenshot under tests/ui/artifacts/ and return its path; a ``doc``
        one is also copied to docs/img/ui-<name>.png when ``UI_DOC_SCREENSHOTS``
        is set (the pictures of docs/ui.md and the README are made that way)."""
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=False)
        if doc and os.environ.get(DOC_SCREENSHOTS):
            shutil.copyfile(path, DOC_IMAGES / f"ui-{name}.png")
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


def sign_in(tab: Watched, site: Site, project: str = "alpha", hash: str = "") -> Page:
    """Open /ui, enter the project's key and wait for the signed-in shell."""
    page = tab.page
    page.goto(site.url + "/ui/" + hash)
    page.fill("#login-key", site.keys[project])
    page.press("#login-key", "Enter")
    page.wait_for_selector("#who:has-text('project " + project + "')")
    return page
