"""``kgsearch serve`` loads the embedding model and the search state at start, in the
background: ``/health`` answers at once and says ``warm: ready`` once they are loaded,
before any search. Real bundled model, real server process."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_store import cli_built_store

from kgsearch import Engine, connect
from kgsearch.embed.batching import QueryBatcher
from kgsearch.embed.bundled import BundledEmbedder
from kgsearch.embed.fake import FakeEmbedder
from kgsearch.errors import KgsearchError
from kgsearch.store.sqlite import SQLiteStore

SEARCH = "POST /api/search/unified"
KGSEARCH = [sys.executable, "-m", "kgsearch"]
GRAPH = [
    {"kind": "object", "type": "Person", "key": "ada", "properties": {"name": "Ada Lovelace"}},
    {"kind": "object", "type": "Org", "key": "acme", "properties": {"name": "Acme Corp"}},
    {
        "kind": "relationship",
        "type": "WORKS_FOR",
        "source": {"type": "Person", "key": "ada"},
        "target": {"type": "Org", "key": "acme"},
    },
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small store embedded with the bundled model (the default)."""
    root = tmp_path_factory.mktemp("warm")
    return cli_built_store(root, GRAPH, "warm.db")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve_and_watch(
    db: Path, tmp_path: Path, *flags: str, env: dict[str, str] | None = None
) -> tuple[list[str], str, Any]:
    """Start ``kgsearch serve``, read ``warm`` from /health until it settles (or 120 s),
    stop the server; the states seen in order, the server's log and the last /health."""
    port = _free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [*KGSEARCH, "--db", str(db), "serve", "--no-auth", "--port", str(port), *flags],
            env={
                "PATH": "/usr/bin:/bin",
                "KGSEARCH_RUNTIME_DIR": str(tmp_path / "run"),
                "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"],  # the run's built models
                # the kgsearch under test, where the run points at a checkout's src
                **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
                **(env or {}),
            },
            stdout=sink,
            stderr=sink,
        )
    seen: list[str] = []
    health: Any = None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text(encoding="utf-8")
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()
            except httpx.TransportError:
                time.sleep(0.1)
                continue
            state = health["warm"]
            if not seen or seen[-1] != state:
                seen.append(state)
            if state != "loading":
                break
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    return seen, log.read_text(encoding="utf-8"), health


def test_serve_loads_the_model_at_start_without_any_search(store: Path, tmp_path: Path) -> None:
    seen, log, health = _serve_and_watch(store, tmp_path, "--no-worker")

    assert seen[-1] == "ready", log
    assert set(seen) <= {"loading", "ready"}
    assert SEARCH not in log  # loaded by the server itself, no client searched
    assert health["queries"] == "query graph"  # the bundled model's default for queries


def test_serve_says_when_queries_go_through_the_document_model(store: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.write_text("not a directory")  # the query graph cannot be built here
    seen, log, health = _serve_and_watch(
        store, tmp_path, "--no-worker", env={"XDG_CACHE_HOME": str(cache)}
    )

    assert seen[-1] == "ready", log  # searches still work
    assert health["queries"].startswith("document model (query graph unavailable: "), health
    assert log.count("the int8 query graph could not be built or opened") == 1, log


def test_serve_without_warm_says_so(store: Path, tmp_path: Path) -> None:
    seen, log, _ = _serve_and_watch(store, tmp_path, "--no-worker", "--no-warm")

    assert seen == ["off"], log


def test_engine_warm_opens_the_model_and_loads_the_vectors(store: Path) -> None:
    sqlite = connect(str(store))
    assert isinstance(sqlite, SQLiteStore)
    with Engine(sqlite) as engine:
        embedder = engine.embedder
        assert isinstance(embedder, BundledEmbedder)
        assert not embedder.loaded
        reloads = sqlite.vectors_cache.reloads

        engine.warm()

        assert embedder.loaded
        assert sqlite.vectors_cache.reloads > reloads


def test_a_process_that_only_searches_opens_only_the_query_session(store: Path) -> None:
    with Engine(connect(str(store))) as engine:
        engine.batch_queries()  # as a server does
        engine.warm()
        found = engine.search("who works for Acme Corp", limit=3, include_debug=True)
        engine.search("Ada Lovelace", limit=3)

        assert found.debug is not None  # the anchored leg embedded relation texts too
        assert "relationships:anchored" in found.debug["fusion_details"]["legs"]

        batcher = engine.embedder
        assert isinstance(batcher, QueryBatcher)
        embedder = batcher.inner
        assert isinstance(embedder, BundledEmbedder)
        assert embedder.sessions == ("queries",)  # the model's float32 weights never load
        assert engine.query_embedding == "query graph"


@pytest.fixture(scope="module")
def fake_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store embedded with another model than the configured (bundled) one."""
    root = tmp_path_factory.mktemp("fake")
    data = root / "graph.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in GRAPH) + "\n", encoding="utf-8")
    db = root / "fake.db"
    with Engine(connect(str(db)), embedder=FakeEmbedder(32)) as engine:
        engine.import_files([data])
        engine.embed_pending()
    return db


def test_engine_warm_reports_a_store_of_another_model(fake_store: Path) -> None:
    with Engine(connect(str(fake_store))) as engine, pytest.raises(KgsearchError) as raised:
        engine.warm()

    assert "fake" in str(raised.value)


def test_serve_whose_warm_up_fails_still_serves(fake_store: Path, tmp_path: Path) -> None:
    seen, log, _ = _serve_and_watch(fake_store, tmp_path, "--no-worker")

    assert seen[-1] == "failed", log
    assert "warm-up failed" in log
