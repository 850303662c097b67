"""``kgsearch serve --read-url``: a real server process whose listings and searches are
answered by the streaming standby, and whose writes go to the primary (and are read
back from there until the standby has replayed them)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from pg_standby import StandbyPair, wait_replayed

from kgsearch.config import Settings
from kgsearch.embed import create_embedder
from kgsearch.engine import Engine
from kgsearch.model import ObjectIn
from kgsearch.store import connect
from kgsearch.store.replicated import ReplicatedStore

SRC = Path(__file__).parents[3] / "src"


def people(*names: str) -> list[ObjectIn]:
    return [ObjectIn(type="Person", key=n, properties={"name": n}) for n in names]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keys(base: str) -> list[str]:
    response = httpx.get(f"{base}/api/graph/objects", params={"limit": 50}, timeout=10)
    assert response.status_code == 200, response.text
    return sorted(o["key"] for o in response.json()["items"])


@pytest.mark.slow
def test_serve_reads_from_the_standby_and_writes_to_the_primary(
    pair: StandbyPair, schema_urls: Callable[[], tuple[str, str]], tmp_path: Path
) -> None:
    primary, standby = schema_urls()
    with Engine(connect(primary), embedder=create_embedder("fake:16")) as engine:
        engine.add_objects(people("ada"))
        engine.embed_pending()
    wait_replayed(pair.primary_url, pair.standby_url)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(SRC),
        "KGSEARCH_EMBED__MODEL": "fake:16",
        "KGSEARCH_RUNTIME_DIR": str(tmp_path / "run"),
    }
    command = [sys.executable, "-m", "kgsearch", "--db", primary, "serve", "--no-auth"]
    flags = ["--port", str(port), "--no-worker", "--no-warm", "--read-url", standby]
    log = tmp_path / "serve.log"
    with pair.replay_paused(), log.open("wb") as sink:
        with Engine(connect(primary), embedder=create_embedder("fake:16")) as engine:
            engine.add_objects(people("grace"))  # on the primary, not yet on the standby
        proc = subprocess.Popen([*command, *flags], env=env, stdout=sink, stderr=sink)
        try:
            deadline = time.monotonic() + 60
            while True:
                assert proc.poll() is None, log.read_text(encoding="utf-8")
                try:
                    httpx.get(f"{base}/health", timeout=2)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, log.read_text(encoding="utf-8")
                    time.sleep(0.1)
            assert _keys(base) == ["ada"]  # the standby answered
            made = httpx.post(
                f"{base}/api/graph/objects",
                json={"type": "Person", "key": "alan", "properties": {"name": "alan"}},
                timeout=10,
            )
            assert made.status_code == 201, made.text
            # read-your-writes: the standby has not replayed it, so the primary answers
            assert _keys(base) == ["ada", "alan", "grace"]
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)


def test_settings_read_url_makes_a_replicated_store(
    schema_urls: Callable[[], tuple[str, str]],
) -> None:
    primary, standby = schema_urls()
    settings = Settings(store={"url": primary, "read_url": standby})
    assert settings.masked()["store"]["read_url"] == standby
    with Engine.from_settings(settings) as engine:
        assert isinstance(engine.store, ReplicatedStore)
        assert engine.list_rows("object").items == []
        assert engine.store.served["replica"] == 1
