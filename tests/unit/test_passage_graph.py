"""The project's entity–passage graph as arrays: read from the store, bridging chunks
through the entities they share (hubs left out), and read again after a write."""

from __future__ import annotations

import time
from pathlib import Path

from kgsearch import Engine, connect
from kgsearch.model import (
    ChunkIn,
    Mention,
    MentionIn,
    ObjectIn,
    ObjectRef,
    RelationshipIn,
    SourceIn,
)
from kgsearch.search.passage_graph import bridges, build_graph, graph_for
from kgsearch.testing import FakeEmbedder


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


def test_each_chunk_holds_the_entities_it_mentions_and_back(engine: Engine) -> None:
    fill(engine)
    graph = build_graph(engine.store, engine.project, hub_chunks=10)
    names = {v: k for k, v in ids(engine).items()}

    def entities(chunk: str) -> set[str]:
        return {names[graph.entities[e]] for e in graph.entities_of(graph.chunk_index[chunk])}

    assert entities("x") == {"a", "b"}
    assert entities("y") == {"b", "c"}
    b = graph.entities.index(ids(engine)["b"])
    assert {graph.chunks[c] for c in graph.chunks_of(b)} == {"x", "y"}
    assert "d" not in {names[e] for e in graph.entities}  # in a relationship, no passage


def test_bridges_reach_the_chunks_one_shared_entity_away(engine: Engine) -> None:
    fill(engine)
    graph = build_graph(engine.store, engine.project, hub_chunks=10)

    assert bridges(graph, {"x": 0.8}) == {"y": 0.8}  # through b; z shares nothing with x
    assert bridges(graph, {"x": 0.8, "z": 0.5}) == {"y": 0.8}  # the best link wins
    assert bridges(graph, {"y": 0.4}) == {"x": 0.4, "z": 0.4}
    assert bridges(graph, {"unknown": 1.0}) == {}


def test_a_hub_entity_links_nothing(engine: Engine) -> None:
    fill(engine)
    graph = build_graph(engine.store, engine.project, hub_chunks=1)
    b = graph.entities.index(ids(engine)["b"])

    # b and c are each mentioned by two chunks: hubs at 1; a's one chunk stays
    assert len(graph.chunks_of(b)) == 0
    assert graph.chunk_count[b] == 2
    assert bridges(graph, {"x": 1.0}) == {}
    assert [graph.entities[e] for e in graph.entities_of(graph.chunk_index["x"])] == [
        ids(engine)["a"]
    ]


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


def _another_process_writes(path: str) -> None:
    """A passage "w" mentioning "d", written through an engine of its own (as another
    process would)."""
    with Engine(connect(path), embedder=FakeEmbedder(16)) as there:
        there.add_chunks([ChunkIn(id="w", text="text w", source_id="s")])
        there.add_mentions([MentionIn(chunk_id="w", source_id="s", object=person("d"))])


def test_within_the_check_interval_another_process_s_write_waits(tmp_path: Path) -> None:
    path = str(tmp_path / "kg.db")
    with Engine(connect(path), embedder=FakeEmbedder(16)) as here:
        fill(here)
        first = graph_for(here.store, here.project, hub_chunks=10)
        _another_process_writes(path)

        assert graph_for(here.store, here.project, hub_chunks=10, check_seconds=60) is first
        again = graph_for(
            here.store, here.project, hub_chunks=10, check_seconds=0, background=False
        )
        assert "w" in again.chunk_index


def test_a_due_check_in_the_background_answers_with_the_held_graph_meanwhile(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "kg.db")
    with Engine(connect(path), embedder=FakeEmbedder(16)) as here:
        fill(here)
        first = graph_for(here.store, here.project, hub_chunks=10)
        _another_process_writes(path)

        # the check is due: started in a thread, the held graph answers now
        due = graph_for(here.store, here.project, hub_chunks=10, check_seconds=0, background=True)
        assert due is first
        deadline = time.monotonic() + 10
        again = first
        while again is first and time.monotonic() < deadline:
            time.sleep(0.01)
            again = graph_for(here.store, here.project, hub_chunks=10, check_seconds=60)
        assert "w" in again.chunk_index and "w" not in first.chunk_index


def test_a_check_that_finds_the_same_counts_keeps_the_graph(engine: Engine) -> None:
    fill(engine)
    first = graph_for(engine.store, engine.project, hub_chunks=10)

    again = graph_for(
        engine.store, engine.project, hub_chunks=10, check_seconds=0, background=False
    )

    assert again is first


def test_a_graph_held_for_another_hub_cap_is_not_reused(engine: Engine) -> None:
    fill(engine)
    wide = graph_for(engine.store, engine.project, hub_chunks=10)

    narrow = graph_for(engine.store, engine.project, hub_chunks=1)

    assert narrow is not wide
    assert bridges(narrow, {"x": 1.0}) == {} and bridges(wide, {"x": 1.0}) == {"y": 1.0}


def test_a_write_of_this_process_shows_at_once(engine: Engine) -> None:
    fill(engine)
    first = graph_for(engine.store, engine.project, hub_chunks=10)

    engine.delete("chunk", ["z"])  # z and its mention out, w and one in
    engine.add_chunks([ChunkIn(id="w", text="text w", source_id="s")])
    engine.add_mentions([MentionIn(chunk_id="w", source_id="s", object=person("d"))])

    graph = graph_for(engine.store, engine.project, hub_chunks=10, check_seconds=60)
    assert graph is not first
    assert "w" in graph.chunk_index and "z" not in graph.chunk_index


def test_inside_a_write_transaction_a_due_check_runs_in_the_search(engine: Engine) -> None:
    fill(engine)
    first = graph_for(engine.store, engine.project, hub_chunks=10)
    with engine.store.transaction():
        engine.store.add_mentions(
            engine.project,
            [Mention(project=engine.project, chunk_id="z", object_id=ids(engine)["a"])],
        )
        # not in a thread of its own (which would not see the transaction's write)
        graph = graph_for(
            engine.store, engine.project, hub_chunks=10, check_seconds=0, background=True
        )
        assert graph is not first
        assert ids(engine)["a"] in {graph.entities[e] for e in graph.entities_of(2)}
