"""LightRAG's query modes as recipes on the unified search, and cited context sections."""

from __future__ import annotations

import pytest

from kgsearch import Engine
from kgsearch.model import ChunkIn, MentionIn, ObjectIn, ObjectRef, RelationshipIn, SourceIn
from kgsearch.search.context import format_sections
from kgsearch.search.request import GraphResult, RelationshipResult, TextResult

ADA = ObjectRef(type="person", key="ada")


def build(engine: Engine) -> dict[str, str]:
    ada, babbage, menabrea = engine.add_objects(
        [
            ObjectIn(type="person", key="ada", properties={"name": "Ada Lovelace"}),
            ObjectIn(type="person", key="babbage", properties={"name": "Charles Babbage"}),
            ObjectIn(type="person", key="menabrea", properties={"name": "Luigi Menabrea"}),
        ]
    )
    (rel,) = engine.add_relationships(
        [
            RelationshipIn(
                type="corresponded_with",
                source=ada.id,
                target=babbage.id,
                description="Letters about the difference engine and its punched cards.",
                source_chunks=["c2"],
            )
        ]
    )
    engine.add_sources([SourceIn(id="s", title="Notes")])
    engine.add_chunks(
        [
            ChunkIn(id="c1", text="She translated an Italian memoir in 1843.", source_id="s"),
            ChunkIn(id="c2", text="Their letters ran for years.", source_id="s"),
            ChunkIn(id="c3", text="Unrelated text on weaving looms.", source_id="s"),
        ]
    )
    engine.add_mentions([MentionIn(chunk_id="c1", source_id="s", object=ADA)])
    engine.embed_pending()
    return {"ada": ada.id, "babbage": babbage.id, "menabrea": menabrea.id, "rel": rel.id}


def legs_of(response: object, row_id: str) -> set[str]:
    for r in response.results:  # type: ignore[attr-defined]
        if r.id == row_id:
            return {h.leg for h in r.found_by}
    return set()


def test_local_reaches_relationships_and_chunks_through_the_entities(engine: Engine) -> None:
    ids = build(engine)

    # the mode's own expansion: a graph built from documents would keep the chunks'
    # own legs on (test_documents_keep_the_chunk_legs_in_every_mode), so switch them off
    response = engine.search("Ada Lovelace", recipe="local", chunks={"methods": []})

    kinds = {type(r) for r in response.results}
    assert kinds <= {GraphResult, RelationshipResult, TextResult}
    assert "graph:local:relationships" in legs_of(response, ids["rel"])
    # c1 never says "Ada": it is found because it mentions her
    assert legs_of(response, "c1") == {"graph:local:chunks"}
    assert not legs_of(response, "c3")
    assert all(
        not h.leg.startswith(("relationships:", "chunks:"))
        for r in response.results
        for h in r.found_by
    )


def test_global_reaches_entities_and_sources_through_the_relationships(engine: Engine) -> None:
    ids = build(engine)

    response = engine.search("difference engine punched cards", recipe="global")

    assert "graph:global:objects" in legs_of(response, ids["babbage"])
    assert "graph:global:objects" in legs_of(response, ids["ada"])
    assert "graph:global:chunks" in legs_of(response, "c2")  # its source chunk
    assert not legs_of(response, ids["menabrea"])


def test_naive_is_chunks_only_and_mix_adds_the_chunk_legs(engine: Engine) -> None:
    build(engine)

    naive = engine.search("weaving looms", recipe="naive")
    mix = engine.search("Ada Lovelace weaving", recipe="mix")
    hybrid = engine.search("Ada Lovelace weaving", recipe="hybrid", chunks={"methods": []})

    assert naive.results and all(isinstance(r, TextResult) for r in naive.results)
    assert any(h.leg.startswith("chunks:") for r in mix.results for h in r.found_by)
    assert not any(h.leg.startswith("chunks:") for r in hybrid.results for h in r.found_by)


@pytest.mark.parametrize("recipe", ["local", "global", "hybrid"])
def test_documents_keep_the_chunk_legs_in_every_mode(engine: Engine, recipe: str) -> None:
    build(engine)  # the project holds chunks: a graph built from documents

    response = engine.search("weaving looms", recipe=recipe)

    assert any(h.leg.startswith("chunks:") for r in response.results for h in r.found_by)


def test_modes_respect_type_filters(engine: Engine) -> None:
    ids = build(engine)

    response = engine.search(
        "difference engine", recipe="global", filters={"object_types": ["robot"]}
    )

    assert not legs_of(response, ids["ada"])


@pytest.mark.parametrize("budget", [1, 12, 40, 80, 400])
def test_sections_cite_every_item_and_fit_the_budget(engine: Engine, budget: int) -> None:
    build(engine)
    count = engine.embedder.count_tokens

    found = engine.context(
        "Ada Lovelace letters", recipe="mix", style="sections", max_tokens=budget
    )

    assert found.tokens <= budget and count(found.context) == found.tokens
    for cite, row_id in found.citations.items():
        assert f"[{cite}]" in found.context and row_id
    if budget >= 400:
        assert "## Entities" in found.context and "## Sources" in found.context
        assert "## Relationships" in found.context


def test_sections_give_each_section_its_best_item_first() -> None:
    results = [
        GraphResult(
            id=f"o{i}",
            score=1.0,
            object_type="person",
            key=f"k{i}",
            name=f"Name {i}",
            fields={"description": "x" * 50},
        )
        for i in range(10)
    ] + [TextResult(id="t1", score=0.1, snippet="Überschrift — 東京 " * 3)]

    text, citations = format_sections(results, max_tokens=60, count_tokens=lambda t: len(t) // 4)

    assert citations["S1"] == "t1"  # not starved by ten better entities
    assert "東京" in text and len(text) // 4 <= 60
    assert next(iter(citations)) == "E1"
