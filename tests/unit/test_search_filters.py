"""Filters act inside every search leg (never after fusion, never leaving results short),
projects never leak into each other, and soft-deleted rows never come back."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kgsearch.engine import Engine
from kgsearch.model import ChunkIn, Filters, MentionIn, ObjectIn, RelationshipIn, SourceIn
from kgsearch.search.request import ScopeConfig

BM25 = ScopeConfig(methods=["bm25"])
VECTOR = ScopeConfig(methods=["vector"])
ALL_LEG_OPTIONS: list[dict[str, Any]] = [
    {},
    {"objects": VECTOR, "relationships": VECTOR, "chunks": VECTOR},
    {"objects": BM25, "relationships": BM25, "chunks": BM25},
]
LEG_IDS = ["both-methods", "vector-only", "bm25-only"]


def obj(type_: str, key: str, name: str, **kw: Any) -> ObjectIn:
    return ObjectIn(type=type_, key=key, properties={"name": name, **kw.pop("props", {})}, **kw)


def add(engine: Engine, objects: list[ObjectIn], project: str | None = None) -> dict[str, str]:
    return {o.key: o.id for o in engine.add_objects(objects, project=project)}


def _crowd(engine: Engine, matching: ObjectIn, decoy: ObjectIn) -> set[str]:
    """40 decoys that match 'zeta' strongly, 6 weaker matching rows; returns matching ids."""
    decoys = [decoy.model_copy(update={"key": f"decoy{i}"}) for i in range(40)]
    good = [matching.model_copy(update={"key": f"good{i}"}) for i in range(6)]
    ids = add(engine, decoys + good)
    engine.embed_pending()
    return {ids[f"good{i}"] for i in range(6)}


# --- filters inside legs ---------------------------------------------------------------


@pytest.mark.parametrize("legs", ALL_LEG_OPTIONS, ids=LEG_IDS)
def test_object_types_filter_returns_exactly_limit_matching_objects(
    engine: Engine, legs: dict[str, Any]
) -> None:
    good = _crowd(
        engine, obj("Person", "x", "zeta omega"), obj("Robot", "x", "zeta zeta zeta zeta")
    )
    response = engine.search("zeta zeta", limit=5, filters=Filters(object_types=["Person"]), **legs)
    assert len(response.results) == 5
    assert {r.id for r in response.results} <= good


@pytest.mark.parametrize("legs", ALL_LEG_OPTIONS, ids=LEG_IDS)
def test_labels_filter_returns_exactly_limit_matching_objects(
    engine: Engine, legs: dict[str, Any]
) -> None:
    good = _crowd(
        engine,
        obj("Thing", "x", "zeta omega", labels=["keep", "other"]),
        obj("Thing", "x", "zeta zeta zeta zeta", labels=["other"]),
    )
    response = engine.search("zeta zeta", limit=5, filters=Filters(labels=["keep"]), **legs)
    assert len(response.results) == 5
    assert {r.id for r in response.results} <= good


@pytest.mark.parametrize("legs", ALL_LEG_OPTIONS, ids=LEG_IDS)
def test_properties_filter_returns_exactly_limit_matching_objects(
    engine: Engine, legs: dict[str, Any]
) -> None:
    good = _crowd(
        engine,
        obj("Thing", "x", "zeta omega", props={"tier": "gold"}),
        obj("Thing", "x", "zeta zeta zeta zeta", props={"tier": "tin"}),
    )
    response = engine.search(
        "zeta zeta", limit=5, filters=Filters(properties={"tier": "gold"}), **legs
    )
    assert len(response.results) == 5
    assert {r.id for r in response.results} <= good


@pytest.mark.parametrize("legs", ALL_LEG_OPTIONS, ids=LEG_IDS)
def test_relationship_types_filter_returns_exactly_limit_matching_relationships(
    engine: Engine, legs: dict[str, Any]
) -> None:
    ids = add(engine, [obj("Thing", f"n{i}", f"node {i}") for i in range(47)])
    rels = [
        RelationshipIn(
            type="likes", source=ids[f"n{i}"], target=ids[f"n{i + 1}"], description="zeta zeta zeta"
        )
        for i in range(40)
    ] + [
        RelationshipIn(
            type="knows", source=ids[f"n{i}"], target=ids["n0"], description="zeta omega"
        )
        for i in range(40, 46)
    ]
    found = engine.add_relationships(rels)
    good = {r.id for r in found if r.type == "knows"}
    engine.embed_pending()
    response = engine.search(
        "zeta zeta",
        limit=5,
        result_types="graph",
        filters=Filters(relationship_types=["knows"]),
        **{**legs, "objects": None},
    )
    assert len(response.results) == 5
    assert {r.id for r in response.results} <= good


def _validity(engine: Engine) -> dict[str, str]:
    ids = add(engine, [obj("Thing", k, f"{k} node") for k in "abcd"])
    rels = engine.add_relationships(
        [
            RelationshipIn(
                type="current",
                source=ids["a"],
                target=ids["b"],
                description="zeta link",
                valid_from=datetime(2000, 1, 1, tzinfo=UTC),
            ),
            RelationshipIn(
                type="expired",
                source=ids["a"],
                target=ids["c"],
                description="zeta link",
                valid_from=datetime(2000, 1, 1, tzinfo=UTC),
                valid_to=datetime(2010, 1, 1, tzinfo=UTC),
            ),
            RelationshipIn(
                type="future",
                source=ids["a"],
                target=ids["d"],
                description="zeta link",
                valid_from=datetime(2999, 1, 1, tzinfo=UTC),
            ),
        ]
    )
    engine.embed_pending()
    return {**ids, **{r.type: r.id for r in rels}}


@pytest.mark.parametrize("legs", ALL_LEG_OPTIONS, ids=LEG_IDS)
def test_expired_and_future_relationships_are_excluded_by_default(
    engine: Engine, legs: dict[str, Any]
) -> None:
    ids = _validity(engine)
    response = engine.search("zeta link", **{**legs, "objects": None, "chunks": None})
    assert [r.id for r in response.results] == [ids["current"]]


@pytest.mark.parametrize("legs", ALL_LEG_OPTIONS, ids=LEG_IDS)
def test_as_of_in_the_past_includes_relationships_valid_then(
    engine: Engine, legs: dict[str, Any]
) -> None:
    ids = _validity(engine)
    response = engine.search(
        "zeta link",
        filters=Filters(as_of=datetime(2005, 6, 1, tzinfo=UTC)),
        **{**legs, "objects": None, "chunks": None},
    )
    assert {r.id for r in response.results} == {ids["current"], ids["expired"]}


@pytest.mark.parametrize("graph", ["bfs", "ppr"])
def test_graph_legs_skip_edges_that_are_not_valid_now(engine: Engine, graph: str) -> None:
    ids = _validity(engine)
    response = engine.search(
        "nomatch",
        objects=BM25,
        relationships=BM25,
        chunks=None,
        graph=graph,
        bfs_origins=[ids["a"]],
    )
    assert {r.id for r in response.results} <= {ids["a"], ids["b"], ids["current"]}
    assert ids["current"] in {r.id for r in response.results}


@pytest.mark.parametrize("graph", ["bfs", "ppr"])
def test_graph_legs_follow_edges_valid_at_as_of(engine: Engine, graph: str) -> None:
    ids = _validity(engine)
    response = engine.search(
        "nomatch",
        objects=BM25,
        relationships=BM25,
        chunks=None,
        graph=graph,
        bfs_origins=[ids["a"]],
        filters=Filters(as_of=datetime(2005, 6, 1, tzinfo=UTC)),
    )
    assert {ids["c"], ids["expired"]} <= {r.id for r in response.results}
    assert not {ids["d"], ids["future"]} & {r.id for r in response.results}


@pytest.mark.parametrize("graph", ["bfs", "ppr"])
def test_graph_legs_apply_the_object_types_filter(engine: Engine, graph: str) -> None:
    ids = add(
        engine,
        [obj("Hub", "o", "origin"), obj("Person", "p", "pat"), obj("Robot", "r", "robo")],
    )
    engine.add_relationships(
        [
            RelationshipIn(type="knows", source=ids["o"], target=ids["p"]),
            RelationshipIn(type="knows", source=ids["o"], target=ids["r"]),
        ]
    )
    response = engine.search(
        "nomatch",
        objects=BM25,
        relationships=None,
        chunks=None,
        graph=graph,
        bfs_origins=[ids["o"]],
        filters=Filters(object_types=["Person"]),
    )
    assert [r.id for r in response.results] == [ids["p"]]


@pytest.mark.parametrize("graph", ["bfs", "ppr"])
def test_graph_legs_apply_the_properties_filter_to_relationships(
    engine: Engine, graph: str
) -> None:
    ids = add(engine, [obj("Thing", k, f"{k} node") for k in "oab"])
    rels = engine.add_relationships(
        [
            RelationshipIn(
                type="knows", source=ids["o"], target=ids["a"], properties={"since": 2020}
            ),
            RelationshipIn(
                type="knows", source=ids["o"], target=ids["b"], properties={"since": 1999}
            ),
        ]
    )
    response = engine.search(
        "nomatch",
        objects=None,
        relationships=BM25,
        chunks=None,
        graph=graph,
        bfs_origins=[ids["o"]],
        filters=Filters(properties={"since": 2020}),
    )
    assert [r.id for r in response.results if r.type == "relationship"] == [rels[0].id]


# --- project isolation -----------------------------------------------------------------


def _project(engine: Engine, project: str) -> set[str]:
    """The same little graph in a project; returns every id it holds."""
    ids = add(
        engine,
        [
            obj("Person", "ada", "Ada Lovelace"),
            obj("Company", "acme", "Acme"),
            obj("City", "london", "London"),
        ],
        project=project,
    )
    rels = engine.add_relationships(
        [
            RelationshipIn(type="works_for", source=ids["ada"], target=ids["acme"]),
            RelationshipIn(type="based_in", source=ids["acme"], target=ids["london"]),
        ],
        project=project,
    )
    engine.add_sources([SourceIn(id=f"{project}-s1", title="Memo")], project=project)
    engine.add_chunks(
        [
            ChunkIn(
                id=f"{project}-c1",
                text="Ada Lovelace runs Acme in London",
                source_id=f"{project}-s1",
            )
        ],
        project=project,
    )
    engine.add_mentions([MentionIn(source_id=f"{project}-s1", object=ids["ada"])], project=project)
    return set(ids.values()) | {r.id for r in rels} | {f"{project}-c1"}


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"graph": "bfs"},
        {"graph": "ppr", "graph_depth": 2},
        {"reranker": "mmr"},
        {"reranker": "mentions"},
        {"objects": BM25, "relationships": BM25, "chunks": BM25},
    ],
    ids=["default", "bfs", "ppr", "mmr", "mentions", "bm25"],
)
def test_search_in_one_project_never_returns_another_projects_rows(
    engine: Engine, options: dict[str, Any]
) -> None:
    a = _project(engine, "a")
    b = _project(engine, "b")
    engine.embed_pending()
    response = engine.search("Ada Lovelace Acme London", project="a", limit=50, **options)
    found = {r.id for r in response.results}
    assert found == a
    assert not found & b


def test_bfs_origins_of_another_project_find_nothing(engine: Engine) -> None:
    _project(engine, "a")
    b = _project(engine, "b")
    engine.embed_pending()
    response = engine.search(
        "nomatch",
        project="a",
        objects=BM25,
        relationships=BM25,
        chunks=None,
        graph="bfs",
        bfs_origins=sorted(b),
    )
    assert response.results == []


def test_node_distance_center_of_another_project_is_rejected(engine: Engine) -> None:
    from kgsearch.errors import InvalidRequest

    _project(engine, "a")
    b_ids = _project(engine, "b")
    engine.embed_pending()
    b_object = engine.get_object_by_key("Person", "ada", project="b").id
    assert b_object in b_ids
    with pytest.raises(InvalidRequest):
        engine.search("Ada", project="a", reranker="node_distance", center_id=b_object)


def test_chunks_with_the_same_id_in_two_projects_stay_apart(engine: Engine) -> None:
    engine.add_chunks([ChunkIn(id="c1", text="alpha words here")], project="a")
    engine.add_chunks([ChunkIn(id="c1", text="beta words there")], project="b")
    engine.embed_pending()
    response = engine.search("beta words there", project="a")
    assert [(r.id, r.snippet) for r in response.results if r.type == "text"] == [
        ("c1", "alpha words here")
    ]


# --- soft deletes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"objects": BM25, "relationships": BM25, "chunks": BM25},
        {"objects": VECTOR, "relationships": VECTOR, "chunks": VECTOR},
        {"graph": "bfs", "graph_depth": 3},
        {"graph": "ppr", "graph_depth": 3},
        {"graph": "bfs", "graph_depth": 3, "use_origins": True},
        {"graph": "ppr", "graph_depth": 3, "use_origins": True},
        {"reranker": "mmr"},
    ],
    ids=["default", "bm25", "vector", "bfs", "ppr", "bfs-origins", "ppr-origins", "mmr"],
)
def test_soft_deleted_rows_are_never_returned(engine: Engine, options: dict[str, Any]) -> None:
    ids = add(engine, [obj("Thing", k, f"zeta {k}") for k in ["hub", "gone", "kept", "far"]])
    rels = engine.add_relationships(
        [
            RelationshipIn(type="links", source=ids["hub"], target=ids["gone"], description="zeta"),
            RelationshipIn(type="links", source=ids["hub"], target=ids["kept"], description="zeta"),
            RelationshipIn(type="links", source=ids["kept"], target=ids["far"], description="zeta"),
        ]
    )
    engine.add_chunks([ChunkIn(id="c-gone", text="zeta text"), ChunkIn(id="c-kept", text="zeta")])
    engine.embed_pending()
    engine.delete("object", [ids["gone"]])  # takes rels[0] with it
    engine.delete("relationship", [rels[2].id])
    engine.delete("chunk", ["c-gone"])
    if options.pop("use_origins", False):
        options["bfs_origins"] = [ids["hub"]]
    response = engine.search("zeta gone kept text", limit=50, **options)
    found = {r.id for r in response.results}
    assert not found & {ids["gone"], rels[0].id, rels[2].id, "c-gone"}
    assert {ids["hub"], ids["kept"], rels[1].id, "c-kept"} <= found


@pytest.mark.parametrize("legs", ALL_LEG_OPTIONS, ids=LEG_IDS)
def test_a_relationship_whose_validity_ends_leaves_the_next_search(
    engine: Engine, legs: dict[str, Any]
) -> None:
    # the vector leg reads the rows' bounds once per state of the kind: a change of
    # validity alone (no vector changes) must reach the next search
    ids = _validity(engine)
    options = {**legs, "objects": None, "chunks": None}
    assert [r.id for r in engine.search("zeta link", **options).results] == [ids["current"]]

    engine.update_relationship(ids["current"], {"valid_to": datetime(2020, 1, 1, tzinfo=UTC)})

    assert [r.id for r in engine.search("zeta link", **options).results] == []
