"""Concurrent embedding workers: no row embedded twice, nothing stuck after a crash.

Each worker has its own store handle (its own connections), as separate processes
would; the PostgreSQL runs claim with ``FOR UPDATE SKIP LOCKED``.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from click.testing import CliRunner

from kgsearch.cli import cli
from kgsearch.engine import Engine
from kgsearch.errors import StoreError
from kgsearch.lifecycle.embedding import EmbeddingContext, run_embedding_worker
from kgsearch.lifecycle.runner import RetryPolicy
from kgsearch.model import Kind, ObjectIn
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder

SRC = Path(__file__).parents[2] / "src"


class SlowFake(FakeEmbedder):
    """The fake embedder, a little slow per batch so that workers overlap."""

    def embed_documents(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        time.sleep(0.01)
        return super().embed_documents(texts)


def objects(n: int) -> list[ObjectIn]:
    return [
        ObjectIn(type="Item", key=f"k{i:05}", properties={"name": f"Item number {i}"})
        for i in range(n)
    ]


def test_two_concurrent_workers_embed_10000_rows_none_twice(store_factory: Any) -> None:
    if not store_factory.persistent:
        pytest.skip("workers need two handles on one database")
    setup = store_factory()
    engine = Engine(setup, embedder=FakeEmbedder(32))
    engine.add_objects(objects(10_000))
    embedder = SlowFake(32)
    handles = [store_factory.reopen(setup), store_factory.reopen(setup)]
    reports = []
    errors: list[BaseException] = []

    def work(store: Store) -> None:
        try:
            reports.append(
                run_embedding_worker(
                    EmbeddingContext(store, embedder, RetryPolicy()),
                    kinds=[Kind.OBJECT],
                    batch_size=100,
                    until_idle=True,
                )
            )
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(h,)) for h in handles]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors
    assert len(reports) == 2
    counts = collections.Counter(embedder.embedded_texts)
    assert len(counts) == 10_000
    assert max(counts.values()) == 1, "a row was embedded twice"
    assert all(r.embedded > 0 for r in reports), "one worker did all the work"
    assert sum(r.embedded for r in reports) == 10_000
    assert engine.embedding_status().embedded == 10_000


CHILD = textwrap.dedent(
    """
    import sys, time
    from kgsearch.lifecycle.embedding import EmbeddingContext, run_embedding_worker
    from kgsearch.lifecycle.runner import RetryPolicy
    from kgsearch.store import connect
    from kgsearch.testing import FakeEmbedder

    class Slow(FakeEmbedder):
        def embed_documents(self, texts):
            time.sleep(0.05)
            return super().embed_documents(texts)

    store = connect(sys.argv[1])
    context = EmbeddingContext(store, Slow(32), RetryPolicy(lease_seconds=2.0))
    run_embedding_worker(context, batch_size=8, until_idle=True)
    """
)


def test_a_worker_killed_mid_batch_leaves_nothing_stuck(store_factory: Any) -> None:
    if not store_factory.persistent:
        pytest.skip("a killed worker needs a database that outlives it")
    setup = store_factory()
    url = setup.url
    engine = Engine(setup, embedder=FakeEmbedder(32))
    engine.add_objects(objects(400))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    child = subprocess.Popen([sys.executable, "-c", CHILD, url], env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            done = engine.embedding_status().embedded
            if done >= 40:
                break
            assert child.poll() is None, "the worker ended before it was killed"
            assert time.monotonic() < deadline, "the worker made no progress"
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert 40 <= engine.embedding_status().embedded < 400

    resumed = store_factory.reopen(setup)
    started = time.monotonic()
    report = run_embedding_worker(
        EmbeddingContext(resumed, FakeEmbedder(32), RetryPolicy(lease_seconds=2.0)),
        batch_size=64,
        poll_seconds=0.2,
        should_stop=lambda: resumed.embedding_counts(None)[0].by_status.get("embedded", 0) == 400,
    )
    assert report.embedded > 0
    assert time.monotonic() - started < 30
    rows = Engine(resumed, embedder=FakeEmbedder(32)).list_rows("object", limit=1000).items
    assert [o.key for o in rows if o.embedding.status != "embedded"] == []
    assert all(o.embedding.embedded_text == o.embedding.text for o in rows)


def test_cli_worker_until_idle_embeds_everything(
    store_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not store_factory.persistent:
        pytest.skip("the CLI opens the store by URL")
    monkeypatch.setenv("KGSEARCH_EMBED__MODEL", "fake:32")
    setup = store_factory()
    Engine(setup, embedder=FakeEmbedder(32)).add_objects(objects(250))
    result = CliRunner().invoke(
        cli,
        ["--db", setup.url, "--json", "embed", "worker", "--until-idle", "--batch-size", "100"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["embedded"] == 250
    assert report["batches"] == 3
    assert Engine(setup, embedder=FakeEmbedder(32)).embedding_status().pending == 0


class RestartingStore:
    """A store whose first ``failures`` claims raise StoreError (a database restart)."""

    def __init__(self, store: Store, failures: int) -> None:
        self._store = store
        self.failures = failures

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def claim(self, *args: Any, **kwargs: Any) -> Any:
        if self.failures:
            self.failures -= 1
            raise StoreError(f"server closed the connection ({self.failures} left)")
        return self._store.claim(*args, **kwargs)


def test_a_worker_survives_store_errors_and_keeps_its_totals(store: Store) -> None:
    Engine(store, embedder=FakeEmbedder(32)).add_objects(objects(250))
    flaky = RestartingStore(store, failures=1)
    seen: list[int] = []

    def done() -> bool:
        return bool(seen) and seen[-1] == 250

    report = run_embedding_worker(
        EmbeddingContext(flaky, FakeEmbedder(32), RetryPolicy()),
        kinds=[Kind.OBJECT],
        batch_size=100,
        poll_seconds=0.05,
        should_stop=done,
        on_batch=lambda total: seen.append(total.embedded),
    )

    assert report.embedded == 250
    assert report.errors == ["StoreError: server closed the connection (0 left)"]
    assert Engine(store, embedder=FakeEmbedder(32)).embedding_status().embedded == 250


def test_a_worker_keeps_only_the_first_ten_errors(store: Store) -> None:
    Engine(store, embedder=FakeEmbedder(32)).add_objects(objects(10))
    flaky = RestartingStore(store, failures=25)
    report = run_embedding_worker(
        EmbeddingContext(flaky, FakeEmbedder(32), RetryPolicy()),
        kinds=[Kind.OBJECT],
        poll_seconds=0.001,
        should_stop=lambda: store.embedding_counts(None)[0].by_status.get("embedded", 0) == 10,
    )
    assert report.embedded == 10
    assert report.errors == [
        f"StoreError: server closed the connection ({n} left)" for n in range(24, 14, -1)
    ]


def test_a_worker_until_idle_raises_store_errors(store: Store) -> None:
    Engine(store, embedder=FakeEmbedder(32)).add_objects(objects(10))
    with pytest.raises(StoreError, match="server closed"):
        run_embedding_worker(
            EmbeddingContext(RestartingStore(store, failures=1), FakeEmbedder(32), RetryPolicy()),
            until_idle=True,
        )


def test_cli_worker_stops_after_the_batch_on_ctrl_c(
    store_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not store_factory.persistent:
        pytest.skip("the CLI opens the store by URL")
    monkeypatch.setenv("KGSEARCH_EMBED__MODEL", "fake:32")
    setup = store_factory()
    Engine(setup, embedder=FakeEmbedder(32)).add_objects(objects(250))
    embed_documents = FakeEmbedder.embed_documents

    def interrupted(self: FakeEmbedder, texts: list[str]) -> list[npt.NDArray[np.float32]]:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the first batch is embedded
        return embed_documents(self, texts)

    monkeypatch.setattr(FakeEmbedder, "embed_documents", interrupted)
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    result = CliRunner().invoke(
        cli,
        ["--db", setup.url, "--json", "embed", "worker", "--batch-size", "100"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["embedded"], report["batches"], report["errors"]) == (100, 1, [])
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
