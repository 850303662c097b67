"""The relation-path walk's edges held in memory (``search/path_graph.py``): the same
hops and the same walk as the store's reads, re-read after a write, edges outside their
validity left out, and the store's reads inside a write transaction."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from kgsearch.engine import Engine
from kgsearch.model import ObjectIn, RelationshipIn
from kgsearch.search import path_graph, paths
from kgsearch.search.path_graph import (
    Edges,
    StoreEdges,
    TypedGraph,
    build_typed_graph,
    edges_for,
)
from kgsearch.search.plan import Vector
from kgsearch.store import connect
from kgsearch.testing import FakeEmbedder


@pytest.fixture
def engine() -> Iterator[Engine]:
    with Engine(connect(":memory:"), embedder=FakeEmbedder(16)) as engine:
        yield engine


def graph(engine: Engine) -> dict[str, str]:
    """A hub ``h`` with 6 edges in and 5 out, a loop on ``a``, two parallel edges
    ``a`` → ``b`` and edges both ways between ``a`` and ``c``. Returns key → id."""
    keys = ["a", "b", "c", "h", *(f"s{i}" for i in range(6))]
    ids = {o.key: o.id for o in engine.add_objects([ObjectIn(type="T", key=k) for k in keys])}
    ids["b"] = engine.add_objects([ObjectIn(type="U", key="b")])[0].id

    def rel(type_: str, source: str, target: str) -> RelationshipIn:
        return RelationshipIn(type=type_, source=ids[source], target=ids[target])

    engine.add_relationships(
        [
            rel("likes", "a", "b"),
            rel("knows", "a", "b"),
            rel("knows", "a", "a"),
            rel("knows", "a", "c"),
            rel("knows", "c", "a"),
            *(rel("in", f"s{i}", "h") for i in range(6)),
            *(rel("out", "h", f"s{i}") for i in range(5)),
            rel("knows", "h", "a"),
        ]
    )
    return ids


Row = tuple[str, str, tuple[str, bool], str, float]


def hop_rows(edges: Edges, ids: list[str], limit: int) -> list[Row]:
    """A hop over ``ids`` as (from, to, step, relationship, split) rows."""
    nodes = edges.nodes(ids)
    hop = edges.hop(nodes, limit)
    return list(
        zip(
            [ids[k] for k in hop.at.tolist()],
            edges.ids(hop.other),
            [edges.step(int(c)) for c in hop.step],
            edges.edge_ids(hop.edge),
            hop.split.tolist(),
            strict=True,
        )
    )


@pytest.mark.parametrize("limit", [1, 2, 4, 64])
@pytest.mark.parametrize("keys", [["a"], ["h"], ["a", "c"], ["h", "s0", "s5", "a"], ["b"]])
def test_the_held_graph_hops_as_the_store_reads_do(
    engine: Engine, keys: list[str], limit: int
) -> None:
    ids = graph(engine)
    held = build_typed_graph(engine.store, "default")
    asked = [ids[k] for k in keys]
    want = hop_rows(StoreEdges(engine.store, "default"), asked, limit)
    got = hop_rows(held, asked, limit)
    # the same rows; per object out before in, in insertion order on the held graph
    # (the store's: object by object, so an edge another object brought in may come
    # earlier)
    assert sorted(got, key=repr) == sorted(want, key=repr)
    assert [(r[0], r[2][1]) for r in got] == [(r[0], r[2][1]) for r in want]
    # the capped edges of each asked object are all there, a loop walked once
    for id in asked:
        outs = engine.store.typed_edges("default", [id], limit=limit)
        assert {r[0] for r in outs} <= {row[3] for row in want}


def test_a_hub_filling_the_cap_splits_its_mass_twice_as_thin(engine: Engine) -> None:
    ids = graph(engine)
    held = build_typed_graph(engine.store, "default")
    rows = hop_rows(held, [ids["h"]], 4)
    # the cap counts every edge of a direction: the 4 oldest out of "h" are all "out"
    assert [row[4] for row in rows if row[2] == ("in", False)] == [8.0] * 4
    assert [row[4] for row in rows if row[2] == ("out", True)] == [8.0] * 4
    assert ("knows", True) not in {row[2] for row in rows}
    rows = hop_rows(held, [ids["h"]], 7)
    assert [row[4] for row in rows if row[2] == ("in", False)] == [6.0] * 6
    assert [row[4] for row in rows if row[2] == ("knows", True)] == [1.0]


def test_the_walk_is_the_same_on_the_held_graph_and_the_store_reads(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = graph(engine)
    embed = FakeEmbedder(16).embed_query
    question = "who knows the people that c knows"
    held = build_typed_graph(engine.store, "default")
    monkeypatch.setattr(paths, "edges_for", lambda store, project, trace=None: held)
    on_graph = paths.walk_paths(engine.store, "default", question, embed)
    reads = StoreEdges(engine.store, "default")
    monkeypatch.setattr(paths, "edges_for", lambda store, project, trace=None: reads)
    on_reads = paths.walk_paths(engine.store, "default", question, embed)
    assert on_graph.seeds == [ids["c"]]
    assert on_graph.objects and on_graph.objects == on_reads.objects
    assert on_graph.relationships == on_reads.relationships
    assert on_graph.paths == on_reads.paths


def test_a_write_is_seen_once_the_counts_are_checked(engine: Engine) -> None:
    ids = graph(engine)
    first = edges_for(engine.store, "default", background=False)
    assert isinstance(first, TypedGraph)
    assert edges_for(engine.store, "default", background=False) is first  # not checked yet
    new = engine.add_objects([ObjectIn(type="T", key="n")])[0]
    engine.add_relationships([RelationshipIn(type="knows", source=ids["a"], target=new.id)])
    again = edges_for(engine.store, "default", background=False, check_seconds=0)
    assert isinstance(again, TypedGraph) and again is not first
    assert new.id in {row[1] for row in hop_rows(again, [ids["a"]], 64)}
    assert edges_for(engine.store, "default", background=False, check_seconds=0) is again


def test_an_edit_of_this_process_is_walked_at_once_even_with_the_same_counts(
    engine: Engine,
) -> None:
    ids = graph(engine)
    [likes] = [r for r in engine.store.iter_rows("default", "relationship") if r.type == "likes"]
    first = edges_for(engine.store, "default", background=False)
    assert isinstance(first, TypedGraph)
    counts = engine.store.counts("default")
    engine.delete("relationship", [likes.id])  # one edge out, one in: the same counts
    engine.add_relationships([RelationshipIn(type="fears", source=ids["b"], target=ids["c"])])
    assert engine.store.counts("default") == counts

    now = edges_for(engine.store, "default", background=False)  # within check_seconds
    assert {row[2][0] for row in hop_rows(now, [ids["b"]], 64)} >= {"fears"}
    assert "likes" not in {row[2][0] for row in hop_rows(now, [ids["a"]], 64)}


def test_a_graph_read_while_this_process_wrote_is_not_held(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = graph(engine)
    build = path_graph.build_typed_graph

    def read_then_written(store: object, project: str) -> TypedGraph:
        read = build(engine.store, project)  # read before the write below commits
        engine.add_relationships([RelationshipIn(type="fears", source=ids["b"], target=ids["c"])])
        return read

    monkeypatch.setattr(path_graph, "build_typed_graph", read_then_written)
    edges_for(engine.store, "default", background=False)
    monkeypatch.setattr(path_graph, "build_typed_graph", build)

    held = edges_for(engine.store, "default", background=False)  # within check_seconds
    assert "fears" in {row[2][0] for row in hop_rows(held, [ids["b"]], 64)}


def test_a_background_read_leaves_walks_on_the_store_until_it_is_done(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph(engine)
    started: list[threading.Thread] = []
    monkeypatch.setattr(threading.Thread, "start", lambda self: started.append(self))
    assert isinstance(edges_for(engine.store, "default", background=True), StoreEdges)
    assert len(started) == 1
    assert isinstance(edges_for(engine.store, "default", background=True), StoreEdges)
    assert len(started) == 1  # one read at a time
    started[0].run()
    assert isinstance(edges_for(engine.store, "default", background=True), TypedGraph)


def test_edges_outside_their_validity_are_left_out_until_a_bound_passes(engine: Engine) -> None:
    a, b, c = engine.add_objects([ObjectIn(type="T", key=k) for k in "abc"])
    now = datetime.now(UTC)
    soon = now + timedelta(days=1)
    engine.add_relationships(
        [
            RelationshipIn(type="was", source=a.id, target=b.id, valid_to=now - timedelta(1)),
            RelationshipIn(type="will", source=a.id, target=c.id, valid_from=soon),
            RelationshipIn(type="is", source=a.id, target=c.id, valid_to=soon + timedelta(1)),
        ]
    )
    held = build_typed_graph(engine.store, "default", now)
    assert [row[2] for row in hop_rows(held, [a.id], 64)] == [("is", True)]
    assert held.until == soon.timestamp()
    later = build_typed_graph(engine.store, "default", soon + timedelta(hours=1))
    assert sorted(row[2] for row in hop_rows(later, [a.id], 64)) == [("is", True), ("will", True)]


def test_inside_a_write_transaction_the_walk_reads_the_store(engine: Engine) -> None:
    graph(engine)
    assert isinstance(edges_for(engine.store, "default", background=False), TypedGraph)
    with engine.store.transaction():
        assert isinstance(edges_for(engine.store, "default", background=False), StoreEdges)


def test_an_id_the_held_graph_does_not_know_has_no_edges(engine: Engine) -> None:
    ids = graph(engine)
    held = build_typed_graph(engine.store, "default")
    nodes = held.nodes([ids["a"], "nobody"])
    assert nodes[1] == -1 and nodes[0] >= 0
    assert not len(held.hop(np.asarray([], dtype=np.int64), 4).at)


def test_a_held_graphs_type_texts_are_embedded_once_in_the_background(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph(engine)
    held = build_typed_graph(engine.store, "default")
    embedder = FakeEmbedder(16)
    batches: list[list[str]] = []

    def embed_many(texts: Sequence[str]) -> list[Vector]:
        batches.append(list(texts))
        return [embedder.embed_query(t) for t in texts]

    threads: list[threading.Thread] = []
    monkeypatch.setattr(threading.Thread, "start", lambda self: threads.append(self))
    monkeypatch.setattr(paths, "_VOCABULARY_BATCH", 4)
    for _ in range(2):
        paths._embed_vocabulary(held, embedder.embed_query, embed_many)
    assert len(threads) == 1  # once per graph and embedder
    assert not batches
    threads[0].run()
    # relation types, then object types, humanised, four a call
    assert batches == [["likes", "knows", "in", "out"], ["t", "u"]]
    assert all((embedder.embed_query, t) in paths._VECTORS for b in batches for t in b)


def test_a_graph_without_chunks_runs_no_passage_walk(engine: Engine) -> None:
    graph(engine)
    engine.embed_pending()
    response = engine.search("who knows c", recipe="multi_hop", include_debug=True)
    assert response.metadata is not None
    legs = response.metadata["legs"]
    assert "graph:paths" in legs and "graph:passages" not in legs


def test_a_graph_past_the_size_bound_is_not_held(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph(engine)
    monkeypatch.setattr(path_graph, "MAX_EDGES", 3)
    assert isinstance(edges_for(engine.store, "default", background=False), StoreEdges)
    monkeypatch.setattr(path_graph, "MAX_EDGES", 1000)
    found = edges_for(engine.store, "default", background=False, check_seconds=0)
    assert isinstance(found, TypedGraph)
