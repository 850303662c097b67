"""Project isolation: no read, search, count or delete crosses projects."""

from __future__ import annotations

from typing import Any

from kgsearch.engine import Engine
from kgsearch.model import Kind, Mention, ObjectRef
from kgsearch.testing import FakeEmbedder
from kgsearch.testing.conformance.builders import DIMS, ids


def test_project_a_get_and_list_never_return_project_b_rows(
    engine: Engine, two_projects: dict[str, dict[str, Any]]
) -> None:
    store = engine.store
    b_objects = list(two_projects["B"]["objects"].values())

    assert store.get_objects("A", b_objects) == []
    assert store.get_relationships("A", two_projects["B"]["relationships"]) == []
    assert store.endpoints("A", b_objects) == {}
    listed = [o.id for o in store.list_rows("A", "object").items]
    assert listed == list(two_projects["A"]["objects"].values())
    assert all(o.project == "A" for o in store.list_rows("A", "object").items)
    rels = [r.id for r in store.list_rows("A", "relationship").items]
    assert rels == two_projects["A"]["relationships"]
    assert [c.project for c in store.get_chunks("A", ["c1"])] == ["A"]
    assert [s.title for s in store.get_sources("A", ["s1"])] == ["Alpha notes"]


def test_project_a_resolve_and_neighbors_stay_in_project_a(
    engine: Engine, two_projects: dict[str, dict[str, Any]]
) -> None:
    store = engine.store
    a = two_projects["A"]["objects"]

    resolved = store.resolve("A", [ObjectRef(type="Person", key=k) for k in ("x", "y", "z")])

    assert {ref.key: e.id for ref, e in resolved.items()} == a
    assert {e.properties["team"] for e in resolved.values()} == {"Alpha"}
    assert [(n.id, n.depth) for n in store.neighbors("A", [a["x"]], depth=3)] == [
        (a["y"], 1),
        (a["z"], 2),
    ]
    assert store.neighbors("A", list(two_projects["B"]["objects"].values()), depth=3) == []
    assert store.relationships_touching("A", list(two_projects["B"]["objects"].values())) == []
    assert store.edges_among("A", list(two_projects["B"]["objects"].values())) == []


def test_project_a_searches_never_return_project_b_rows(
    engine: Engine, two_projects: dict[str, dict[str, Any]]
) -> None:
    store = engine.store
    embedder = FakeEmbedder(DIMS)

    a_rows = {
        Kind.OBJECT: set(two_projects["A"]["objects"].values()),
        Kind.RELATIONSHIP: set(two_projects["A"]["relationships"]),
        Kind.CHUNK: {"c1"},
    }

    for kind in Kind:
        assert store.text_search("A", kind, "Bravo", limit=50) == []
        expected = a_rows.get(kind, set())  # no community reports in this graph
        assert set(ids(store.text_search("A", kind, "Alpha Bravo", limit=50))) == expected
        hits = store.vector_search("A", kind, embedder.embed_query("Bravo x"), limit=50)
        assert set(ids(hits)) == expected
    assert ids(store.text_search("B", Kind.CHUNK, "Bravo", limit=50)) == ["c1"]


def test_project_a_mentions_and_counts_exclude_project_b(
    engine: Engine, two_projects: dict[str, dict[str, Any]]
) -> None:
    store = engine.store
    a_x, b_x = two_projects["A"]["objects"]["x"], two_projects["B"]["objects"]["x"]

    assert store.mentions("A", chunk_ids=["c1"]) == [
        Mention(project="A", chunk_id="c1", object_id=a_x)
    ]
    assert store.mentions("A", object_ids=[b_x]) == []
    assert store.counts("A") == {
        "objects": 3,
        "relationships": 2,
        "chunks": 1,
        "sources": 1,
        "mentions": 1,
    }
    assert store.projects() == ["A", "B"]


def test_deleting_and_purging_in_project_a_leaves_project_b_alone(
    engine: Engine, two_projects: dict[str, dict[str, Any]]
) -> None:
    store = engine.store
    before = store.counts("B")

    engine.delete("object", list(two_projects["A"]["objects"].values()), project="A")
    engine.delete("object", list(two_projects["A"]["objects"].values()), project="B")
    engine.delete("chunk", ["c1"], project="A")
    engine.purge(project="A")

    assert store.counts("B") == before
    assert store.counts("A")["objects"] == 0
    assert [c.id for c in store.get_chunks("B", ["c1"])] == ["c1"]
