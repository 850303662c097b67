"""REST searches embed their queries together before they take a search thread
(kgsearch.api.query_vectors): fewer model calls, the same vectors and results, and
nothing embedded that the search would not embed itself."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pytest
from live_server import LiveServer, client

from kgsearch import Engine, connect
from kgsearch.api.app import create_app
from kgsearch.api.query_vectors import QueryPrefetch, embeds_query_as_is, with_embed_time
from kgsearch.embed.base import Vector
from kgsearch.embed.fake import FakeEmbedder
from kgsearch.model import ObjectIn
from kgsearch.search import legs
from kgsearch.search.request import SearchRequest

NAMES = ["Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov"]


class Recording(FakeEmbedder):
    """The fake model, a little slow per call, recording each call's texts."""

    def __init__(self, seconds: float = 0.0, fail: bool = False) -> None:
        super().__init__(32)
        self.seconds = seconds
        self.fail_calls = fail
        self.documents: list[list[str]] = []
        self.queries: list[str] = []
        self._calls = threading.Lock()

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        with self._calls:
            self.documents.append(list(texts))
        time.sleep(self.seconds)
        if self.fail_calls:
            raise RuntimeError("model down")
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> Vector:
        self.queries.append(text)
        return super().embed_documents([text])[0]


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    embedder = Recording()
    made = Engine(connect(str(tmp_path / "prefetch.db")), embedder=embedder)
    made.add_objects([ObjectIn(type="Person", key=name) for name in NAMES])
    made.embed_pending()
    embedder.documents.clear()
    yield made
    made.close()


def _search_together(prefetch: QueryPrefetch, requests: list[SearchRequest]) -> None:
    """Every request waits (as on the search lane), then the first gets its thread."""
    with ExitStack() as stack:
        for request in requests:
            stack.enter_context(prefetch.waiting(request))
        prefetch.ensure(requests[0])


def test_a_search_embeds_the_waiting_queries_with_its_own(engine: Engine) -> None:
    embedder = engine.embedder
    assert isinstance(embedder, Recording)
    prefetch = QueryPrefetch(engine)
    queries = [f"who is {name}" for name in NAMES]
    _search_together(prefetch, [SearchRequest(query=q) for q in reversed(queries)])
    assert embedder.documents == [list(reversed(queries))]  # its own first, one call
    assert (prefetch.calls, prefetch.queries) == (1, 5)
    for query in queries:
        cached = engine.query_cache.get(embedder.model_id, query)
        assert cached is not None
        assert np.array_equal(cached, FakeEmbedder(32).embed_query(query))
    embedder.documents.clear()
    for query in queries:  # the searches that waited find theirs: no more model calls
        prefetch.ensure(SearchRequest(query=query))
    results = [engine.search(q, limit=3) for q in queries]
    assert embedder.documents == [] and embedder.queries == []
    assert [r.results[0].id for r in results] == [
        engine.search(SearchRequest(query=name, limit=1)).results[0].id for name in NAMES
    ]


def test_waiting_ends_with_the_search_and_batches_are_capped(engine: Engine) -> None:
    embedder = engine.embedder
    assert isinstance(embedder, Recording)
    prefetch = QueryPrefetch(engine, max_batch=2)
    with prefetch.waiting(SearchRequest(query="Ada")), prefetch.waiting(SearchRequest(query="x")):
        pass
    with prefetch.waiting(SearchRequest(query="Ada")):
        with prefetch.waiting(SearchRequest(query="Ada")):  # the same text twice
            pass
        _search_together(prefetch, [SearchRequest(query=q) for q in ("Grace", "Alan", "Ada")])
    # "x" had stopped waiting; "Ada" still waited (once of twice); 2 texts a call at most
    assert embedder.documents == [["Grace", "Ada"]]
    with pytest.raises(ValueError, match="max_batch"):
        QueryPrefetch(engine, max_batch=0)


def test_a_cached_query_is_not_embedded_again(engine: Engine) -> None:
    embedder = engine.embedder
    assert isinstance(embedder, Recording)
    engine.search("who is Ada Lovelace")
    embedder.documents.clear()
    prefetch = QueryPrefetch(engine)
    _search_together(prefetch, [SearchRequest(query="who is Ada Lovelace")])
    assert embedder.documents == [] and prefetch.calls == 0


@pytest.mark.parametrize(
    "fields",
    [
        {"typeHint": "Person"},
        {"keywords": "llm"},
        {"recipe": "multi_hop"},
        {"objects": {"methods": ["bm25"]}, "relationships": None, "chunks": None},
    ],
    ids=["type hint", "keywords", "recipe", "no vector leg"],
)
def test_requests_that_embed_another_text_or_none_are_left_alone(
    engine: Engine, fields: dict[str, object]
) -> None:
    request = SearchRequest.model_validate({"query": "Ada", **fields})
    assert not embeds_query_as_is(request)
    _search_together(QueryPrefetch(engine), [request, SearchRequest(query="Grace")])
    assert engine.embedder.documents == []  # type: ignore[attr-defined]
    assert embeds_query_as_is(SearchRequest(query="Ada"))


def test_nothing_is_embedded_for_a_store_without_vectors(tmp_path: Path) -> None:
    embedder = Recording()
    with Engine(connect(str(tmp_path / "plain.db")), embedder=embedder) as plain:
        plain.add_objects([ObjectIn(type="Person", key="Ada")])
        prefetch = QueryPrefetch(plain)
        _search_together(prefetch, [SearchRequest(query="Ada")])
        assert embedder.documents == [] and prefetch.calls == 0


def test_a_failed_call_leaves_the_search_to_embed_and_report(engine: Engine) -> None:
    embedder = engine.embedder
    assert isinstance(embedder, Recording)
    embedder.fail_calls = True
    prefetch = QueryPrefetch(engine)
    _search_together(prefetch, [SearchRequest(query="Grace")])  # no raise
    assert engine.query_cache.get(embedder.model_id, "Grace") is None
    embedder.fail_calls = False
    assert engine.search("Grace", limit=1).results[0].id is not None


def test_rest_searches_are_prefetched_with_the_same_results(tmp_path: Path) -> None:
    embedder = Recording(seconds=0.03)
    engine = Engine(connect(str(tmp_path / "rest.db")), embedder=embedder)
    engine.add_objects([ObjectIn(type="Person", key=name) for name in NAMES])
    engine.embed_pending()
    expected = {n: [h.id for h in engine.search(n, limit=3).results] for n in NAMES}
    embedder.documents.clear()
    embedder.queries.clear()
    app = create_app(engine, keys=False, threads=1)  # one search at a time: others wait
    server = LiveServer(app)
    base = server.start()
    try:
        with client(base) as http, ThreadPoolExecutor(len(NAMES)) as pool:
            queries = [f"{n} " for n in NAMES]  # other texts than the cached ones

            timings: list[dict[str, float]] = []

            def post(query: str) -> list[str]:
                response = http.post("/api/search/unified", json={"query": query, "limit": 3})
                assert response.status_code == 200, response.text
                timings.append(response.json()["metadata"]["executionTime"])
                return [hit["id"] for hit in response.json()["results"]]

            got = list(pool.map(post, queries))
    finally:
        server.stop()
        engine.close()
    prefetch = app.state.query_prefetch
    assert prefetch.queries == len(NAMES) and prefetch.calls < len(NAMES)
    assert embedder.queries == []  # no search embedded its query itself
    assert got == [expected[n] for n in NAMES]
    # the model call (30 ms) shows in the timings of the search that made it
    assert max(t["embedQueryMs"] for t in timings) >= 25
    assert all(t["totalMs"] >= t["embedQueryMs"] for t in timings)


def test_embedding_time_is_added_to_a_copy_of_the_response(engine: Engine) -> None:
    response = engine.search("Ada", limit=1)
    before = dict(response.metadata["executionTime"])
    timed = with_embed_time(response, 12.5)
    after = timed.metadata["executionTime"]
    assert after["embedQueryMs"] == round(before["embedQueryMs"] + 12.5, 3)
    assert after["totalMs"] == round(before["totalMs"] + 12.5, 3)
    assert response.metadata["executionTime"] == before  # the original is untouched
    assert with_embed_time("context", 3.0) == "context"


def test_a_rest_search_counts_as_under_way_while_its_query_is_embedded(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a search on the other lane then keeps its scans in its own thread (legs.py): the
    # model's threads hold the cores
    seen: list[int] = []
    ensure = QueryPrefetch.ensure

    def recording(self: QueryPrefetch, request: SearchRequest) -> None:
        seen.append(legs.searches_in_flight())
        ensure(self, request)

    monkeypatch.setattr(QueryPrefetch, "ensure", recording)
    server = LiveServer(create_app(engine, keys=False, threads=1))
    base = server.start()
    try:
        with client(base) as http:
            response = http.post("/api/search/unified", json={"query": "Ada", "limit": 1})
            assert response.status_code == 200, response.text
    finally:
        server.stop()
    assert seen == [1]
    assert legs.searches_in_flight() == 0
