"""Co-occurrence is association data, not facts: the pairs weighed from shared
passages, the migration that takes extracted ``co_occurs`` relationships out of
existing stores, communities held together by passages, and the graph view that draws
associations only when asked."""

from __future__ import annotations

import pytest

from kgsearch import Engine
from kgsearch.communities.associations import ASSOCIATION, co_mentions
from kgsearch.extract.schema import (
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    ExtractionResult,
)
from kgsearch.model import ChunkIn, ObjectRef, RelationshipIn, SourceIn
from kgsearch.store.base import Store
from kgsearch.writes.extracted import ChunkExtraction, add_extractions


def test_pairs_weigh_each_shared_passage_by_how_many_names_it_holds() -> None:
    pairs = co_mentions(
        [("c1", "a"), ("c1", "b"), ("c2", "a"), ("c2", "b"), ("c2", "c"), ("c2", "c")]
    )
    # c1 names two objects (1 each pair), c2 three (1/2 each pair)
    assert pairs == {("a", "b"): 1.5, ("a", "c"): 0.5, ("b", "c"): 0.5}
    assert co_mentions([("c1", "a")]) == {}
    assert co_mentions([("c1", "a"), ("c1", "b"), ("c1", "c")], max_per_chunk=2) == {}
    assert co_mentions([("", "a"), ("", "b")]) == {}


def _result(chunk: str, names: list[str], rels: list[tuple[str, str, str]]) -> ExtractionResult:
    return ExtractionResult(
        chunk_id=chunk,
        graph=ExtractedGraph(
            entities=[ExtractedEntity(name=n, type="person", description=n) for n in names],
            relationships=[
                ExtractedRelation(source=s, target=t, relation=r, description=f"{s} {r} {t}")
                for s, t, r in rels
            ],
        ),
        extractor="spacy",
        model="spacy:test",
    )


def _documents(engine: Engine) -> None:
    engine.add_sources([SourceIn(id="s1", title="notes")])
    engine.add_chunks(
        [ChunkIn(id=f"c{i}", text=f"passage {i}", source_id="s1", position=i) for i in range(4)]
    )
    add_extractions(
        engine._writes(None),
        [
            ChunkExtraction(
                "c0",
                "s1",
                _result("c0", ["Ada", "Bob", "Cy"], [("Ada", "Bob", "co-occurs")]),
            ),
            ChunkExtraction("c1", "s1", _result("c1", ["Ada", "Bob"], [("Ada", "Bob", "knows")])),
            ChunkExtraction("c2", "s1", _result("c2", ["Dee", "Eve"], [])),
            ChunkExtraction("c3", "s1", _result("c3", ["Dee", "Eve", "Fay"], [])),
        ],
    )


def _migrate(store: Store) -> None:
    """Run the migration again, as opening a store written before it does."""
    from kgsearch.store.postgres import PostgresStore
    from kgsearch.store.postgres.schema import m010_associations_not_facts as pg_m010
    from kgsearch.store.sqlite import SQLiteStore
    from kgsearch.store.sqlite.schema import m010_associations_not_facts as sqlite_m010

    if isinstance(store, SQLiteStore):
        lite = store.db

        def run_lite(sql: str) -> None:
            lite.execute(sql)

        with lite.transaction():
            sqlite_m010(run_lite)
    else:
        assert isinstance(store, PostgresStore)
        pg = store.db

        def run_pg(sql: str) -> None:
            pg.execute(sql, None)

        with pg.transaction():
            pg_m010(run_pg)


def test_the_migration_takes_out_extracted_co_occurrence_and_keeps_the_rest(
    engine: Engine, store: Store
) -> None:
    _documents(engine)
    engine.add_relationships(
        [
            RelationshipIn(
                type="co_occurs",
                source=ObjectRef(type="person", key="dee"),
                target=ObjectRef(type="person", key="eve"),
                description="imported by the user",
            )
        ]
    )
    before = {r.type: r.id for r in store.iter_rows("default", "relationship")}
    co_extracted = next(
        r.id
        for r in store.iter_rows("default", "relationship")
        if r.type == "co_occurs" and "_chunks" in r.properties
    )
    assert store.mentions("default", relationship_ids=[co_extracted])

    _migrate(store)

    after = list(store.iter_rows("default", "relationship"))
    kept = {(r.type, "_chunks" in r.properties) for r in after}
    assert kept == {("knows", True), ("co_occurs", False)}
    assert before["knows"] in {r.id for r in after}
    assert store.mentions("default", relationship_ids=[co_extracted]) == []
    # the passages still name every object: that is the association data
    named = {m.object_id for m in store.mentions("default", chunk_ids=["c0"]) if m.object_id}
    assert len(named) == 3
    # a second run changes nothing
    _migrate(store)
    assert len(list(store.iter_rows("default", "relationship"))) == 2


def test_communities_of_a_document_graph_follow_its_passages(engine: Engine) -> None:
    _documents(engine)
    engine.build_communities()
    listed = engine.list_communities()
    members = [set(engine.community(i["id"]).community.members) for i in listed.items]
    keys = {o.id: o.key for o in engine.store.iter_rows("default", "object")}
    groups = sorted(sorted(keys[m] for m in group) for group in members)
    # Dee, Eve and Fay share passages but no relationship: still one community
    assert ["dee", "eve", "fay"] in groups
    assert any({"ada", "bob"} <= set(g) for g in groups)


@pytest.mark.parametrize("associations", [False, True])
def test_the_graph_view_draws_associations_only_when_asked(
    engine: Engine, associations: bool
) -> None:
    _documents(engine)
    dee = engine.get_object_by_key("person", "dee")
    view = engine.subgraph([dee.id], depth=1, associations=associations)
    names = {n.name for n in view.nodes}
    if not associations:
        assert names == {"Dee"} and view.edges == []
        return
    assert names == {"Dee", "Eve", "Fay"}
    assert view.edge_types == [ASSOCIATION]
    drawn = {frozenset((view.nodes[a].name, view.nodes[b].name)) for a, b, _ in view.edges}
    assert drawn == {
        frozenset(("Dee", "Eve")),
        frozenset(("Dee", "Fay")),
        frozenset(("Eve", "Fay")),
    }
    # Eve shares two passages with Dee, Fay one: Eve is reached first
    assert [n.name for n in view.nodes][1] == "Eve"
