"""A hanging or failing LLM never stalls the server or eats a run's time (issue 18,
defect 1 for the LLM provider).

The LLM is the real OpenAI-compatible client pointed at a real loopback chat server
(tests/chat_server.py) that holds every request open, or answers 500. Extraction
previews answer within the LLM deadline on threads of their own while writes and
``/health`` answer; after a few failures the breaker stops extraction runs at once,
leaving the chunks queued (no attempt burned); summaries stop the same way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from chat_server import ChatServer, Hang, Responder, start_chat_server
from live_server import LiveServer, wait_for

from kgsearch import Engine, connect
from kgsearch.api.app import create_app
from kgsearch.config import ExtractSettings, LLMSettings
from kgsearch.testing import FakeEmbedder

DEADLINE = 0.5
PROVIDER_TIMEOUT = 30.0
# Separates "answered" from "waited out the provider's 30 s timeout" on a loaded machine.
SLACK = 8.0
DOC = "Ada Lovelace worked with Charles Babbage on the Analytical Engine in London."


@pytest.fixture
def llm_server() -> Iterator[Callable[[Responder], ChatServer]]:
    stopping = threading.Event()
    running: list[Any] = []

    def start(responder: Responder) -> ChatServer:
        server, httpd = start_chat_server(responder, stopping)
        running.append(httpd)
        return server

    yield start
    stopping.set()
    for httpd in running:
        httpd.shutdown()
        httpd.server_close()


def llm_engine(path: Path, url: str, deadline: float = DEADLINE) -> Engine:
    return Engine(
        connect(str(path)),
        embedder=FakeEmbedder(16),
        extract_settings=ExtractSettings(extractor="llm", backoff_seconds=0, max_attempts=3),
        llm_settings=LLMSettings(
            model="openai:test-model",
            base_url=url,
            timeout=PROVIDER_TIMEOUT,
            max_retries=0,
            cache=False,
            deadline_seconds=deadline,
            breaker_failures=2,
            breaker_cooldown_seconds=60,
        ),
    )


def hang(number: int, body: dict[str, Any]) -> tuple[Any, ...]:
    return (200, Hang(60))


def test_previews_wait_for_a_hung_llm_only_until_the_deadline_and_never_block_writes(
    tmp_path: Path, llm_server: Callable[[Responder], ChatServer]
) -> None:
    server = llm_server(hang)
    engine = llm_engine(tmp_path / "g.db", server.url)
    live = LiveServer(create_app(engine, keys=False, threads=2))
    base = live.start()

    def preview(i: int) -> tuple[int, str, float]:
        with httpx.Client(base_url=base, timeout=60) as c:
            started = time.perf_counter()
            r = c.post("/api/extraction/preview", json={"text": f"{DOC} {i}"})
            return r.status_code, r.json()["error"]["code"], time.perf_counter() - started

    try:
        with ThreadPoolExecutor(6) as pool:
            previews = pool.map(preview, range(6))
            time.sleep(0.1)  # the previews are waiting on the LLM now
            with httpx.Client(base_url=base, timeout=10) as c:
                started = time.perf_counter()
                written = c.post("/api/graph/objects", json={"type": "Person", "key": "ada"})
                health = c.get("/health")
                quick = time.perf_counter() - started
            answers = list(previews)
    finally:
        live.stop()
    # writes and /health did not queue behind six previews on a two-thread server
    assert (written.status_code, health.status_code) == (201, 200) and quick < SLACK
    assert {(status, code) for status, code, _ in answers} == {(502, "llm_unavailable")}
    assert max(seconds for *_, seconds in answers) < DEADLINE + SLACK < PROVIDER_TIMEOUT
    engine.close()


def _start(c: httpx.Client, text: str) -> str:
    """Start an ingest job; while the project runs its most jobs at once (409), wait
    for one of them to end and ask again."""
    while True:
        answer = c.post("/api/documents", json={"text": text})
        if answer.status_code != 409:
            assert answer.status_code == 202, answer.text
            return str(answer.json()["id"])
        running = answer.json()["error"]["details"]["running"]

        def one_ended(running: list[str] = running) -> bool:
            return any(c.get(f"/api/jobs/{j}").json()["state"] != "running" for j in running)

        wait_for(one_ended)


def test_after_a_few_failures_an_extraction_run_stops_at_once_and_burns_no_attempt(
    tmp_path: Path, llm_server: Callable[[Responder], ChatServer]
) -> None:
    server = llm_server(lambda n, body: (500, {"error": "overloaded"}))
    engine = llm_engine(tmp_path / "g.db", server.url)
    live = LiveServer(create_app(engine, keys=False))
    base = live.start()
    docs = [f"{DOC} Note {i}." for i in range(6)]
    try:
        with httpx.Client(base_url=base, timeout=10) as c:
            started = time.perf_counter()
            jobs = [_start(c, t) for t in docs]
            for job in jobs:

                def ended(job: str = job) -> bool:
                    return bool(c.get(f"/api/jobs/{job}").json()["state"] != "running")

                wait_for(ended)
            seconds = time.perf_counter() - started
            results = [c.get(f"/api/jobs/{job}").json()["result"] for job in jobs]
            status = c.get("/api/extraction/status").json()
    finally:
        live.stop()
    assert seconds < SLACK
    # two calls failed (attempts recorded), then the breaker refused the rest at once.
    # Jobs run concurrently (up to four), so each may have a call in flight when the
    # second failure is counted: at most 2 + 4, far fewer than 6 chunks x 3 attempts
    assert 2 <= len(server.requests) <= 6
    # the jobs run side by side: whichever met the open breaker says so (the others may
    # end first, finding the rest of the chunks claimed by a job still running)
    errors = " ".join(e for r in results for e in r["extraction"]["errors"])
    assert "skipped for another" in errors
    # no chunk is dead: those the run did not attempt stay queued (claimable again
    # once their lease ends), the attempted ones failed and wait for their retry
    counts = status["counts"]
    assert (counts["dead"], counts["done"], sum(counts.values())) == (0, 0, 6)
    engine.close()


def test_cancelling_a_job_drops_its_model_call_and_burns_no_attempt(
    tmp_path: Path, llm_server: Callable[[Responder], ChatServer]
) -> None:
    # issue 32: a cancelled job used to wait for its model call to end (up to the
    # deadline, here 60 s); the call is dropped now, and its chunk is left queued
    server = llm_server(hang)
    engine = llm_engine(tmp_path / "g.db", server.url, deadline=60.0)
    live = LiveServer(create_app(engine, keys=False))
    base = live.start()
    try:
        with httpx.Client(base_url=base, timeout=10) as c:
            job = _start(c, DOC)
            wait_for(lambda: len(server.requests) == 1)  # the model holds the call
            started = time.perf_counter()
            assert c.delete(f"/api/jobs/{job}").status_code == 200
            wait_for(lambda: c.get(f"/api/jobs/{job}").json()["state"] != "running")
            seconds = time.perf_counter() - started
            state = c.get(f"/api/jobs/{job}").json()["state"]
            status = c.get("/api/extraction/status").json()
    finally:
        live.stop()
    assert state == "cancelled"
    assert seconds < 3.0  # not the 60 s deadline
    assert (status["counts"]["failed"], status["counts"]["dead"]) == (0, 0)
    engine.close()
