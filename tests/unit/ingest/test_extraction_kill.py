"""A worker killed with SIGKILL mid-extraction: its chunks are taken over when the
lease ends, and the graph ends up exactly as an uninterrupted run makes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from kgsearch.config import ExtractSettings
from kgsearch.engine import Engine
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder, FakeExtractor

SRC = Path(__file__).parents[3] / "src"
NAMES = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "John"]
TEXTS = [
    f"{NAMES[i % 8]} Hopper{i} met {NAMES[(i + 3) % 8]} Turing{i % 7} in Paris. "
    f"Later {NAMES[(i + 5) % 8]} Knuth{i % 5} joined them."
    for i in range(60)
]

CHILD = textwrap.dedent(
    """
    import sys, time
    from kgsearch.config import ExtractSettings
    from kgsearch.engine import Engine
    from kgsearch.store import connect
    from kgsearch.testing import FakeEmbedder, FakeExtractor

    class Slow(FakeExtractor):
        def extract(self, chunks):
            time.sleep(0.05)
            return super().extract(chunks)

    engine = Engine(
        connect(sys.argv[1]),
        embedder=FakeEmbedder(16),
        extractors=lambda name, domain: Slow(),
        extract_settings=ExtractSettings(lease_seconds=2.0),
    )
    engine.extract(batch_size=2)
    """
)


def engine_over(store: Store) -> Engine:
    return Engine(
        store,
        embedder=FakeEmbedder(16),
        extractors=lambda name, domain: FakeExtractor(),
        extract_settings=ExtractSettings(lease_seconds=2.0),
    )


def graph_of(engine: Engine) -> tuple[set[str], set[tuple[str, str, str]], int]:
    objects = {o.key for o in engine.list_rows("object", limit=1000).items}
    rels = {
        (r.type, r.source_id, r.target_id)
        for r in engine.list_rows("relationship", limit=1000).items
    }
    mentions = len(
        engine.store.mentions(
            engine.project, object_ids=[o.id for o in engine.list_rows("object", limit=1000).items]
        )
    )
    return objects, rels, mentions


def test_a_worker_killed_mid_extraction_loses_and_duplicates_nothing(
    store_factory: Any,
) -> None:
    if not store_factory.persistent:
        pytest.skip("a killed worker needs a database that outlives it")
    clean = engine_over(store_factory())
    clean.ingest(texts=TEXTS, title="t")
    expected = graph_of(clean)

    setup = store_factory()
    engine = engine_over(setup)
    engine.ingest(texts=TEXTS, title="t", extract=False)
    assert engine.extraction_status().counts["pending"] == 60
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    child = subprocess.Popen([sys.executable, "-c", CHILD, setup.url], env=env)
    try:
        deadline = time.monotonic() + 60
        while engine.extraction_status().counts["done"] < 10:
            assert child.poll() is None, "the worker ended before it was killed"
            assert time.monotonic() < deadline, "the worker made no progress"
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    counts = engine.extraction_status().counts
    assert 10 <= counts["done"] < 60

    resumed = engine_over(store_factory.reopen(setup))
    report = resumed.extract()
    assert report.dead == 0 and report.failed == 0
    final = resumed.extraction_status()
    assert final.counts["done"] == 60 and final.counts["running"] == 0
    assert graph_of(resumed) == expected
