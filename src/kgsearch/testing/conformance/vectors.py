"""Vector search equals brute-force cosine, with and without filters."""

from __future__ import annotations

from typing import Any

import pytest

from kgsearch.engine import Engine
from kgsearch.errors import DimensionMismatch, InvalidRequest
from kgsearch.model import ChunkIn, Filters, GraphObject, Kind, ObjectIn
from kgsearch.testing import FakeEmbedder
from kgsearch.testing.conformance.builders import (
    DIMS,
    WORDS,
    build_graph,
    embedded_texts,
    ids,
    random_objects,
)
from kgsearch.testing.oracles import assert_topk, cosine_scores


@pytest.mark.parametrize("query", ["apple", "banana cherry", "kiwi lemon mango fig", "zzz"])
@pytest.mark.parametrize("limit", [1, 5, 60])
def test_vector_search_equals_brute_force_cosine(engine: Engine, query: str, limit: int) -> None:
    engine.add_objects(random_objects(50))
    engine.embed_pending()
    texts = embedded_texts(engine.store, "default", Kind.OBJECT)

    got = engine.store.vector_search(
        "default", Kind.OBJECT, FakeEmbedder(DIMS).embed_query(query), limit=limit
    )

    assert_topk(got, cosine_scores(texts, query, DIMS), limit)


def test_vector_search_over_relationships_and_chunks_equals_brute_force(engine: Engine) -> None:
    build_graph(engine)
    engine.add_chunks(
        [ChunkIn(id=f"c{i}", text=" ".join(WORDS[i : i + 3])) for i in range(len(WORDS))]
    )
    engine.embed_pending()

    for kind, query in ((Kind.RELATIONSHIP, "A knows B"), (Kind.CHUNK, "fig grape")):
        texts = embedded_texts(engine.store, "default", kind)
        got = engine.store.vector_search(
            "default", kind, FakeEmbedder(DIMS).embed_query(query), limit=4
        )
        assert_topk(got, cosine_scores(texts, query, DIMS), 4)


def test_vector_search_restricted_to_ids_ranks_only_those(engine: Engine) -> None:
    engine.add_objects(random_objects(30))
    engine.embed_pending()
    texts = embedded_texts(engine.store, "default", Kind.OBJECT)
    chosen = sorted(texts)[::3]

    got = engine.store.vector_search(
        "default", Kind.OBJECT, FakeEmbedder(DIMS).embed_query("grape"), limit=4, ids=chosen
    )

    assert_topk(got, cosine_scores({i: texts[i] for i in chosen}, "grape", DIMS), 4)


def test_vector_search_leaves_out_rows_not_yet_embedded(engine: Engine) -> None:
    engine.add_objects(random_objects(10))
    engine.embed_pending()
    [late] = engine.add_objects([ObjectIn(type="Fruit", key="late", properties={"name": "apple"})])

    got = engine.store.vector_search(
        "default", Kind.OBJECT, FakeEmbedder(DIMS).embed_query("apple"), limit=50
    )

    assert late.id not in ids(got)
    assert len(got) == 10


def test_rows_without_a_vector_are_counted_per_project(engine: Engine) -> None:
    engine.add_objects(random_objects(4))
    engine.embed_pending()
    assert engine.store.not_embedded("default") == 0
    engine.add_objects([ObjectIn(type="Fruit", key="late", properties={"name": "apple"})])
    engine.add_chunks([ChunkIn(id="late-chunk", text="a late chunk")])
    engine.add_objects([ObjectIn(type="Fruit", key="other")], project="other")

    assert engine.store.not_embedded("default") == 2
    assert engine.store.not_embedded("other") == 1
    assert engine.store.not_embedded("nowhere") == 0
    engine.embed_pending()
    assert engine.store.not_embedded("default") == 0


def test_vector_search_with_other_dims_raises_dimension_mismatch(engine: Engine) -> None:
    engine.add_objects(random_objects(3))
    engine.embed_pending()

    with pytest.raises(DimensionMismatch):
        engine.store.vector_search(
            "default", Kind.OBJECT, FakeEmbedder(16).embed_query("apple"), limit=5
        )


@pytest.mark.parametrize("limit", [0, 1001])
def test_search_rejects_limit_out_of_range(engine: Engine, limit: int) -> None:
    engine.add_objects(random_objects(3))
    engine.embed_pending()
    vector = FakeEmbedder(DIMS).embed_query("apple")

    with pytest.raises(InvalidRequest):
        engine.store.vector_search("default", Kind.OBJECT, vector, limit=limit)
    with pytest.raises(InvalidRequest):
        engine.store.text_search("default", Kind.OBJECT, "apple", limit=limit)


def filtered_case(
    engine: Engine, filters: Filters, keep: Any, limit: int = 5
) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """Vector search with ``filters`` and the brute-force scores of the rows ``keep`` admits."""
    engine.add_objects(random_objects(60))
    engine.embed_pending()
    objects: list[GraphObject] = engine.list_rows("object", limit=1000).items
    texts = {o.id: o.embedding.text or "" for o in objects if keep(o)}
    query = "apple banana"
    got = engine.store.vector_search(
        "default",
        Kind.OBJECT,
        FakeEmbedder(DIMS).embed_query(query),
        limit=limit,
        filters=filters,
    )
    return got, cosine_scores(texts, query, DIMS)


def test_vector_filter_object_types_applies_inside_the_leg(engine: Engine) -> None:
    got, expected = filtered_case(
        engine, Filters(object_types=["Shop"]), lambda o: o.type == "Shop"
    )

    assert len(expected) > 5
    assert_topk(got, expected, 5)


def test_vector_filter_properties_applies_inside_the_leg(engine: Engine) -> None:
    got, expected = filtered_case(
        engine,
        Filters(properties={"color": "green"}),
        lambda o: o.properties["color"] == "green",
    )

    assert len(expected) > 5
    assert_topk(got, expected, 5)


def test_vector_filter_labels_applies_inside_the_leg(engine: Engine) -> None:
    got, expected = filtered_case(
        engine,
        Filters(labels=["frozen", "dried"]),
        lambda o: bool({"frozen", "dried"} & set(o.labels)),
    )

    assert len(expected) > 5
    assert_topk(got, expected, 5)


def test_vector_filters_combine_with_and(engine: Engine) -> None:
    got, expected = filtered_case(
        engine,
        Filters(object_types=["Fruit", "Tree"], labels=["fresh"], properties={"color": "red"}),
        lambda o: (
            o.type in ("Fruit", "Tree") and "fresh" in o.labels and o.properties["color"] == "red"
        ),
        limit=3,
    )

    assert len(expected) > 3
    assert_topk(got, expected, 3)


def test_vector_filter_relationship_types_applies_inside_the_leg(engine: Engine) -> None:
    build_graph(engine)
    engine.embed_pending()
    rels = engine.list_rows("relationship", limit=100).items
    texts = {r.id: r.embedding.text for r in rels if r.type == "LIKES"}
    query = "B knows C"

    got = engine.store.vector_search(
        "default",
        Kind.RELATIONSHIP,
        FakeEmbedder(DIMS).embed_query(query),
        limit=3,
        filters=Filters(relationship_types=["LIKES"]),
    )

    assert len(texts) > 3
    assert_topk(got, cosine_scores(texts, query, DIMS), 3)


def test_vector_filter_matching_nothing_returns_nothing(engine: Engine) -> None:
    got, expected = filtered_case(engine, Filters(object_types=["Nope"]), lambda o: False)

    assert got == []
    assert expected == {}


def test_text_filters_apply_inside_the_leg(engine: Engine) -> None:
    engine.add_objects(random_objects(60))
    objects: list[GraphObject] = engine.list_rows("object", limit=1000).items
    apples = {o.id: o.type for o in objects if "apple" in (o.embedding.text or "")}

    hits = engine.store.text_search(
        "default", Kind.OBJECT, "apple", limit=100, filters=Filters(object_types=["Shop"])
    )

    assert set(ids(hits)) == {id_ for id_, type_ in apples.items() if type_ == "Shop"}
    assert sorted(set(apples.values())) == ["Fruit", "Shop", "Tree"]
