"""The embedding lifecycle through Engine.embed_pending: failures, retries, staleness, resume."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from kgsearch.engine import Engine
from kgsearch.errors import DimensionMismatch
from kgsearch.lifecycle.runner import RetryPolicy
from kgsearch.model import ChunkIn, Kind, ObjectIn, ObjectRef, RelationshipIn
from kgsearch.store import connect
from kgsearch.store.base import EmbeddingResult, Store
from kgsearch.testing import FailingEmbedder, FakeEmbedder, FlakyEmbedder
from kgsearch.text import TEXT_VERSION, EnrichmentConfig, TypeRule

POLICY = RetryPolicy(max_attempts=3, backoff_seconds=0)
SRC = Path(__file__).parents[2] / "src"


def people(n: int, **extra: Any) -> list[ObjectIn]:
    return [
        ObjectIn(type="Person", key=f"p{i:03}", properties={"name": f"Person {i}", **extra})
        for i in range(n)
    ]


def statuses(engine: Engine) -> list[tuple[str, int]]:
    return [(o.embedding.status, o.embedding.attempts) for o in engine.list_rows("object").items]


def engine_with(store: Store, embedder: Any, **kwargs: Any) -> Engine:
    return Engine(store, embedder=embedder, retry=POLICY, **kwargs)


# failures and retries --------------------------------------------------------------


def test_always_failing_embedder_ends_every_row_dead(store: Store) -> None:
    embedder = FailingEmbedder(32)
    engine = engine_with(store, embedder)
    engine.add_objects(people(10))

    report = engine.embed_pending()

    assert report.model_dump(exclude={"seconds"}) == {
        "processed": 30,
        "embedded": 0,
        "failed": 30,
        "dead": 10,
        "skipped_changed": 0,
        "batches": 3,
        "errors": ["ProviderError: failing embedder: every call fails"],
    }
    assert embedder.calls == 3
    rows = engine.list_rows("object").items
    assert {(o.embedding.status, o.embedding.attempts, o.embedding.last_error) for o in rows} == {
        ("dead", 3, "ProviderError: failing embedder: every call fails")
    }


def test_a_run_after_all_rows_died_does_nothing(store: Store) -> None:
    embedder = FailingEmbedder(32)
    engine = engine_with(store, embedder)
    engine.add_objects(people(4))
    engine.embed_pending()

    report = engine.embed_pending()

    assert (report.processed, embedder.calls) == (0, 3)
    assert statuses(engine) == [("dead", 3)] * 4


def test_flaky_embedder_ends_with_every_row_embedded(store: Store) -> None:
    embedder = FlakyEmbedder(FakeEmbedder(32), fail_every=2)
    engine = engine_with(store, embedder)
    engine.add_objects(people(50))
    engine.add_objects([ObjectIn(type="City", key="paris")])
    engine.add_relationships(
        [
            RelationshipIn(
                type="VISITED",
                source=ObjectRef(type="Person", key=f"p{i:03}"),
                target=ObjectRef(type="City", key="paris"),
            )
            for i in range(20)
        ]
    )

    report = engine.embed_pending(batch_size=8)

    assert report.embedded == 71
    assert report.failed > 0
    assert {o.embedding.status for o in engine.list_rows("object", limit=100).items} == {"embedded"}
    assert {r.embedding.status for r in engine.list_rows("relationship", limit=100).items} == {
        "embedded"
    }
    assert engine.embedding_status().embedded == 71


class BadVectors(FakeEmbedder):
    """The fake embedder, but NaN for Person 1, Inf for Person 2, too long for Person 3."""

    def embed_documents(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        vectors = super().embed_documents(texts)
        for i, text in enumerate(texts):
            if "Person 1" in text:
                vectors[i] = np.full(self.dims, np.nan, dtype=np.float32)
            elif "Person 2" in text:
                vectors[i] = np.full(self.dims, np.inf, dtype=np.float32)
            elif "Person 3" in text:
                vectors[i] = np.ones(self.dims + 1, dtype=np.float32)
        return vectors


def test_non_finite_or_misshapen_vectors_fail_only_their_rows(store: Store) -> None:
    engine = engine_with(store, BadVectors(32))
    engine.add_objects(people(6))

    report = engine.embed_pending()

    assert (report.embedded, report.dead) == (3, 3)
    assert "embedder returned a non-finite vector" in report.errors
    rows = {o.properties["name"]: o.embedding for o in engine.list_rows("object").items}
    assert {n: e.status for n, e in rows.items()} == {
        "Person 0": "embedded",
        "Person 1": "dead",
        "Person 2": "dead",
        "Person 3": "dead",
        "Person 4": "embedded",
        "Person 5": "embedded",
    }
    assert rows["Person 1"].last_error == "embedder returned a non-finite vector"
    assert rows["Person 2"].last_error == "embedder returned a non-finite vector"
    assert rows["Person 3"].last_error == (
        "embedder returned a vector of shape (33,), expected (32,)"
    )
    assert (
        len(store.vector_search("default", Kind.OBJECT, np.ones(32, dtype=np.float32), limit=10))
        == 3
    )


def test_a_late_failure_never_downgrades_a_row_embedded_meanwhile(store: Store) -> None:
    embedder = FakeEmbedder(32)
    engine = engine_with(store, embedder)
    engine.add_objects(people(1))
    store.set_embedding_model(embedder.model_id, embedder.dims)
    first = store.claim(Kind.OBJECT, project=None, limit=10, now=1000.0, lease_seconds=30.0)
    # the first runner stalls past its lease; a second one claims and embeds the row
    second = store.claim(Kind.OBJECT, project=None, limit=10, now=1031.0, lease_seconds=30.0)
    assert [c.id for c in second] == [c.id for c in first] != []
    results = [
        EmbeddingResult(c.project, c.id, c.text, c.text_hash, v)
        for c, v in zip(second, embedder.embed_documents([c.text for c in second]), strict=True)
    ]
    done = store.complete(
        Kind.OBJECT,
        results,
        model=embedder.model_id,
        dims=embedder.dims,
        text_version=TEXT_VERSION,
        elapsed_ms=1.0,
    )
    assert done == 1

    store.fail(Kind.OBJECT, first, "timed out", now=1040.0, max_attempts=1, backoff_seconds=0)

    [row] = engine.list_rows("object").items
    assert (row.embedding.status, row.embedding.last_error) == ("embedded", None)
    hits = store.vector_search("default", Kind.OBJECT, results[0].vector, limit=5)
    assert [i for i, _ in hits] == [row.id]


def test_writes_succeed_while_the_embedder_fails(store: Store) -> None:
    embedder = FailingEmbedder(32)
    engine = engine_with(store, embedder)

    ada, bob = engine.add_objects(people(2))
    [rel] = engine.add_relationships([RelationshipIn(type="KNOWS", source=ada.id, target=bob.id)])
    [chunk] = engine.add_chunks([ChunkIn(id="c1", text="hello")])

    assert [x.embedding.status for x in (ada, bob, rel, chunk)] == ["pending"] * 4
    assert embedder.calls == 0
    assert store.counts("default") == {
        "objects": 2,
        "relationships": 1,
        "chunks": 1,
        "sources": 0,
        "mentions": 0,
    }


def test_writes_with_embed_on_write_do_not_raise_when_the_embedder_fails(store: Store) -> None:
    engine = engine_with(store, FailingEmbedder(32), embed_on_write=True)

    [ada] = engine.add_objects(people(1))

    assert (ada.embedding.status, ada.embedding.attempts) == ("dead", 3)
    assert store.counts("default")["objects"] == 1


def test_retry_failed_with_dead_requeues_dead_rows(store: Store) -> None:
    engine = engine_with(store, FailingEmbedder(32))
    engine.add_objects(people(5))
    engine.embed_pending()

    assert engine.retry_failed() == 0
    assert engine.retry_failed(dead=True) == 5

    assert statuses(engine) == [("pending", 0)] * 5
    assert [o.embedding.last_error for o in engine.list_rows("object").items] == [None] * 5
    engine_with(store, FakeEmbedder(32)).embed_pending()
    assert statuses(engine) == [("embedded", 0)] * 5


def test_retry_failed_requeues_rows_waiting_on_backoff(store: Store) -> None:
    slow = RetryPolicy(max_attempts=3, backoff_seconds=1000)
    engine = Engine(store, embedder=FailingEmbedder(32), retry=slow)
    engine.add_objects(people(3))
    engine.embed_pending()
    assert statuses(engine) == [("failed", 1)] * 3

    assert engine.retry_failed() == 3

    assert statuses(engine) == [("pending", 0)] * 3


# staleness -------------------------------------------------------------------------


def test_unchanged_text_is_never_embedded_again(store: Store, tmp_path: Path) -> None:
    embedder = FakeEmbedder(32)
    engine = engine_with(store, embedder)
    path = tmp_path / "graph.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {"kind": "object", "type": "Person", "key": o.key, "properties": o.properties}
            )
            + "\n"
            for o in people(20)
        ),
        encoding="utf-8",
    )
    engine.import_files([path])
    engine.embed_pending()
    calls = embedder.calls

    engine.import_files([path])
    engine.add_objects(people(20))
    first = engine.embed_pending()
    second = Engine(store, embedder=embedder).embed_pending()

    assert embedder.calls == calls
    assert (first.processed, second.processed) == (0, 0)


def test_a_data_edit_makes_the_row_stale_then_embedded_again(store: Store) -> None:
    embedder = FakeEmbedder(32)
    engine = engine_with(store, embedder)
    engine.add_objects(people(3))
    engine.embed_pending()

    [edited] = engine.add_objects([ObjectIn(type="Person", key="p001", properties={"name": "Ed"})])

    assert (edited.embedding.status, edited.embedding.embedded_text) == (
        "pending",
        "[Type: #person] Person 1",
    )
    status = engine.embedding_status()
    assert (status.stale, status.pending, status.embedded) == (1, 1, 2)
    embedder.embedded_texts.clear()
    engine.embed_pending()
    assert embedder.embedded_texts == ["[Type: #person] Ed"]
    again = engine.get_object(edited.id).embedding
    assert (again.status, again.embedded_text) == ("embedded", "[Type: #person] Ed")
    assert engine.embedding_status().stale == 0


def test_reverting_an_edit_restores_the_embedding_without_the_embedder(store: Store) -> None:
    embedder = FakeEmbedder(32)
    engine = engine_with(store, embedder)
    engine.add_objects(people(1))
    engine.embed_pending()
    calls = embedder.calls

    engine.add_objects([ObjectIn(type="Person", key="p000", properties={"name": "Ed"})])
    [back] = engine.add_objects(people(1))

    assert back.embedding.status == "embedded"
    engine.embed_pending()
    assert embedder.calls == calls


def test_an_enrichment_config_edit_re_embeds_objects_whose_text_changed(store: Store) -> None:
    engine = engine_with(store, FakeEmbedder(32))
    engine.add_objects(
        [
            ObjectIn(
                type="Person", key="ada", properties={"name": "Ada", "role": "CEO", "city": "X"}
            ),
            ObjectIn(type="Person", key="bob", properties={"name": "Bob", "role": "CTO"}),
            ObjectIn(type="Person", key="cy", properties={"name": "Cy"}),
        ]
    )
    engine.embed_pending()
    embedder = FakeEmbedder(32)
    config = EnrichmentConfig(defaults=TypeRule(include_fields=["city"]))

    report = engine_with(store, embedder, enrichment=config).embed_pending()

    assert embedder.embedded_texts == ["[Type: #person] [City: X] Ada", "[Type: #person] Bob"]
    assert report.embedded == 2
    assert [o.embedding.embedded_text for o in engine.list_rows("object").items] == [
        "[Type: #person] [City: X] Ada",
        "[Type: #person] Bob",
        "[Type: #person] Cy",
    ]


def test_graph_aware_off_makes_object_texts_plain(store: Store) -> None:
    engine = engine_with(store, FakeEmbedder(32))
    ada, bob = engine.add_objects(
        [
            ObjectIn(type="Person", key="ada", properties={"name": "Ada", "role": "CEO"}),
            ObjectIn(type="Person", key="bob", properties={"description": "a builder"}),
        ]
    )
    engine.add_relationships([RelationshipIn(type="KNOWS", source=ada.id, target=bob.id)])
    engine.embed_pending()

    engine.set_graph_aware(False)
    engine.embed_pending()

    assert [
        (o.embedding.text, o.embedding.embedded_text, o.embedding.status)
        for o in engine.list_rows("object").items
    ] == [("Ada", "Ada", "embedded"), ("bob — a builder", "bob — a builder", "embedded")]
    [rel] = engine.list_rows("relationship").items
    assert rel.embedding.embedded_text == "Ada knows bob"
    assert Engine(store, embedder=FakeEmbedder(32)).graph_aware is False


def test_embedding_status_reports_percent_failure_rate_and_stale(store: Store) -> None:
    engine = engine_with(store, FakeEmbedder(32))
    engine.add_objects(people(10))
    engine.embed_pending()
    engine.add_objects(people(2, role="new"))
    engine.add_objects([ObjectIn(type="Person", key=f"n{i}") for i in range(3)])
    failing = Engine(
        store, embedder=FailingEmbedder(32), retry=RetryPolicy(max_attempts=3, backoff_seconds=1e3)
    )
    failing.embed_pending()
    failing.add_objects([ObjectIn(type="Person", key="late")])

    status = engine.embedding_status()

    assert status.mean_latency_ms_per_text is not None
    assert status.model_dump(mode="json", exclude={"mean_latency_ms_per_text"}) == {
        "model": "fake:32",
        "dims": 32,
        "rows": [
            {
                "project": "default",
                "kind": "object",
                "total": 14,
                "pending": 1,
                "embedded": 8,
                "failed": 5,
                "dead": 0,
                "stale": 2,
                "percent_embedded": 57.14,
                "skipped": 0,
            }
        ],
        "total": 14,
        "embedded": 8,
        "pending": 1,
        "failed": 5,
        "dead": 0,
        "stale": 2,
        "percent_embedded": 57.14,
        "failure_rate": 0.3571,
        "skipped": 0,
    }


def test_an_embedder_with_other_dims_raises_dimension_mismatch(store: Store) -> None:
    engine = engine_with(store, FakeEmbedder(32))
    engine.add_objects(people(3))
    engine.embed_pending()
    engine.add_objects([ObjectIn(type="Person", key="new")])
    other = FakeEmbedder(16)

    with pytest.raises(DimensionMismatch):
        engine_with(store, other).embed_pending()

    assert other.calls == 0
    assert (store.info().embedding_model, store.info().dims) == ("fake:32", 32)
    assert [o.embedding.dims for o in engine.list_rows("object").items] == [32, 32, 32, None]


def test_force_re_embeds_every_row(store: Store) -> None:
    embedder = FakeEmbedder(32)
    engine = engine_with(store, embedder)
    engine.add_objects(people(10))
    engine.add_chunks([ChunkIn(id="c1", text="hello")])
    engine.embed_pending()
    embedder.embedded_texts.clear()

    report = engine.embed_pending(force=True)

    assert report.embedded == 11
    assert sorted(embedder.embedded_texts) == sorted(
        [f"[Type: #person] Person {i}" for i in range(10)] + ["hello"]
    )
    assert {o.embedding.status for o in engine.list_rows("object").items} == {"embedded"}


# crash and resume ----------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import sys, time
    from kgsearch.engine import Engine
    from kgsearch.lifecycle.runner import RetryPolicy
    from kgsearch.store import connect
    from kgsearch.testing import FakeEmbedder

    class Slow:
        def __init__(self):
            self.inner = FakeEmbedder(32)
            self.model_id, self.dims, self.max_tokens = "fake:32", 32, 256
        def count_tokens(self, text):
            return self.inner.count_tokens(text)
        def embed_documents(self, texts):
            time.sleep(0.05)
            return self.inner.embed_documents(texts)
        def embed_query(self, text):
            return self.inner.embed_query(text)

    # a short lease, so the resumed run may take over this run's claims soon after a crash
    retry = RetryPolicy(lease_seconds=float(sys.argv[2]))
    engine = Engine(connect(sys.argv[1]), embedder=Slow(), retry=retry)
    engine.embed_pending(batch_size=8)
    """
)


def progress(path: Path) -> tuple[int, int]:
    """(embedded rows, rows under a live lease), read through a separate connection."""
    db = sqlite3.connect(path, timeout=10)
    try:
        row = db.execute(
            "SELECT sum(status = 'embedded'), sum(claimed_until > ?) FROM objects", (time.time(),)
        ).fetchone()
        return int(row[0] or 0), int(row[1] or 0)
    finally:
        db.close()


def test_a_run_killed_with_sigkill_resumes_to_completion(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    url = f"sqlite:///{path}"
    setup = connect(url)
    Engine(setup, embedder=FakeEmbedder(32)).add_objects(people(400))
    setup.close()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    child = subprocess.Popen([sys.executable, "-c", CHILD, url, "2.0"], env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            embedded, leased = progress(path)
            if embedded >= 40 and leased:
                break
            assert child.poll() is None, "the embedding run ended before it was killed"
            assert time.monotonic() < deadline, "the embedding run made no progress"
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert 40 <= progress(path)[0] < 400

    store = connect(url)
    try:
        engine = Engine(store, embedder=FakeEmbedder(32))
        started = time.monotonic()
        engine.embed_pending(batch_size=64)
        elapsed = time.monotonic() - started

        rows = engine.list_rows("object", limit=1000).items
        assert len(rows) == 400
        assert [o.key for o in rows if o.embedding.status != "embedded"] == []
        assert all(o.embedding.embedded_text == o.embedding.text for o in rows)
        assert elapsed < 10
    finally:
        store.close()
