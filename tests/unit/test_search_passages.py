"""The multi-hop passages leg: a chunk that shares an entity with a passage matching the
question ranks up, though it shares no word with the question."""

from __future__ import annotations

from typing import Any

import pytest

from kgsearch import Engine, SearchRequest
from kgsearch.model import ChunkIn, Kind, MentionIn, ObjectIn, ObjectRef, RelationshipIn, SourceIn
from kgsearch.search import pipeline
from kgsearch.search.passages import BRIDGE_CHUNKS, BRIDGE_WEIGHT, LEXICAL_WEIGHT
from kgsearch.search.request import ScopeConfig, TextResult

QUESTION = "Which organisation publishes the Journal of Quirk Studies?"


def build(engine: Engine, *, hub_chunks: int = 0) -> None:
    engine.add_objects(
        [
            ObjectIn(type="journal", key="jqs", properties={"name": "Journal of Quirk Studies"}),
            ObjectIn(type="org", key="zeta", properties={"name": "Zeta Guild"}),
            ObjectIn(type="person", key="hall", properties={"name": "Ottilie Hall"}),
            ObjectIn(type="place", key="hub", properties={"name": "Everywhere"}),
        ]
    )
    engine.add_relationships(
        [
            RelationshipIn(
                type="published_by",
                source=ObjectRef(type="journal", key="jqs"),
                target=ObjectRef(type="org", key="zeta"),
            )
        ]
    )
    engine.add_sources([SourceIn(id="s")])
    texts = {
        "bridge": "The Journal of Quirk Studies is issued every month.",
        "answer": "Ottilie Hall established it in 1892 and ran it for decades.",
        **{f"noise{i}": f"Unrelated note number {i} about gardens and rivers." for i in range(30)},
        **{f"hub{i}": f"Everywhere note {i}." for i in range(hub_chunks)},
    }
    engine.add_chunks([ChunkIn(id=c, text=t, source_id="s") for c, t in texts.items()])
    links = [
        ("bridge", ObjectRef(type="journal", key="jqs")),
        ("bridge", ObjectRef(type="org", key="zeta")),
        ("answer", ObjectRef(type="org", key="zeta")),
        ("answer", ObjectRef(type="person", key="hall")),
        *((f"hub{i}", ObjectRef(type="place", key="hub")) for i in range(hub_chunks)),
        *((f"hub{i}", ObjectRef(type="journal", key="jqs")) for i in range(hub_chunks)),
    ]
    engine.add_mentions([MentionIn(chunk_id=c, source_id="s", object=o) for c, o in links])
    engine.embed_pending()


def passages(engine: Engine, recipe: str) -> list[str]:
    response = engine.search(SearchRequest(query=QUESTION, limit=40, recipe=recipe))
    return [r.id for r in response.results if isinstance(r, TextResult)]


def test_the_answer_passage_is_reached_through_the_bridge_entity(engine: Engine) -> None:
    build(engine)

    multi_hop = passages(engine, "multi_hop")
    hybrid = passages(engine, "chunks")

    assert multi_hop[:2] == ["bridge", "answer"] or multi_hop[:2] == ["answer", "bridge"]
    assert "answer" not in hybrid[:5]
    response = engine.search(SearchRequest(query=QUESTION, limit=40, recipe="multi_hop"))
    (answer,) = [r for r in response.results if r.id == "answer"]
    assert "graph:passages" in {h.leg for h in answer.found_by}


def leg_scores(engine: Engine) -> dict[str, dict[str, float]]:
    response = engine.search(SearchRequest(query=QUESTION, limit=40, recipe="multi_hop"))
    return {r.id: {h.leg: h.score for h in r.found_by} for r in response.results}


@pytest.mark.parametrize("named_by", [3, BRIDGE_CHUNKS + 5])
def test_a_hub_entity_links_no_passages(engine: Engine, named_by: int) -> None:
    build(engine, hub_chunks=named_by)  # each hub chunk names the journal too

    scores = leg_scores(engine)

    hubs = [s for c, s in scores.items() if c.startswith("hub")]
    assert len(hubs) == named_by
    # a chunk's own score (no BM25 hit here: its cosine), or that score raised by
    # BRIDGE_WEIGHT when it is one of the first hops; anything else is a bridge's gain
    own = [(s.get("chunks:vector", 0.0), s["graph:passages"]) for s in hubs]
    gained = [
        not (p == pytest.approx(v) or p == pytest.approx((1 + BRIDGE_WEIGHT) * v)) for v, p in own
    ]
    # the journal links them to the bridge passage while few passages name it
    assert all(gained) if named_by <= BRIDGE_CHUNKS else not any(gained)
    answer = scores["answer"]  # through the org, named twice, whatever the journal is
    assert answer["graph:passages"] > answer.get("chunks:vector", 0.0) + 1e-9


def test_no_entity_in_the_graph_falls_back_to_the_chunk_legs(engine: Engine) -> None:
    engine.add_sources([SourceIn(id="s")])
    engine.add_chunks([ChunkIn(id="c1", text="Only text here, no graph.", source_id="s")])
    engine.embed_pending()

    response = engine.search(SearchRequest(query="text graph", recipe="multi_hop"))

    assert [r.id for r in response.results] == ["c1"]
    assert response.metadata["warnings"] == []


def test_projects_do_not_leak_into_the_bridges(engine: Engine) -> None:
    build(engine)
    other = Engine(engine.store, embedder=engine.embedder, project="other")
    other.add_sources([SourceIn(id="s")])
    other.add_chunks([ChunkIn(id="x", text="Journal of Quirk Studies elsewhere.", source_id="s")])
    other.embed_pending()

    assert "answer" not in passages(other, "multi_hop")
    assert "x" not in passages(engine, "multi_hop")


def test_a_graph_built_from_documents_walks_no_relation_paths(engine: Engine) -> None:
    build(engine)  # chunks and their mentions: a graph built from documents
    with_documents = engine.search(SearchRequest(query=QUESTION, recipe="multi_hop"))
    imported = Engine(engine.store, embedder=engine.embedder, project="kb")
    imported.add_objects([ObjectIn(type="journal", key="jqs")])
    imported.embed_pending()
    structured = imported.search(SearchRequest(query=QUESTION, recipe="multi_hop"))

    assert "graph:passages" in with_documents.metadata["legs"]
    assert "graph:paths" not in with_documents.metadata["legs"]
    assert "graph:paths" in structured.metadata["legs"]


def test_a_linked_chunk_the_vector_leg_left_out_is_scored_by_its_stored_vector(
    engine: Engine,
) -> None:
    build(engine)
    request = SearchRequest(
        query=QUESTION, limit=5, recipe="multi_hop", chunks=ScopeConfig(candidates=1)
    )

    response = engine.search(request)

    (answer,) = [r for r in response.results if r.id == "answer"]
    legs = {h.leg: h.score for h in answer.found_by}
    assert set(legs) == {"graph:passages"}  # neither chunk leg returned it
    (query,) = engine.embedder.embed_documents([QUESTION])
    stored = engine.store.vectors(engine.project, Kind.CHUNK, ["answer", "bridge"])
    bridge = {h.leg: h.score for r in response.results if r.id == "bridge" for h in r.found_by}
    bridge_own = bridge["chunks:vector"] + LEXICAL_WEIGHT * 1.0  # the best BM25 hit
    expected = float(stored["answer"] @ query) + BRIDGE_WEIGHT * bridge_own
    assert legs["graph:passages"] == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("options", [{"result_types": "text"}, {"graph": "none"}])
def test_without_the_passage_walk_the_chunks_own_legs_rank_them(
    engine: Engine, options: dict[str, str]
) -> None:
    # multi_hop weighs the chunks' own legs 0 where the walk ranks the passages; where it
    # does not run (text-only results, no graph walk) they must rank them, not leave all at 0
    build(engine)
    request = SearchRequest(query=QUESTION, limit=5, recipe="multi_hop", **options)
    found = [r for r in engine.search(request).results if isinstance(r, TextResult)]

    assert found and found[0].id == "bridge"
    assert all(r.score > 0 for r in found)
    assert [h.leg for h in found[0].found_by] != ["graph:passages"]


def test_the_passage_walk_alone_fuses_no_first_round(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    build(engine)
    calls: list[int] = []
    fuse = pipeline._fuse

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return fuse(*args, **kwargs)

    monkeypatch.setattr(pipeline, "_fuse", counted)
    found = passages(engine, "multi_hop")

    # the walk ranks from the chunks' own lists: the only fusion is the final one
    assert set(found[:2]) == {"bridge", "answer"}
    assert len(calls) == 1
    calls.clear()
    engine.search(SearchRequest(query=QUESTION, limit=10, recipe="local"))
    assert len(calls) == 2  # a query mode's expansion is seeded by the first round
