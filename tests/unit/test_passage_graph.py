"""The project's entity–passage graph as arrays: read from the store, walked like the
reference PageRank, and read again after a write."""

from __future__ import annotations

import pytest

from kgsearch import Engine
from kgsearch.model import ChunkIn, MentionIn, ObjectIn, ObjectRef, RelationshipIn, SourceIn
from kgsearch.search.passage_graph import build_graph, graph_for, walk
from kgsearch.search.ppr import personalized_pagerank


def person(key: str) -> ObjectRef:
    return ObjectRef(type="person", key=key)


def fill(engine: Engine) -> None:
    engine.add_objects([ObjectIn(type="person", key=k) for k in ("a", "b", "c", "d")])
    engine.add_relationships([RelationshipIn(type="knows", source=person("a"), target=person("d"))])
    engine.add_sources([SourceIn(id="s")])
    engine.add_chunks([ChunkIn(id=c, text=f"text {c}", source_id="s") for c in ("x", "y", "z")])
    links = [("x", "a"), ("x", "b"), ("y", "b"), ("y", "c"), ("z", "c")]
    engine.add_mentions([MentionIn(chunk_id=c, source_id="s", object=person(o)) for c, o in links])


def ids(engine: Engine) -> dict[str, str]:
    return {o.key: o.id for o in engine.store.iter_rows(engine.project, "object")}


def test_the_walk_matches_the_reference_pagerank(engine: Engine) -> None:
    fill(engine)
    graph = build_graph(engine.store, engine.project, hub_chunks=10)
    names = ids(engine)
    edges = [
        (f"o:{names[o]}", f"c:{c}", 1.0)
        for c, o in [("x", "a"), ("x", "b"), ("y", "b"), ("y", "c"), ("z", "c")]
    ]
    edges.append((f"o:{names['a']}", f"o:{names['d']}", 1.0))
    seed = graph.entity_index[names["a"]]

    scores = walk(graph, {seed: 1.0}, damping=0.5, steps=60)

    expected = personalized_pagerank(edges, {f"o:{names['a']}": 1.0}, alpha=0.5, tol=1e-14)
    for chunk, node in graph.chunk_index.items():
        assert scores[node] == pytest.approx(expected[f"c:{chunk}"], abs=1e-9)
    assert scores.sum() == pytest.approx(1.0)
    assert scores[graph.chunk_index["z"]] < scores[graph.chunk_index["y"]]


def test_a_hub_entity_keeps_no_mention_arcs(engine: Engine) -> None:
    fill(engine)
    graph = build_graph(engine.store, engine.project, hub_chunks=1)
    names = ids(engine)

    # b and c are each mentioned by two chunks: their arcs go; a's one chunk stays
    assert graph.strength[graph.entity_index[names["b"]]] == 0
    assert graph.strength[graph.entity_index[names["a"]]] == 2  # chunk x and d
    assert graph.chunk_count[graph.entity_index[names["b"]]] == 2


def test_the_graph_is_read_again_after_a_write(engine: Engine) -> None:
    fill(engine)
    first = graph_for(engine.store, engine.project, hub_chunks=10, check_seconds=0)
    assert graph_for(engine.store, engine.project, hub_chunks=10, check_seconds=0) is first

    engine.add_chunks([ChunkIn(id="w", text="text w", source_id="s")])
    engine.add_mentions([MentionIn(chunk_id="w", source_id="s", object=person("d"))])
    second = graph_for(engine.store, engine.project, hub_chunks=10, check_seconds=0)

    assert second is not first
    assert "w" in second.chunk_index and "w" not in first.chunk_index


def test_a_deleted_chunk_leaves_the_graph(engine: Engine) -> None:
    fill(engine)
    graph_for(engine.store, engine.project, hub_chunks=10, check_seconds=0)

    engine.delete("chunk", ["z"])

    graph = graph_for(engine.store, engine.project, hub_chunks=10, check_seconds=0)
    assert "z" not in graph.chunk_index


def test_within_the_check_interval_the_held_graph_is_used(engine: Engine) -> None:
    fill(engine)
    first = graph_for(engine.store, engine.project, hub_chunks=10)

    engine.add_chunks([ChunkIn(id="w", text="text w", source_id="s")])

    assert graph_for(engine.store, engine.project, hub_chunks=10, check_seconds=60) is first


def test_one_name_typed_twice_is_linked_only_when_asked(engine: Engine) -> None:
    engine.add_objects(
        [ObjectIn(type="group", key="The Beatles"), ObjectIn(type="org", key="beatles")]
    )
    engine.add_sources([SourceIn(id="s")])
    engine.add_chunks([ChunkIn(id=c, text=f"text {c}", source_id="s") for c in ("x", "y")])
    engine.add_mentions(
        [
            MentionIn(
                chunk_id="x", source_id="s", object=ObjectRef(type="group", key="The Beatles")
            ),
            MentionIn(chunk_id="y", source_id="s", object=ObjectRef(type="org", key="beatles")),
        ]
    )
    apart = build_graph(engine.store, engine.project, hub_chunks=10)
    linked = build_graph(engine.store, engine.project, hub_chunks=10, same_key=True)

    assert list(apart.strength[: len(apart.entities)]) == [1, 1]
    assert list(linked.strength[: len(linked.entities)]) == [2, 2]
    beatles = ids(engine)["The Beatles"]  # mentioned by x only
    far = walk(linked, {linked.entity_index[beatles]: 1.0}, damping=0.5, steps=20)
    near = walk(apart, {apart.entity_index[beatles]: 1.0}, damping=0.5, steps=20)
    assert far[linked.chunk_index["y"]] > 0
    assert near[apart.chunk_index["y"]] == 0
