"""Embedding and extraction workers in separate processes against one store (issue 33,
item 5), for tests/store/postgres/test_worker_processes.py (one PostgreSQL server) and
tests/store/citus/test_citus_worker_processes.py (a Citus coordinator).

Three worker processes share one queue; one is killed with SIGKILL while it holds a
claimed batch (inside its embedder call). The survivors take that batch over once its
lease ends, and at the end every row is embedded, each exactly once: the store's own
count of completed texts (``embed_stats``, written in the transaction of each
completion) equals the rows, every completion the workers logged names a distinct
row, the killed worker's batch was completed by a survivor, and no row is left
claimed or pending. The same with three extraction processes on the task queue: every
chunk extracted exactly once, and the graph the same as one uninterrupted run makes.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import psycopg

from kgsearch.config import ExtractSettings
from kgsearch.engine import Engine
from kgsearch.model import ChunkIn, ObjectIn
from kgsearch.testing import FakeEmbedder, FakeExtractor

SRC = Path(__file__).parents[1] / "src"
ROWS = 600
LEASE = 2.0

# A worker process: the library's worker loop over its own connection pool, with the
# fake embedder (a little slow per batch, so the workers overlap). It logs each
# completed batch's texts once the completion has committed. The victim, on its
# third batch, writes the batch's texts to a marker file and sleeps inside the
# embedder call, holding the claim, until it is killed.
WORKER = textwrap.dedent(
    """
    import json, sys, time
    from kgsearch.lifecycle.embedding import EmbeddingContext, run_embedding_worker
    from kgsearch.lifecycle.runner import RetryPolicy
    from kgsearch.store import connect
    from kgsearch.testing import FakeEmbedder

    url, log_path, role = sys.argv[1], sys.argv[2], sys.argv[3]
    rows, lease = int(sys.argv[4]), float(sys.argv[5])
    log = open(log_path, "a")

    class Logged:
        def __init__(self, store):
            self._store = store

        def __getattr__(self, name):
            return getattr(self._store, name)

        def complete(self, kind, results, **options):
            written = self._store.complete(kind, results, **options)
            log.write(json.dumps([r.text for r in results]) + "\\n")
            log.flush()
            return written

    class Slow(FakeEmbedder):
        batches = 0

        def embed_documents(self, texts):
            Slow.batches += 1
            if role == "victim" and Slow.batches == 3:
                with open(log_path + ".held", "w") as held:
                    json.dump(list(texts), held)
                time.sleep(600)
            time.sleep(0.03)
            return super().embed_documents(texts)

    store = connect(url)

    def done():
        counts = store.embedding_counts(None)
        return sum(c.by_status.get("embedded", 0) for c in counts) == rows

    context = EmbeddingContext(Logged(store), Slow(32), RetryPolicy(lease_seconds=lease))
    run_embedding_worker(context, batch_size=20, poll_seconds=0.2, should_stop=done)
    """
)


def _spawn(url: str, log: Path, role: str, script: str = WORKER) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen(
        [sys.executable, "-c", script, url, str(log), role, str(ROWS), str(LEASE)], env=env
    )


def _logged(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [t for line in path.read_text().splitlines() for t in json.loads(line)]


# An extraction worker process: ``engine.extract`` with the scripted fake extractor (a
# little slow per batch), logging each completed batch's chunk ids once committed. The
# victim, on its third batch, writes the batch's chunk ids to a marker and sleeps inside
# the extractor call, holding the claim, until it is killed.
EXTRACTOR = textwrap.dedent(
    """
    import json, sys, time
    from kgsearch.config import ExtractSettings
    from kgsearch.engine import Engine
    from kgsearch.store import connect
    from kgsearch.testing import FakeEmbedder, FakeExtractor

    url, log_path, role, lease = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[5])
    log = open(log_path, "a")

    class Logged:
        def __init__(self, store):
            self._store = store

        def __getattr__(self, name):
            return getattr(self._store, name)

        def complete_tasks(self, job, tasks, **options):
            done = self._store.complete_tasks(job, tasks, **options)
            log.write(json.dumps([t.row_id for t in tasks]) + "\\n")
            log.flush()
            return done

    class Slow(FakeExtractor):
        calls = 0

        def extract(self, chunks):
            Slow.calls += 1
            if role == "victim" and Slow.calls == 3:
                with open(log_path + ".held", "w") as held:
                    json.dump([c.id for c in chunks], held)
                time.sleep(600)
            time.sleep(0.03)
            return super().extract(chunks)

    engine = Engine(
        Logged(connect(url)),
        embedder=FakeEmbedder(16),
        extractors=lambda name, domain: Slow(),
        extract_settings=ExtractSettings(lease_seconds=lease),
    )
    engine.extract(batch_size=2)
    """
)
NAMES = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "John"]
TEXTS = [
    f"{NAMES[i % 8]} Hopper{i} met {NAMES[(i + 3) % 8]} Turing{i % 7} in Paris." for i in range(60)
]


def _graph(engine: Engine) -> tuple[set[str], set[tuple[str, str, str]]]:
    objects = engine.list_rows("object", limit=1000).items
    keys = {o.id: o.key for o in objects}
    return {o.key for o in objects}, {
        (r.type, keys[r.source_id], keys[r.target_id])
        for r in engine.list_rows("relationship", limit=1000).items
    }


def check_embedding_workers(
    store: Any, admin_url: str, tmp_path: Path, kind: str = "objects"
) -> None:
    """Three embedding worker processes on ``store``'s queue (``ROWS`` rows of ``kind``:
    objects, or chunks), one killed with SIGKILL holding a claimed batch: every row
    embedded exactly once, none left claimed (read through ``admin_url``)."""
    engine = Engine(store, embedder=FakeEmbedder(32))
    if kind == "objects":
        engine.add_objects(
            [
                ObjectIn(type="Item", key=f"k{i:04}", properties={"name": f"Item number {i}"})
                for i in range(ROWS)
            ]
        )
    else:
        engine.add_chunks([ChunkIn(id=f"c{i:04}", text=f"Chunk number {i}") for i in range(ROWS)])
    logs = {role: tmp_path / f"{role}.log" for role in ("victim", "one", "two")}
    held = Path(f"{logs['victim']}.held")
    workers = {role: _spawn(store.url, log, role) for role, log in logs.items()}
    try:
        deadline = time.monotonic() + 120
        while not held.exists():
            assert workers["victim"].poll() is None, "the victim ended before it was killed"
            assert time.monotonic() < deadline, "the victim never reached its third batch"
            time.sleep(0.01)
        time.sleep(0.05)  # the marker is written whole before the sleep
        workers["victim"].send_signal(signal.SIGKILL)
        assert workers["victim"].wait(timeout=30) == -signal.SIGKILL
        for role in ("one", "two"):
            assert workers[role].wait(timeout=120) == 0
    finally:
        for proc in workers.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    taken_over = json.loads(held.read_text())
    assert len(taken_over) == 20
    completed = {role: _logged(log) for role, log in logs.items()}
    everything = collections.Counter(t for texts in completed.values() for t in texts)
    assert len(everything) == ROWS
    assert max(everything.values()) == 1, "a row was completed twice"
    assert not set(taken_over) & set(completed["victim"])
    assert set(taken_over) <= set(completed["one"]) | set(completed["two"])
    assert completed["one"] and completed["two"], "one survivor did all the work"
    assert store.embedding_latency()[0] == ROWS  # completions the store recorded
    status = engine.embedding_status()
    assert (status.embedded, status.pending) == (ROWS, 0)
    schema = store.url.rsplit("schema=", 1)[1]
    with psycopg.connect(admin_url, autocommit=True) as conn:
        row = conn.execute(
            f'SELECT count(*) FROM "{schema}".{kind} '
            "WHERE claimed_until > extract(epoch FROM now())"
        ).fetchone()
    assert row == (0,), "a row is still claimed"


def check_extraction_workers(factory: Any, tmp_path: Path) -> None:
    """Three extraction worker processes on the task queue of a store ``factory()``
    opens, one killed with SIGKILL holding a claimed batch: every chunk extracted
    exactly once, and the graph one uninterrupted run makes (on another store)."""
    settings = ExtractSettings(lease_seconds=LEASE)
    clean = Engine(
        factory(),
        embedder=FakeEmbedder(16),
        extractors=lambda name, domain: FakeExtractor(),
        extract_settings=settings,
    )
    clean.ingest(texts=TEXTS, title="t")
    store = factory()
    engine = Engine(
        store,
        embedder=FakeEmbedder(16),
        extractors=lambda name, domain: FakeExtractor(),
        extract_settings=settings,
    )
    engine.ingest(texts=TEXTS, title="t", extract=False)
    logs = {role: tmp_path / f"x-{role}.log" for role in ("victim", "one", "two")}
    held = Path(f"{logs['victim']}.held")
    workers = {role: _spawn(store.url, log, role, EXTRACTOR) for role, log in logs.items()}
    try:
        deadline = time.monotonic() + 120
        while not held.exists():
            assert workers["victim"].poll() is None, "the victim ended before it was killed"
            assert time.monotonic() < deadline, "the victim never reached its third batch"
            time.sleep(0.01)
        time.sleep(0.05)
        workers["victim"].send_signal(signal.SIGKILL)
        assert workers["victim"].wait(timeout=30) == -signal.SIGKILL
        for role in ("one", "two"):
            assert workers[role].wait(timeout=120) == 0
    finally:
        for proc in workers.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    taken_over = json.loads(held.read_text())
    completed = {role: _logged(log) for role, log in logs.items()}
    everything = collections.Counter(c for ids in completed.values() for c in ids)
    assert len(everything) == len(TEXTS)
    assert max(everything.values()) == 1, "a chunk was extracted twice"
    assert set(taken_over) <= set(completed["one"]) | set(completed["two"])
    status = engine.extraction_status().counts
    assert (status["done"], status["running"], status["pending"]) == (len(TEXTS), 0, 0)
    assert _graph(engine) == _graph(clean)
