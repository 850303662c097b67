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
"""

from __future__ import annotations

import json
import subprocess
import sys
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
    return bool(status["embedded"] == status["total"])


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
