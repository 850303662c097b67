"""An LLM extraction run (the real CLI in a child process, a real local chat server,
real SQLite) killed with SIGKILL, or stopped with SIGINT (Ctrl-C) or SIGTERM: claims
are given back on a signal, a re-run after `kill -9` says which chunks it left and
exits 1, `extract retry --claimed` takes them back, and the next run completes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer, chat_reply, start_chat_server

from kgsearch import Engine
from kgsearch.config import ExtractSettings, LLMSettings
from kgsearch.store import connect
from kgsearch.testing import FakeEmbedder

SRC = Path(__file__).parents[3] / "src"
NAMES = [f"Person{i} Surname{i}" for i in range(25)]
TEXTS = [f"{NAMES[i]} worked with {NAMES[i + 1]} in the same laboratory." for i in range(24)]


HELD_AFTER = 8  # replies past this many wait for the test (GATE): a run cannot end early
GATE = threading.Event()


def answer(number: int, body: dict[str, Any]) -> tuple[Any, ...]:
    time.sleep(0.05)
    if number > HELD_AFTER:
        GATE.wait(60)  # the run is stopped half-way, whatever the machine's load
    prompt = body["messages"][-1]["content"]
    for i, text in enumerate(TEXTS):
        if text in prompt:
            a, b = NAMES[i], NAMES[i + 1]
            reply = {
                "entities": [{"name": a, "type": "person"}, {"name": b, "type": "person"}],
                "relationships": [{"source": a, "target": b, "relation": "worked with"}],
            }
            return 200, chat_reply(json.dumps(reply))
    return 200, chat_reply("{}")


@pytest.fixture
def server() -> Iterator[ChatServer]:
    stopping = threading.Event()
    GATE.clear()
    chat, httpd = start_chat_server(answer, stopping)
    yield chat
    GATE.set()
    stopping.set()
    httpd.shutdown()
    httpd.server_close()


def queued(server: ChatServer, path: Path) -> Engine:
    engine = Engine(
        connect(f"sqlite:///{path}"),
        embedder=FakeEmbedder(16),
        extract_settings=ExtractSettings(extractor="llm"),
        llm_settings=LLMSettings(model="openai:gpt-4o", base_url=server.url, api_key="k"),
    )
    engine.ingest(texts=TEXTS, title="people", extract=False)
    assert engine.extraction_status().counts["pending"] == 24
    return engine


def cli(server: ChatServer, db: Path, *args: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
        "KGSEARCH_LLM__BASE_URL": server.url,
        "KGSEARCH_LLM__API_KEY": "k",
        "KGSEARCH_LLM__MODEL": "openai:gpt-4o",
        "KGSEARCH_LLM__MAX_CONCURRENCY": "2",
        "KGSEARCH_EMBED__MODEL": "fake:16",
        "KGSEARCH_EXTRACT__BATCH_SIZE": "4",
    }
    return subprocess.Popen(
        [sys.executable, "-c", "from kgsearch.cli import main; main()", "--db", str(db), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finished(process: subprocess.Popen[str]) -> tuple[int, str]:
    output, _ = process.communicate(timeout=120)
    return process.returncode, output


def counts(db: Path) -> dict[str, int]:
    store = connect(f"sqlite:///{db}")
    try:
        return store.task_counts("extract", project=None)
    finally:
        store.close()


def stop_half_way(db: Path, process: subprocess.Popen[str], sig: int) -> None:
    deadline = time.monotonic() + 60
    while (now := counts(db))["done"] < 4 or now["running"] == 0:  # a batch in flight
        assert process.poll() is None, process.communicate()[0]
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.02)
    process.send_signal(sig)
    GATE.set()  # the replies held since then come, to a run that was told to stop


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stopped_run_gives_its_claims_back_and_a_rerun_completes(
    server: ChatServer, tmp_path: Path, sig: int
) -> None:
    db = tmp_path / "kg.db"
    queued(server, db)
    run = cli(server, db, "extract", "run")
    stop_half_way(db, run, sig)
    code, output = finished(run)
    assert code == 130, output
    assert "interrupted" in output
    left = counts(db)
    assert left["running"] == 0 and 4 <= left["done"] < 24
    code, output = finished(cli(server, db, "--json", "extract", "run"))
    assert code == 0, output
    assert counts(db)["done"] == 24


def test_a_rerun_after_kill_9_says_what_it_left_and_retry_takes_the_claims_back(
    server: ChatServer, tmp_path: Path
) -> None:
    db = tmp_path / "kg.db"
    queued(server, db)
    run = cli(server, db, "extract", "run")
    stop_half_way(db, run, signal.SIGKILL)
    run.communicate(timeout=60)
    held = counts(db)["running"]
    assert held > 0
    code, output = finished(cli(server, db, "--json", "extract", "run"))
    assert code == 1, output
    report = json.loads(output)
    assert report["left"] == held
    assert any(
        e.startswith(f"left_undone: {held} chunks not extracted: {held} claimed by another run")
        for e in report["errors"]
    )
    code, output = finished(cli(server, db, "--json", "extract", "retry", "--claimed"))
    assert code == 0 and json.loads(output) == {"requeued": held}
    code, output = finished(cli(server, db, "--json", "extract", "run"))
    assert code == 0, output
    assert counts(db) == {"pending": 0, "running": 0, "done": 24, "failed": 0, "dead": 0}
