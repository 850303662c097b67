"""Query micro-batching: concurrent searches share model calls for their vectors."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest

from kgsearch import Engine, connect
from kgsearch.embed.base import Vector
from kgsearch.embed.batching import QueryBatcher, query_batch_of
from kgsearch.embed.fake import FakeEmbedder
from kgsearch.embed.openai import OpenAIEmbedder
from kgsearch.errors import ProviderError
from kgsearch.model import ObjectIn


class SlowBatches:
    """The fake model's document embedding, slow per call, recording batch sizes."""

    def __init__(self, seconds: float = 0.05, fail: bool = False) -> None:
        self.model = FakeEmbedder(32)
        self.seconds = seconds
        self.fail = fail
        self.sizes: list[int] = []

    def __call__(self, texts: Sequence[str]) -> list[Vector]:
        self.sizes.append(len(texts))
        time.sleep(self.seconds)
        if self.fail:
            raise ProviderError("model down")
        return self.model.embed_documents(texts)


def _embed_together(batcher: QueryBatcher, texts: list[str]) -> list[Vector | BaseException]:
    out: list[Vector | BaseException] = [RuntimeError("not run")] * len(texts)
    start = threading.Barrier(len(texts))

    def one(i: int) -> None:
        start.wait()
        try:
            out[i] = batcher.embed_query(texts[i])
        except BaseException as exc:
            out[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return out


def test_concurrent_queries_share_model_calls_and_get_their_own_vectors() -> None:
    calls = SlowBatches()
    batcher = QueryBatcher(calls.model, batch=calls, window=0.01)
    texts = [f"who directed film number {i}" for i in range(12)]
    vectors = _embed_together(batcher, texts)
    assert sum(calls.sizes) == 12
    assert len(calls.sizes) < 12, calls.sizes  # at least one call embedded several
    assert max(calls.sizes) > 1
    for text, vector in zip(texts, vectors, strict=True):
        assert isinstance(vector, np.ndarray)
        assert np.allclose(vector, calls.model.embed_query(text))
    assert batcher.calls == len(calls.sizes) and batcher.queries == 12


def test_batches_are_capped() -> None:
    calls = SlowBatches()
    batcher = QueryBatcher(calls.model, batch=calls, window=0.01, max_batch=3)
    _embed_together(batcher, [f"q{i}" for i in range(10)])
    assert sum(calls.sizes) == 10 and max(calls.sizes) <= 3


def test_a_lone_query_does_not_wait_for_the_window() -> None:
    calls = SlowBatches(seconds=0)
    batcher = QueryBatcher(calls.model, batch=calls, window=2.0)
    started = time.perf_counter()
    for i in range(3):
        batcher.embed_query(f"alone {i}")
    assert time.perf_counter() - started < 1.0
    assert calls.sizes == [1, 1, 1]


def test_a_failed_call_reaches_each_of_its_queries_and_the_next_call_runs() -> None:
    calls = SlowBatches(fail=True)
    batcher = QueryBatcher(calls.model, batch=calls, window=0.01)
    results = _embed_together(batcher, [f"q{i}" for i in range(6)])
    assert all(isinstance(r, ProviderError) for r in results)
    calls.fail = False
    assert np.allclose(batcher.embed_query("again"), calls.model.embed_query("again"))


def test_passes_the_embedder_through() -> None:
    inner = FakeEmbedder(16)
    batcher = QueryBatcher(inner)
    assert (batcher.model_id, batcher.dims, batcher.max_tokens) == (
        inner.model_id,
        inner.dims,
        inner.max_tokens,
    )
    assert batcher.count_tokens("a b c") == inner.count_tokens("a b c")
    assert np.allclose(batcher.embed_documents(["x y"])[0], inner.embed_documents(["x y"])[0])
    assert np.allclose(batcher.embed_query("x y"), inner.embed_query("x y"))
    assert not batcher.remote


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="max_batch"):
        QueryBatcher(FakeEmbedder(8), max_batch=0)


def test_remote_embedders_are_not_batched() -> None:
    remote = OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", dims=8)
    assert query_batch_of(remote) is None
    engine = Engine(connect(":memory:"), embedder=remote)
    engine.batch_queries()
    assert engine.embedder is remote
    engine.close()


def test_engine_batches_its_query_embeddings_and_still_searches() -> None:
    engine = Engine(connect(":memory:"), embedder=FakeEmbedder(32))
    engine.add_objects([ObjectIn(type="Person", key="Ada Lovelace")])
    engine.embed_pending()
    before = engine.search("Ada Lovelace", limit=3)
    engine.batch_queries()
    engine.batch_queries()  # twice is once
    assert isinstance(engine.embedder, QueryBatcher)
    assert isinstance(engine.embedder.inner, FakeEmbedder)
    after = engine.search("Ada Lovelace", limit=3)
    assert [h.id for h in after.results] == [h.id for h in before.results]
    engine.close()


class QueriesApart(FakeEmbedder):
    """The fake model with queries of its own (as the bundled model's query graph):
    each query vector negated, so it cannot pass for a document's."""

    def __init__(self) -> None:
        super().__init__(16)
        self.documents: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.documents.extend(texts)
        return super().embed_documents(texts)

    def embed_queries(self, texts: Sequence[str]) -> list[Vector]:
        return [-v for v in super().embed_documents(texts)]


def test_several_queries_at_once_go_through_the_embedders_own_query_call() -> None:
    inner = QueriesApart()
    batcher = QueryBatcher(inner)
    vectors = batcher.embed_queries(["directed by", "starred actors"])
    expected = inner.embed_queries(["directed by", "starred actors"])
    assert [v.tolist() for v in vectors] == [v.tolist() for v in expected]
    assert inner.documents == []  # never as documents (the bundled model's other session)
