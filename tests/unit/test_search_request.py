"""The search request through Engine.search: hostile queries, validation errors, recipes,
result types, response metadata and debug, relationship triplet text, type hints and
embedder outages."""

from __future__ import annotations

import copy
import statistics

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgsearch.engine import Engine
from kgsearch.errors import InvalidRequest
from kgsearch.model import ChunkIn, ObjectIn, RelationshipIn
from kgsearch.search.request import RECIPES, RelationshipResult, ScopeConfig, SearchRequest
from kgsearch.store.base import Store
from kgsearch.testing import FailingEmbedder, FakeEmbedder
from kgsearch.text import enrich_query

BM25 = ScopeConfig(methods=["bm25"])
VECTOR = ScopeConfig(methods=["vector"])


def small_graph(engine: Engine) -> dict[str, str]:
    """Ada works for Acme; one chunk; everything embedded."""
    objs = engine.add_objects(
        [
            ObjectIn(type="Person", key="ada", properties={"name": "Ada Lovelace", "role": "CEO"}),
            ObjectIn(type="Company", key="acme", properties={"name": "Acme"}),
        ]
    )
    rel = engine.add_relationships(
        [RelationshipIn(type="works_for", source=objs[0].id, target=objs[1].id)]
    )[0]
    engine.add_chunks([ChunkIn(id="c1", text="Ada Lovelace leads Acme as its CEO.")])
    engine.embed_pending()
    return {"ada": objs[0].id, "acme": objs[1].id, "works_for": rel.id, "c1": "c1"}


# --- hostile queries --------------------------------------------------------------------

HOSTILE = [
    "",
    "   ",
    '"',
    "'",
    '"unterminated',
    "a\"b'c",
    "Ada OR Acme",
    "Ada AND NOT Acme",
    "NEAR(Ada Acme, 2)",
    "text:Ada",
    "{text}: Ada",
    "Ada*",
    "*",
    "^Ada",
    "-Ada +Acme",
    "(((",
    ")",
    "Ada\x00Acme",
    "%_\\",
    "Robert'); DROP TABLE objects;--",
    "[Type: #person] Ada",
    "🙂🙃 ✨ Ada",
    "Ünïcödé ÅDA 北京 القاهرة",
    "\u202eAda\u200b",
    "a" * 10_000,
    "Ada " * 2_500,
]


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_query_strings_never_raise(engine: Engine, query: str) -> None:
    small_graph(engine)
    response = engine.search(query)
    assert response.metadata["totalResults"] == len(response.results)


def test_arbitrary_text_queries_never_raise(engine: Engine) -> None:
    small_graph(engine)

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(query=st.text(max_size=300))
    def run(query: str) -> None:
        response = engine.search(query, limit=3)
        assert len(response.results) <= 3

    run()


def test_query_longer_than_10000_characters_is_an_invalid_request(engine: Engine) -> None:
    with pytest.raises(InvalidRequest):
        engine.search("a" * 10_001)


def test_query_of_exactly_10000_characters_is_accepted(engine: Engine) -> None:
    small_graph(engine)
    assert engine.search("a" * 10_000).results is not None


def test_invalid_options_on_a_request_object_are_an_invalid_request(engine: Engine) -> None:
    with pytest.raises(InvalidRequest):
        engine.search(SearchRequest(query="Ada"), query="a" * 10_001)


def test_out_of_range_limit_is_an_invalid_request(engine: Engine) -> None:
    with pytest.raises(InvalidRequest):
        engine.search("Ada", limit=0)


# --- recipes ----------------------------------------------------------------------------


def test_unknown_recipe_is_an_invalid_request(engine: Engine) -> None:
    with pytest.raises(InvalidRequest):
        engine.search("Ada", recipe="no-such-recipe")


def test_relationships_recipe_returns_only_relationships(engine: Engine) -> None:
    ids = small_graph(engine)
    response = engine.search("Ada Lovelace Acme", recipe="relationships")
    assert [(r.type, r.id) for r in response.results] == [("relationship", ids["works_for"])]


def test_recipe_does_not_override_fields_the_caller_set(engine: Engine) -> None:
    ids = small_graph(engine)
    response = engine.search(
        "Ada Lovelace Acme", recipe="relationships", objects=ScopeConfig(), limit=10
    )
    assert {r.id for r in response.results} == {ids["ada"], ids["acme"], ids["works_for"]}


def test_recipe_does_not_override_the_callers_reranker(engine: Engine) -> None:
    small_graph(engine)
    response = engine.search("Ada", recipe="hybrid_mmr", reranker="none")
    assert response.metadata["reranker"] == "none"


def test_recipe_fills_fields_the_caller_left_unset(engine: Engine) -> None:
    small_graph(engine)
    response = engine.search("Ada", recipe="hybrid_mmr")
    assert response.metadata["reranker"] == "mmr"


def test_a_search_with_a_recipe_leaves_recipes_unchanged(engine: Engine) -> None:
    small_graph(engine)
    before = copy.deepcopy(RECIPES)
    for name in RECIPES:
        if name != "node_distance":
            engine.search("Ada", recipe=name)
    assert before == RECIPES


def test_node_distance_recipe_without_center_is_an_invalid_request(engine: Engine) -> None:
    small_graph(engine)
    with pytest.raises(InvalidRequest):
        engine.search("Ada", recipe="node_distance")


# --- result types -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("result_types", "expected"),
    [
        ("graph", {"graph", "relationship"}),
        ("text", {"text"}),
        ("both", {"graph", "relationship", "text"}),
    ],
)
def test_result_types_choose_the_scopes(
    engine: Engine, result_types: str, expected: set[str]
) -> None:
    small_graph(engine)
    response = engine.search("Ada Lovelace Acme", result_types=result_types)
    assert {r.type for r in response.results} == expected


def test_result_types_alias_is_accepted(engine: Engine) -> None:
    small_graph(engine)
    response = engine.search(SearchRequest.model_validate({"query": "Ada", "resultTypes": "text"}))
    assert [r.type for r in response.results] == ["text"]


# --- metadata and debug -----------------------------------------------------------------


def test_metadata_counts_results_per_type(engine: Engine) -> None:
    small_graph(engine)
    response = engine.search("Ada Lovelace Acme")
    meta = {k: v for k, v in response.metadata.items() if k != "executionTime"}
    assert meta == {
        "totalResults": 4,
        "graphResultCount": 2,
        "relationshipResultCount": 1,
        "textResultCount": 1,
        "fusionStrategy": "rrf",
        "reranker": "none",
        "legs": [  # the graph holds chunks: the passages the entities point to rank too
            "chunks:bm25",
            "chunks:vector",
            "graph:evidence",
            "objects:bm25",
            "objects:name",
            "objects:vector",
            "relationships:anchored",
            "relationships:bm25",
            "relationships:vector",
        ],
        "warnings": [],
    }


def test_metadata_execution_time_has_per_stage_timings(engine: Engine) -> None:
    small_graph(engine)
    timings = engine.search("Ada").metadata["executionTime"]
    assert sorted(timings) == [
        "embedQueryMs",
        "fusionMs",
        "graphSearchMs",
        "graphTraversalMs",  # graph:evidence (the graph holds chunks)
        "relationshipSearchMs",
        "rerankMs",
        "textSearchMs",
        "totalMs",
    ]
    assert all(v >= 0 for v in timings.values())
    assert timings["totalMs"] >= timings["fusionMs"]


def test_debug_is_absent_unless_asked_for(engine: Engine) -> None:
    small_graph(engine)
    assert engine.search("Ada").debug is None


def test_debug_score_distribution_per_type(engine: Engine) -> None:
    small_graph(engine)
    response = engine.search("Ada Lovelace Acme", include_debug=True)
    assert response.debug is not None
    by_type: dict[str, list[float]] = {"graph": [], "relationship": [], "text": []}
    for r in response.results:
        by_type[r.type].append(r.score)
    assert response.debug["score_distribution"] == {
        t: {
            "min": pytest.approx(min(s)),
            "max": pytest.approx(max(s)),
            "mean": pytest.approx(statistics.fmean(s)),
        }
        for t, s in by_type.items()
    }


def test_debug_pre_fusion_counts_count_every_legs_hits_per_type(engine: Engine) -> None:
    small_graph(engine)
    response = engine.search("Ada Lovelace", include_debug=True)
    assert response.debug is not None
    legs = response.debug["fusion_details"]["legs"]
    names = {"object": "graph", "relationship": "relationship", "chunk": "text"}
    expected: dict[str, int] = {}
    for ranked in legs.values():
        for hit in ranked:
            t = names[hit["key"].split(":")[0]]
            expected[t] = expected.get(t, 0) + 1
    assert response.debug["fusion_details"]["pre_fusion_counts"] == expected
    # relationships: vector, BM25 and the anchored leg (the query names Ada)
    assert expected == {"graph": 3, "relationship": 3, "text": 2}


# --- relationship triplet text ----------------------------------------------------------


def test_relationship_triplet_text_is_the_embedded_text_verbatim(engine: Engine) -> None:
    ids = small_graph(engine)
    response = engine.search("works for", result_types="graph")
    rel = next(r for r in response.results if r.type == "relationship")
    assert rel.triplet_text == "Ada Lovelace works for Acme"
    assert rel.triplet_text == engine.get_relationship(ids["works_for"]).embedding.embedded_text


def test_triplet_text_after_a_rename_is_the_old_embedded_text_until_re_embedded(
    engine: Engine,
) -> None:
    ids = small_graph(engine)
    engine.add_objects(
        [ObjectIn(type="Company", key="acme", properties={"name": "Globex Industries"})]
    )
    response = engine.search("Globex Industries", objects=None, chunks=None)
    [result] = response.results
    assert isinstance(result, RelationshipResult)
    assert (result.id, result.triplet_text) == (ids["works_for"], "Ada Lovelace works for Acme")
    assert engine.get_relationship(ids["works_for"]).embedding.embedded_text == (
        "Ada Lovelace works for Acme"
    )


def test_triplet_text_after_re_embedding_a_rename_is_the_new_text(engine: Engine) -> None:
    ids = small_graph(engine)
    engine.add_objects(
        [ObjectIn(type="Company", key="acme", properties={"name": "Globex Industries"})]
    )
    engine.embed_pending()
    response = engine.search("Globex Industries", objects=None, chunks=None)
    [result] = response.results
    assert isinstance(result, RelationshipResult)
    assert (result.id, result.triplet_text) == (
        ids["works_for"],
        "Ada Lovelace works for Globex Industries",
    )


# --- embedder failure -------------------------------------------------------------------


def test_embedder_failure_degrades_to_lexical_legs_with_a_warning(store: Store) -> None:
    small_graph(Engine(store, embedder=FakeEmbedder(32)))
    failing = Engine(store, embedder=FailingEmbedder(32))
    response = failing.search("Ada Lovelace")
    assert response.metadata["legs"] == [
        "chunks:bm25",
        "graph:evidence",
        "objects:bm25",
        "objects:name",
        "relationships:anchored",
        "relationships:bm25",
    ]
    assert response.metadata["warnings"] == [
        "embedder failed (ProviderError: failing embedder: every call fails); "
        "vector legs skipped, results are lexical/graph only"
    ]
    assert {f.leg for r in response.results for f in r.found_by} == {
        "chunks:bm25",
        "objects:bm25",
        "relationships:anchored",
        "relationships:bm25",
    }


def test_embedder_failure_with_mmr_still_returns_results(store: Store) -> None:
    small_graph(Engine(store, embedder=FakeEmbedder(32)))
    failing = Engine(store, embedder=FailingEmbedder(32))
    response = failing.search("Ada Lovelace", reranker="mmr")
    assert response.results != []
    assert len(response.metadata["warnings"]) >= 1


# --- type hint --------------------------------------------------------------------------


def _namesakes(engine: Engine) -> dict[str, str]:
    """A Movie and a Person both named Jesse James (the Movie written first)."""
    engine.add_objects(
        [
            ObjectIn(type="Movie", key="jesse-james", properties={"name": "Jesse James"}),
            ObjectIn(type="Person", key="jesse-james", properties={"name": "Jesse James"}),
            *(
                ObjectIn(type="Movie", key=f"m{i}", properties={"name": f"Film number {i}"})
                for i in range(5)
            ),
        ]
    )
    engine.embed_pending()
    return {t: engine.get_object_by_key(t, "jesse-james").id for t in ("Movie", "Person")}


def test_type_hint_prefixes_the_query_with_a_type_tag() -> None:
    assert enrich_query("Jesse James", "person") == "[Type: #person] Jesse James"


def test_type_hint_lands_the_person_above_the_movie_in_the_vector_leg(engine: Engine) -> None:
    ids = _namesakes(engine)
    response = engine.search(
        "Jesse James", type_hint="person", objects=VECTOR, relationships=None, chunks=None
    )
    assert [r.id for r in response.results[:2]] == [ids["Person"], ids["Movie"]]


def test_type_hint_lands_the_person_above_the_movie(engine: Engine) -> None:
    ids = _namesakes(engine)
    response = engine.search("Jesse James", type_hint="person")
    assert [r.id for r in response.results[:2]] == [ids["Person"], ids["Movie"]]


def test_type_hint_movie_lands_the_movie_above_the_person(engine: Engine) -> None:
    ids = _namesakes(engine)
    response = engine.search("Jesse James", type_hint="movie")
    ranked = [r.id for r in response.results]
    assert ranked[0] == ids["Movie"]
    assert ids["Person"] in ranked
