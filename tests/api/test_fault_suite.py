"""Fault injection: the embedder and the LLM hang, refuse connections, answer 500,
answer vectors of the wrong length, or answer slowly (issue 18, acceptance).

Each scenario serves a real store over a real HTTP server whose embedder and LLM are
the real OpenAI-compatible clients pointed at a real loopback provider
(tests/fault_provider.py) in the faulty mode. Twenty clients in a process of their
own (tests/load_clients.py) write objects and search for a few seconds while a prober
times ``/health``, and an ingest job waits on the LLM. Then the provider comes back.
Asserted, for every fault: ``/health`` answers quickly throughout, every acknowledged
write is stored, every search answers 200 well before the provider's timeout with a
warning in ``metadata.warnings``, and every row ends ``embedded``.

The chat model's own faults (slow, stalled mid-reply) are run with answers waiting on
it: plain searches, writes and ``/health`` under the same load must not notice them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from fault_provider import MODES, FaultyProvider
from live_server import LiveServer

from kgsearch import Engine, ObjectIn, connect
from kgsearch.api.app import create_app
from kgsearch.config import ExtractSettings, LLMSettings
from kgsearch.embed.guard import QueryGuard
from kgsearch.embed.openai import OpenAIEmbedder
from kgsearch.lifecycle.runner import RetryPolicy

LOAD_SECONDS = 3.0
CLIENTS = 20
DEADLINE = 0.5  # search.query_deadline_seconds
PROVIDER_TIMEOUT = 10.0  # what a search would wait without the deadline
# "answered" against "waited out the provider": generous for 2 loaded cores
SEARCH_BOUND = DEADLINE + 4.0
# Measured p95: 28-42 ms at a load average of 5.5 on 2 cores, 49-132 ms at 14
# (docs/reliability.md);
# the bound asserted is looser, and still well below a /health queued behind searches
# (each would hold it for the 0.5 s deadline) or the provider (10 s).
HEALTH_P95 = 0.25
RECOVERY_SECONDS = 60.0
LOADER = Path(__file__).parents[1] / "load_clients.py"


@pytest.fixture
def provider() -> Iterator[FaultyProvider]:
    served = FaultyProvider(dims=8)
    yield served
    served.stop()


def faulty_engine(path: Path, url: str) -> Engine:
    engine = Engine(
        connect(str(path)),
        embedder=OpenAIEmbedder(
            "fault", base_url=url, dims=8, timeout=PROVIDER_TIMEOUT, max_retries=0
        ),
        retry=RetryPolicy(max_attempts=1000, backoff_seconds=0.2, max_wait_seconds=0),
        query_guard=QueryGuard(deadline=DEADLINE, failures=2, cooldown=1.0),
        extract_settings=ExtractSettings(extractor="llm", backoff_seconds=0.2, max_attempts=100),
        llm_settings=LLMSettings(
            model="openai:fault",
            base_url=url,
            timeout=PROVIDER_TIMEOUT,
            max_retries=0,
            cache=False,
            deadline_seconds=2.0,
            breaker_failures=2,
            breaker_cooldown_seconds=1.0,
        ),
    )
    engine.add_objects(
        [
            ObjectIn(type="Person", key=f"p{i}", properties={"name": f"P seed {i}"})
            for i in range(10)
        ]
    )
    assert engine.embed_pending().embedded == 10
    return engine


def load(base: str, prefix: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(LOADER), base, str(LOAD_SECONDS), str(CLIENTS), prefix],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def all_embedded(c: httpx.Client) -> bool:
    status = c.get("/api/embeddings/status").json()
    # an object the ingested text names once, with no fact, waits as skipped by design
    return bool(status["embedded"] + status["skipped"] == status["total"])


@pytest.mark.parametrize("mode", MODES)
def test_a_faulty_provider_never_stalls_the_server(
    provider: FaultyProvider, tmp_path: Path, mode: str
) -> None:
    engine = faulty_engine(tmp_path / "g.db", provider.url)
    live = LiveServer(create_app(engine, keys=False, worker=True, worker_interval=0.1))
    base = live.start()
    try:
        with httpx.Client(base_url=base, timeout=30, trust_env=False) as c:
            provider.set_mode(mode)
            job = c.post("/api/documents", json={"text": "Ada Lovelace wrote programs."})
            seen = load(base, mode)
            provider.set_mode("ok")
            started = time.monotonic()
            while not all_embedded(c) and time.monotonic() - started < RECOVERY_SECONDS:
                time.sleep(0.2)
            recovered = all_embedded(c)
            # the ingest job's LLM calls had a 2 s deadline and a breaker: it ended
            url = f"/api/jobs/{job.json()['id']}"
            while c.get(url).json()["state"] == "running" and time.monotonic() - started < 30:
                time.sleep(0.2)
            ingest = c.get(url).json()
    finally:
        live.stop()

    health = np.asarray(seen["health"])
    searches = seen["searches"]
    print(  # the figures, for a reader running with -s
        f"{mode}: /health n={len(health)} p95={np.percentile(health, 95) * 1000:.0f} ms, "
        f"searches n={len(searches)} max={max(s[0] for s in searches):.2f} s, "
        f"writes acked={len(seen['acked'])}"
    )
    assert seen["errors"] == []
    assert len(seen["acked"]) >= CLIENTS and len(searches) >= CLIENTS
    assert all(engine.get_object_by_key("Person", key) for key in seen["acked"])
    assert {status for _, status, _ in searches} == {200}
    assert max(seconds for seconds, *_ in searches) < SEARCH_BOUND < PROVIDER_TIMEOUT
    assert all(warnings for *_, warnings in searches), mode
    assert (health > 0).all() and float(np.percentile(health, 95)) < HEALTH_P95, (
        f"/health p95 {np.percentile(health, 95) * 1000:.0f} ms"
    )
    assert recovered, engine.embedding_status()
    assert job.status_code == 202 and ingest["state"] == "done", ingest
    engine.close()


# A slow or stalled chat model with answers waiting on it (issue 32, item 1): the same
# twenty clients and /health prober run twice against one server, first with no answer
# in flight, then with ASKS answers (plain and streamed) held by the model. The answers
# wait on the LLM lane, so plain searches, writes and /health must not notice them.

ASKS = 4
# Measured: docs/reliability.md ("Separate lanes"), by scripts/bench_faults.py. The
# bound asserted is far looser than the 1.5x measured there (a shared machine's noise
# over 3 s runs), and still far below what answers on the search threads would do: every
# search would then wait for a model that takes 60 s.
P95_RATIO = 2.0
P95_SLACK = 0.25


def asks_in_flight(base: str, count: int, stop: threading.Event) -> list[threading.Thread]:
    def ask(n: int) -> None:
        body = {"query": "who wrote programs", "stream": n % 2 == 1}
        with httpx.Client(base_url=base, timeout=120, trust_env=False) as c:
            while not stop.is_set():
                c.post("/api/ask", json=body)

    threads = [threading.Thread(target=ask, args=(n,), daemon=True) for n in range(count)]
    for thread in threads:
        thread.start()
    return threads


def p95(values: list[float]) -> float:
    return float(np.percentile(np.asarray(values), 95))


@pytest.mark.parametrize("chat_mode", ["slow", "stall"])
def test_answers_waiting_on_a_slow_model_never_slow_search(
    provider: FaultyProvider, tmp_path: Path, chat_mode: str
) -> None:
    provider.slow_seconds = 60.0
    engine = faulty_engine(tmp_path / "g.db", provider.url)
    live = LiveServer(create_app(engine, keys=False, worker=True, worker_interval=0.1))
    base = live.start()
    stop = threading.Event()
    try:
        with httpx.Client(base_url=base, timeout=30, trust_env=False) as c:
            for query in ("warm", "up"):  # the first searches load the search state
                assert c.post("/api/search/unified", json={"query": query}).status_code == 200
        quiet = load(base, "quiet")
        provider.set_chat_mode(chat_mode)
        askers = asks_in_flight(base, ASKS, stop)
        deadline = time.monotonic() + 30
        while provider.held < ASKS and time.monotonic() < deadline:
            time.sleep(0.05)
        assert provider.held == ASKS  # every answer is waiting on the model
        busy = load(base, chat_mode)
        held_after = provider.held
        stop.set()
        provider.set_chat_mode("ok")  # let the answers end
        for thread in askers:
            thread.join(30)
    finally:
        live.stop()

    before = [s[0] for s in quiet["searches"]]
    during = [s[0] for s in busy["searches"]]
    print(  # the figures, for a reader running with -s
        f"{chat_mode}: search p95 {p95(before) * 1000:.0f} ms with no answer in flight, "
        f"{p95(during) * 1000:.0f} ms with {ASKS}; /health p95 "
        f"{p95(busy['health']) * 1000:.0f} ms; searches {len(before)} vs {len(during)}"
    )
    assert held_after == ASKS  # the answers were in flight for the whole run
    assert busy["errors"] == [] and quiet["errors"] == []
    assert {status for _, status, _ in busy["searches"]} == {200}
    assert all(engine.get_object_by_key("Person", key) for key in busy["acked"])
    assert p95(during) < P95_RATIO * p95(before) + P95_SLACK
    assert max(during) < SEARCH_BOUND
    assert p95(busy["health"]) < HEALTH_P95
    engine.close()
