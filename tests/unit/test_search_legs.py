"""Search legs through Engine.search: vector and BM25 legs per scope, graph legs (BFS,
personalized PageRank), RRF and weighted fusion with hand-computed scores, explain."""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms.link_analysis.pagerank_alg import _pagerank_python

from kgsearch.engine import Engine
from kgsearch.model import ChunkIn, ObjectIn, RelationshipIn, SourceIn
from kgsearch.search.fusion import RELEVANCE_FLOOR
from kgsearch.search.request import LegRank, ScopeConfig, SearchResponse
from kgsearch.testing import FakeEmbedder

BM25 = ScopeConfig(methods=["bm25"])
VECTOR = ScopeConfig(methods=["vector"])
FILLERS = ["omega psi chi", "psi chi rho", "chi rho tau", "rho tau phi", "tau phi psi", "phi psi"]


def thing(key: str, name: str) -> ObjectIn:
    return ObjectIn(type="Thing", key=key, properties={"name": name})


def add(engine: Engine, *objects: ObjectIn) -> dict[str, str]:
    """Add objects; return key → id."""
    return {o.key: o.id for o in engine.add_objects(list(objects))}


def link(engine: Engine, source: str, target: str, type_: str = "links_to", **kw: Any) -> str:
    return engine.add_relationships(
        [RelationshipIn(type=type_, source=source, target=target, **kw)]
    )[0].id


def hits(response: SearchResponse) -> list[tuple[str, list[tuple[str, int, float]]]]:
    """Each result's id with its (leg, rank, raw score) list."""
    return [(r.id, [(f.leg, f.rank, f.score) for f in r.found_by]) for r in response.results]


def cosine(query: str, text: str) -> float:
    fake = FakeEmbedder(32)
    return float(np.dot(fake.embed_query(query), fake.embed_query(text)))


def zeta_objects(engine: Engine) -> dict[str, str]:
    """Three objects with 'zeta' three, two and one times (same length) and six fillers."""
    return add(
        engine,
        thing("three", "zeta zeta zeta"),
        thing("two", "zeta zeta omega"),
        thing("one", "zeta omega omega"),
        *(thing(f"filler{i}", name) for i, name in enumerate(FILLERS)),
    )


# --- vector legs ------------------------------------------------------------------------


def _vector_graph(engine: Engine) -> dict[str, list[tuple[str, str]]]:
    """Rows of every kind; returns scope → [(id, embedded text)]."""
    ids = add(
        engine,
        thing("a", "red apple pie"),
        thing("b", "red apple"),
        thing("c", "green apple tart"),
        thing("d", "blue sky"),
    )
    link(engine, ids["a"], ids["b"], "tastes_like")
    link(engine, ids["c"], ids["d"], "looks_like")
    link(engine, ids["b"], ids["d"], "sits_under")
    engine.add_chunks(
        [
            ChunkIn(id="c1", text="A red apple pie cools on the sill."),
            ChunkIn(id="c2", text="The sky was blue all day."),
            ChunkIn(id="c3", text="Green apple and red pepper."),
        ]
    )
    engine.embed_pending()
    objects = [(o.id, o.embedding.embedded_text or "") for o in engine.list_rows("object").items]
    rels = [(r.id, r.embedding.embedded_text or "") for r in engine.list_rows("relationship").items]
    chunks = [(c.id, c.embedding.embedded_text or "") for c in engine.list_rows("chunk").items]
    return {"objects": objects, "relationships": rels, "chunks": chunks}


@pytest.mark.parametrize("scope", ["objects", "relationships", "chunks"])
def test_vector_leg_ranks_rows_by_cosine_and_reports_raw_scores(engine: Engine, scope: str) -> None:
    rows = _vector_graph(engine)[scope]
    query = "red apple pie"
    scopes: dict[str, Any] = {"objects": None, "relationships": None, "chunks": None}
    scopes[scope] = VECTOR
    response = engine.search(query, limit=10, **scopes)
    ranked = sorted(rows, key=lambda row: -cosine(query, row[1]))
    expected: list[tuple[str, list[tuple[str, int, object]]]] = [  # approx matchers
        (id, [(f"{scope}:vector", rank, pytest.approx(cosine(query, text), abs=1e-5))])
        for rank, (id, text) in enumerate(ranked, 1)
        # the relevance floor: a hit far below the best similarity is not fused
        if cosine(query, text) >= RELEVANCE_FLOOR * cosine(query, ranked[0][1])
    ]
    assert len(expected) < len(ranked)  # the unrelated row (cosine 0) is left out
    assert hits(response) == expected


# --- BM25 legs --------------------------------------------------------------------------


def test_object_bm25_leg_ranks_by_term_frequency(engine: Engine) -> None:
    ids = zeta_objects(engine)
    response = engine.search("zeta", objects=BM25, relationships=None, chunks=None)
    found = hits(response)
    assert [(id, [(leg, rank) for leg, rank, _ in legs]) for id, legs in found] == [
        (ids["three"], [("objects:bm25", 1)]),
        (ids["two"], [("objects:bm25", 2)]),
        (ids["one"], [("objects:bm25", 3)]),
    ]


def test_bm25_raw_scores_are_positive_and_decreasing(engine: Engine) -> None:
    zeta_objects(engine)
    response = engine.search("zeta", objects=BM25, relationships=None, chunks=None)
    scores = [r.found_by[0].score for r in response.results]
    assert scores == sorted(scores, reverse=True)
    assert len(set(scores)) == 3
    assert min(scores) > 0


def test_relationship_bm25_leg_ranks_by_term_frequency(engine: Engine) -> None:
    names = [*FILLERS, "ann", "bob"]
    ids = add(engine, *(thing(k, n) for k, n in zip("abcdefgh", names, strict=True)))
    three = link(engine, ids["a"], ids["b"], description="zeta zeta zeta")
    two = link(engine, ids["b"], ids["c"], description="zeta zeta omega")
    one = link(engine, ids["c"], ids["d"], description="zeta omega omega")
    for i, (s, t) in enumerate([("d", "e"), ("e", "f"), ("f", "g"), ("g", "h"), ("h", "a")]):
        link(engine, ids[s], ids[t], description=FILLERS[i])
    response = engine.search("zeta", objects=None, relationships=BM25, chunks=None)
    assert [(id, [(leg, rank) for leg, rank, _ in legs]) for id, legs in hits(response)] == [
        (three, [("relationships:bm25", 1)]),
        (two, [("relationships:bm25", 2)]),
        (one, [("relationships:bm25", 3)]),
    ]


def test_chunk_bm25_leg_ranks_by_term_frequency(engine: Engine) -> None:
    engine.add_chunks(
        [
            ChunkIn(id="three", text="zeta zeta zeta"),
            ChunkIn(id="two", text="zeta zeta omega"),
            ChunkIn(id="one", text="zeta omega omega"),
            *(ChunkIn(id=f"filler{i}", text=t) for i, t in enumerate(FILLERS)),
        ]
    )
    response = engine.search("zeta", objects=None, relationships=None, chunks=BM25)
    assert [(id, [(leg, rank) for leg, rank, _ in legs]) for id, legs in hits(response)] == [
        ("three", [("chunks:bm25", 1)]),
        ("two", [("chunks:bm25", 2)]),
        ("one", [("chunks:bm25", 3)]),
    ]


def test_chunk_bm25_leg_matches_the_source_title(engine: Engine) -> None:
    engine.add_sources([SourceIn(id="s1", title="Zeta report")])
    engine.add_chunks(
        [
            ChunkIn(id="titled", text="nothing to see", source_id="s1"),
            *(ChunkIn(id=f"filler{i}", text=t) for i, t in enumerate(FILLERS)),
        ]
    )
    response = engine.search("zeta", objects=None, relationships=None, chunks=BM25)
    assert [r.id for r in response.results] == ["titled"]


# --- fusion -----------------------------------------------------------------------------


def _fusion_graph(engine: Engine) -> dict[str, str]:
    """zeta objects plus an origin linked to 'three' (BFS from it finds 'three' only)."""
    ids = zeta_objects(engine)
    ids.update(add(engine, thing("origin", "psi origin")))
    link(engine, ids["origin"], ids["three"])
    return ids


def _fusion_search(engine: Engine, ids: dict[str, str], **options: Any) -> SearchResponse:
    return engine.search(
        "zeta",
        objects=BM25,
        relationships=None,
        chunks=None,
        graph="bfs",
        bfs_origins=[ids["origin"]],
        **options,
    )


def test_rrf_with_k_60_sums_one_over_k_plus_rank(engine: Engine) -> None:
    ids = _fusion_graph(engine)
    response = _fusion_search(engine, ids)
    expected: list[tuple[str, object]] = [  # approx matchers, not floats
        (ids["three"], pytest.approx(1 / 61 + 1 / 61)),
        (ids["two"], pytest.approx(1 / 62)),
        (ids["one"], pytest.approx(1 / 63)),
    ]
    assert [(r.id, r.score) for r in response.results] == expected


def test_rrf_k_is_taken_from_the_request(engine: Engine) -> None:
    ids = _fusion_graph(engine)
    response = _fusion_search(engine, ids, rrf_k=1)
    expected: list[tuple[str, object]] = [  # approx matchers, not floats
        (ids["three"], pytest.approx(1.0)),
        (ids["two"], pytest.approx(1 / 3)),
        (ids["one"], pytest.approx(1 / 4)),
    ]
    assert [(r.id, r.score) for r in response.results] == expected


def test_rrf_applies_leg_weights(engine: Engine) -> None:
    ids = _fusion_graph(engine)
    response = _fusion_search(engine, ids, weights={"objects:bm25": 2.0, "graph:bfs": 0.5})
    expected: list[tuple[str, object]] = [  # approx matchers, not floats
        (ids["three"], pytest.approx(2 / 61 + 0.5 / 61)),
        (ids["two"], pytest.approx(2 / 62)),
        (ids["one"], pytest.approx(2 / 63)),
    ]
    assert [(r.id, r.score) for r in response.results] == expected


def test_found_by_lists_each_leg_with_rank_and_raw_score(engine: Engine) -> None:
    ids = _fusion_graph(engine)
    response = _fusion_search(engine, ids)
    top = response.results[0]
    bm25_score = top.found_by[0].score
    assert hits(response)[0] == (
        ids["three"],
        [("objects:bm25", 1, bm25_score), ("graph:bfs", 1, 1.0)],
    )


def test_weighted_fusion_min_max_normalises_each_leg(engine: Engine) -> None:
    ids = _fusion_graph(engine)
    response = _fusion_search(
        engine, ids, fusion="weighted", weights={"objects:bm25": 2.0, "graph:bfs": 0.5}
    )
    s3, s2, s1 = (r.found_by[0].score for r in response.results)
    expected: list[tuple[str, object]] = [  # approx matchers, not floats
        (ids["three"], pytest.approx(2.0 * 1.0 + 0.5 * 1.0)),
        (ids["two"], pytest.approx(2.0 * (s2 - s1) / (s3 - s1))),
        (ids["one"], pytest.approx(0.0)),
    ]
    assert [(r.id, r.score) for r in response.results] == expected


def test_fusion_strategy_is_reported_in_metadata(engine: Engine) -> None:
    ids = _fusion_graph(engine)
    response = _fusion_search(engine, ids, fusion="weighted")
    assert response.metadata["fusionStrategy"] == "weighted"


# --- graph legs -------------------------------------------------------------------------


def _chain(engine: Engine) -> dict[str, str]:
    """o - a - b - c, plus an unconnected d; relationships keyed 'o-a', 'a-b', 'b-c'."""
    ids = add(
        engine,
        thing("o", "origin node"),
        thing("a", "alpha node"),
        thing("b", "beta node"),
        thing("c", "gamma node"),
        thing("d", "delta node"),
    )
    for s, t in [("o", "a"), ("a", "b"), ("b", "c")]:
        ids[f"{s}-{t}"] = link(engine, ids[s], ids[t])
    return ids


def test_bfs_from_origins_scores_objects_and_edges_by_depth(engine: Engine) -> None:
    ids = _chain(engine)
    response = engine.search(
        "nomatch",
        objects=BM25,
        relationships=BM25,
        chunks=None,
        graph="bfs",
        bfs_origins=[ids["o"]],
        graph_depth=2,
    )
    assert hits(response) == [
        (ids["a"], [("graph:bfs", 1, 1.0)]),
        (ids["o-a"], [("graph:bfs:relationships", 1, 1.0)]),
        (ids["b"], [("graph:bfs", 2, 0.5)]),
        (ids["a-b"], [("graph:bfs:relationships", 2, 0.5)]),
    ]


def test_bfs_depth_limits_how_far_it_goes(engine: Engine) -> None:
    ids = _chain(engine)
    response = engine.search(
        "nomatch",
        objects=BM25,
        relationships=None,
        chunks=None,
        graph="bfs",
        bfs_origins=[ids["o"]],
        graph_depth=3,
    )
    assert [r.id for r in response.results] == [ids["a"], ids["b"], ids["c"]]


def test_bfs_lands_on_top_hits_and_expands_to_neighbours(engine: Engine) -> None:
    ids = _chain(engine)
    response = engine.search("alpha", objects=BM25, relationships=None, chunks=None, graph="bfs")
    found = {
        id: [(leg, rank if leg == "graph:bfs" else 0) for leg, rank, _ in f]
        for id, f in hits(response)
    }
    assert {id: [leg for leg, _ in f] for id, f in found.items()} == {
        ids["a"]: ["objects:bm25"],
        ids["o"]: ["graph:bfs"],
        ids["b"]: ["graph:bfs"],
    }
    assert sorted(s for id, f in hits(response) for leg, _, s in f if leg == "graph:bfs") == [
        1.0,
        1.0,
    ]


def test_ppr_from_origins_matches_networkx_pagerank(engine: Engine) -> None:
    ids = _chain(engine)
    response = engine.search(
        "nomatch",
        objects=BM25,
        relationships=None,
        chunks=None,
        graph="ppr",
        bfs_origins=[ids["o"]],
        graph_depth=3,
    )
    graph = nx.Graph([(ids["o"], ids["a"]), (ids["a"], ids["b"]), (ids["b"], ids["c"])])
    pagerank = _pagerank_python(graph, personalization={ids["o"]: 1.0}, max_iter=1000, tol=1e-12)
    ranked = sorted(pagerank.items(), key=lambda x: -x[1])
    expected: list[tuple[str, list[tuple[str, int, object]]]] = [  # approx matchers
        (id, [("graph:ppr", rank, pytest.approx(score, abs=1e-4))])
        for rank, (id, score) in enumerate(ranked, 1)
    ]
    assert hits(response) == expected


def test_ppr_lands_on_top_hits_and_reaches_two_hops(engine: Engine) -> None:
    ids = _chain(engine)
    response = engine.search(
        "alpha",
        objects=BM25,
        relationships=None,
        chunks=None,
        graph="ppr",
        graph_depth=2,
    )
    legs = {id: [leg for leg, _, _ in found] for id, found in hits(response)}
    assert legs == {
        ids["a"]: ["objects:bm25", "graph:ppr"],
        ids["o"]: ["graph:ppr"],
        ids["b"]: ["graph:ppr"],
        ids["c"]: ["graph:ppr"],
    }


def test_ppr_adds_a_relationship_leg(engine: Engine) -> None:
    ids = _chain(engine)
    response = engine.search(
        "nomatch",
        objects=BM25,
        relationships=BM25,
        chunks=None,
        graph="ppr",
        bfs_origins=[ids["o"]],
        graph_depth=3,
    )
    rels = {r.id: [f.leg for f in r.found_by] for r in response.results if r.type == "relationship"}
    assert rels == {
        ids["o-a"]: ["graph:ppr:relationships"],
        ids["a-b"]: ["graph:ppr:relationships"],
        ids["b-c"]: ["graph:ppr:relationships"],
    }


@pytest.mark.parametrize("graph", ["bfs", "ppr"])
def test_graph_legs_return_no_objects_when_the_objects_scope_is_off(
    engine: Engine, graph: str
) -> None:
    ids = _chain(engine)
    response = engine.search(
        "nomatch",
        objects=None,
        relationships=BM25,
        chunks=None,
        graph=graph,
        bfs_origins=[ids["o"]],
        graph_depth=3,
    )
    assert {r.type for r in response.results} == {"relationship"}


def test_graph_leg_is_skipped_for_text_results(engine: Engine) -> None:
    ids = _chain(engine)
    engine.add_chunks([ChunkIn(id="c1", text="alpha text")])
    response = engine.search("alpha", result_types="text", graph="bfs", bfs_origins=[ids["o"]])
    assert [r.id for r in response.results] == ["c1"]


# --- explain ----------------------------------------------------------------------------


def test_explain_returns_each_legs_ranked_hits_and_the_fused_order(engine: Engine) -> None:
    ids = _fusion_graph(engine)
    options: dict[str, Any] = {
        "objects": BM25,
        "relationships": None,
        "chunks": None,
        "graph": "bfs",
        "bfs_origins": [ids["origin"]],
    }
    explained = engine.explain("zeta", **options)
    response = engine.search("zeta", **options)
    scores = {r.id: r.found_by[0].score for r in response.results}
    assert explained.legs == {
        "objects:bm25": [
            LegRank(key=f"object:{ids[k]}", rank=rank, score=scores[ids[k]])
            for rank, k in enumerate(["three", "two", "one"], 1)
        ],
        "objects:name": [],  # no key is "zeta"
        "graph:bfs": [LegRank(key=f"object:{ids['three']}", rank=1, score=1.0)],
    }
    assert [(f.type, f.id, f.score) for f in explained.fused] == [
        ("graph", r.id, r.score) for r in response.results
    ]
    # each leg's own time, within the search's total
    total = explained.metadata["executionTime"]["totalMs"]
    assert explained.leg_ms.keys() == explained.legs.keys()
    assert all(0 <= ms <= total for ms in explained.leg_ms.values())
