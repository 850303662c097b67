"""Rerankers through Engine.search: MMR, node distance, mention counts, cross-encoder."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kgsearch.engine import Engine
from kgsearch.errors import InvalidRequest
from kgsearch.model import ChunkIn, MentionIn, ObjectIn, RelationshipIn, SourceIn
from kgsearch.search.request import ScopeConfig
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder

BM25 = ScopeConfig(methods=["bm25"])
FILLERS = ["omega psi chi", "psi chi rho", "chi rho tau", "rho tau phi", "tau phi psi", "phi psi"]


def add(engine: Engine, *objects: ObjectIn) -> dict[str, str]:
    return {o.key: o.id for o in engine.add_objects(list(objects))}


def thing(key: str, name: str, type_: str = "Thing") -> ObjectIn:
    return ObjectIn(type=type_, key=key, properties={"name": name})


# --- MMR --------------------------------------------------------------------------------


def _duplicates(engine: Engine) -> dict[str, str]:
    ids = add(
        engine,
        thing("ada1", "Ada Lovelace", "Person"),
        thing("ada2", "Ada Lovelace", "Person"),
        thing("bio", "Lovelace biography", "Document"),
    )
    engine.embed_pending()
    return ids


def test_without_mmr_both_near_duplicates_take_the_top_two(engine: Engine) -> None:
    ids = _duplicates(engine)
    response = engine.search("Ada Lovelace", limit=2)
    assert {r.id for r in response.results} == {ids["ada1"], ids["ada2"]}


def test_mmr_keeps_one_of_two_near_duplicates_when_a_distinct_alternative_exists(
    engine: Engine,
) -> None:
    ids = _duplicates(engine)
    response = engine.search("Ada Lovelace", limit=2, reranker="mmr")
    found = {r.id for r in response.results}
    assert len(found & {ids["ada1"], ids["ada2"]}) == 1
    assert ids["bio"] in found


def test_mmr_lambda_one_is_pure_relevance(engine: Engine) -> None:
    ids = _duplicates(engine)
    response = engine.search("Ada Lovelace", limit=2, reranker="mmr", mmr_lambda=1.0)
    assert {r.id for r in response.results} == {ids["ada1"], ids["ada2"]}


# --- node distance ----------------------------------------------------------------------


def _chain(engine: Engine) -> dict[str, str]:
    """center - a - b - d - e; the query matches d (3 hops) better than b (2 hops)."""
    ids = add(
        engine,
        thing("center", "centre node"),
        thing("a", "alpha node"),
        thing("b", "zeta omega omega"),
        thing("d", "zeta zeta zeta"),
        thing("e", "epsilon node"),
        *(thing(f"filler{i}", name) for i, name in enumerate(FILLERS)),
    )
    for s, t in [("center", "a"), ("a", "b"), ("b", "d"), ("d", "e")]:
        engine.add_relationships([RelationshipIn(type="next", source=ids[s], target=ids[t])])
    return ids


def test_without_reranking_the_better_text_match_comes_first(engine: Engine) -> None:
    ids = _chain(engine)
    response = engine.search("zeta", objects=BM25, relationships=None, chunks=None)
    assert [r.id for r in response.results] == [ids["d"], ids["b"]]


def test_node_distance_ranks_a_two_hop_object_above_a_three_hop_one(engine: Engine) -> None:
    ids = _chain(engine)
    response = engine.search(
        "zeta",
        objects=BM25,
        relationships=None,
        chunks=None,
        reranker="node_distance",
        center_id=ids["center"],
    )
    expected: list[tuple[str, object]] = [  # approx matchers, not floats
        (ids["b"], pytest.approx(1 / 3)),
        (ids["d"], pytest.approx(1 / 4)),
    ]
    assert [(r.id, r.score) for r in response.results] == expected


def test_node_distance_without_center_id_is_an_invalid_request(engine: Engine) -> None:
    with pytest.raises(InvalidRequest):
        engine.search("zeta", reranker="node_distance")


def test_node_distance_with_an_unknown_center_is_an_invalid_request(engine: Engine) -> None:
    _chain(engine)
    with pytest.raises(InvalidRequest):
        engine.search("zeta", reranker="node_distance", center_id="no-such-object")


# --- mentions ---------------------------------------------------------------------------


def _mentioned(engine: Engine) -> dict[str, str]:
    """z matches the query best, x worst; x is mentioned by 3 sources, y by 1, z by none."""
    ids = add(
        engine,
        thing("z", "zeta zeta zeta"),
        thing("y", "zeta zeta omega"),
        thing("x", "zeta omega omega"),
        *(thing(f"filler{i}", name) for i, name in enumerate(FILLERS)),
    )
    engine.add_sources([SourceIn(id=f"s{i}", title=f"Source {i}") for i in (1, 2, 3)])
    engine.add_mentions(
        [
            MentionIn(source_id="s1", object=ids["x"]),
            MentionIn(source_id="s2", object=ids["x"]),
            MentionIn(source_id="s3", object=ids["x"]),
            MentionIn(source_id="s1", object=ids["y"]),
        ]
    )
    return ids


def test_without_reranking_mentions_do_not_matter(engine: Engine) -> None:
    ids = _mentioned(engine)
    response = engine.search("zeta", objects=BM25, relationships=None, chunks=None)
    assert [r.id for r in response.results] == [ids["z"], ids["y"], ids["x"]]


def test_mentions_reranker_orders_by_how_many_sources_mention_a_hit(engine: Engine) -> None:
    ids = _mentioned(engine)
    response = engine.search(
        "zeta", objects=BM25, relationships=None, chunks=None, reranker="mentions"
    )
    assert [(r.id, r.score) for r in response.results] == [
        (ids["x"], 3.0),
        (ids["y"], 1.0),
        (ids["z"], 0.0),
    ]


def test_mentions_reranker_counts_relationship_mentions(engine: Engine) -> None:
    ids = add(engine, thing("a", "alpha"), thing("b", "beta"), thing("c", "gamma"))
    rels = engine.add_relationships(
        [
            RelationshipIn(type="rel", source=ids["a"], target=ids["b"], description="zeta zeta"),
            RelationshipIn(type="rel", source=ids["b"], target=ids["c"], description="zeta"),
        ]
    )
    engine.add_sources([SourceIn(id="s1"), SourceIn(id="s2")])
    engine.add_mentions(
        [
            MentionIn(source_id="s1", relationship_id=rels[1].id),
            MentionIn(source_id="s2", relationship_id=rels[1].id),
        ]
    )
    response = engine.search(
        "zeta", objects=None, relationships=BM25, chunks=None, reranker="mentions"
    )
    assert [(r.id, r.score) for r in response.results] == [(rels[1].id, 2.0), (rels[0].id, 0.0)]


def test_mentions_reranker_counts_chunks_of_one_source_as_one_source(engine: Engine) -> None:
    ids = add(
        engine,
        thing("x", "zeta zeta zeta"),
        thing("y", "zeta omega omega"),
        *(thing(f"filler{i}", name) for i, name in enumerate(FILLERS)),
    )
    engine.add_sources([SourceIn(id=s) for s in ("s1", "s2", "s3")])
    engine.add_chunks(
        [
            ChunkIn(id="c1", text="first part", source_id="s1", position=0),
            ChunkIn(id="c2", text="second part", source_id="s1", position=1),
        ]
    )
    engine.add_mentions(
        [
            MentionIn(chunk_id="c1", object=ids["x"]),
            MentionIn(chunk_id="c2", object=ids["x"]),
            MentionIn(source_id="s2", object=ids["y"]),
            MentionIn(source_id="s3", object=ids["y"]),
        ]
    )
    response = engine.search(
        "zeta", objects=BM25, relationships=None, chunks=None, reranker="mentions"
    )
    assert [(r.id, r.score) for r in response.results] == [(ids["y"], 2.0), (ids["x"], 1.0)]


# --- cross-encoder ----------------------------------------------------------------------


class LengthEncoder:
    """Fake cross-encoder: shorter passages score higher."""

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [-float(len(t)) for t in texts]


def test_cross_encoder_without_an_encoder_is_an_invalid_request(engine: Engine) -> None:
    add(engine, thing("a", "zeta"))
    engine.embed_pending()
    with pytest.raises(InvalidRequest):
        engine.search("zeta", reranker="cross_encoder")


def test_cross_encoder_reorders_by_the_encoders_scores(store: Store) -> None:
    engine = Engine(store, embedder=FakeEmbedder(32), cross_encoder=LengthEncoder())
    engine.add_chunks(
        [
            ChunkIn(id="long", text="zeta zeta zeta and a much longer tail of words"),
            ChunkIn(id="short", text="zeta omega"),
        ]
    )
    response = engine.search(
        "zeta zeta", objects=None, relationships=None, chunks=BM25, reranker="cross_encoder"
    )
    assert [(r.id, r.score) for r in response.results] == [
        ("short", -10.0),
        ("long", -46.0),
    ]


def test_mentions_reranker_ignores_deleted_sources_and_chunks(engine: Engine) -> None:
    ids = add(
        engine,
        thing("x", "zeta zeta zeta"),
        thing("y", "zeta omega omega"),
        *(thing(f"filler{i}", name) for i, name in enumerate(FILLERS)),
    )
    engine.add_sources([SourceIn(id=s) for s in ("s1", "s2", "s3", "s4")])
    engine.add_chunks([ChunkIn(id="c1", text="a part", source_id="s1")])
    engine.add_mentions(
        [
            MentionIn(source_id="s2", object=ids["x"]),
            MentionIn(source_id="s3", object=ids["x"]),
            MentionIn(chunk_id="c1", object=ids["x"]),
            MentionIn(source_id="s4", object=ids["y"]),
        ]
    )
    engine.delete("source", ["s2", "s3"])
    engine.delete("chunk", ["c1"])
    response = engine.search(
        "zeta", objects=BM25, relationships=None, chunks=None, reranker="mentions"
    )
    assert [(r.id, r.score) for r in response.results] == [(ids["y"], 1.0), (ids["x"], 0.0)]
