"""Merging entities by hand and undoing it; proposals without applying them."""

from __future__ import annotations

from typing import Any

import pytest

from kgsearch import Engine
from kgsearch.errors import InvalidRequest, NotFound
from kgsearch.extract.schema import (
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    ExtractionResult,
)
from kgsearch.model import ChunkIn, ObjectIn, SourceIn
from kgsearch.writes.extracted import ChunkExtraction, add_extractions


def extracted(engine: Engine) -> None:
    engine.add_sources([SourceIn(id="s")])
    engine.add_chunks([ChunkIn(id=f"c{i}", text=f"t{i}", source_id="s") for i in range(3)])

    def item(chunk: str, names: list[str], rels: list[tuple[str, str]]) -> ChunkExtraction:
        graph = ExtractedGraph(
            entities=[
                ExtractedEntity(name=n, type="person", description=f"{n} in {chunk}.")
                for n in names
            ],
            relationships=[
                ExtractedRelation(source=a, target=b, relation="knew", strength=2) for a, b in rels
            ],
        )
        return ChunkExtraction(chunk, "s", ExtractionResult(chunk_id=chunk, graph=graph))

    add_extractions(
        engine._writes(None),
        [
            item("c0", ["Ada Lovelace", "Charles Babbage"], [("Ada Lovelace", "Charles Babbage")]),
            item(
                "c1",
                ["Ada", "Charles Babbage", "Mary"],
                [("Ada", "Charles Babbage"), ("Ada", "Mary")],
            ),
            item("c2", ["Ada", "Ada Lovelace"], [("Ada", "Ada Lovelace")]),
        ],
    )


def snapshot(engine: Engine) -> dict[str, Any]:
    p = engine.project
    strip = {"created_at", "updated_at", "embedding"}
    return {
        "objects": sorted(
            (o.model_dump(mode="json", exclude=strip) for o in engine.store.iter_rows(p, "object")),
            key=lambda o: o["id"],
        ),
        "relationships": sorted(
            (
                r.model_dump(mode="json", exclude=strip | {"properties"})
                | {"props": {k: v for k, v in r.properties.items() if k != "extracted_at"}}
                for r in engine.store.iter_rows(p, "relationship")
            ),
            key=lambda r: r["id"],
        ),
        "mentions": sorted(
            (m.chunk_id or "", m.object_id or "", m.relationship_id or "")
            for m in engine.store.iter_rows(p, "mention")
            if m.object_id is None or engine.store.get_objects(p, [m.object_id])
        ),
    }


def test_merge_then_split_gives_back_the_same_graph(engine: Engine) -> None:
    extracted(engine)
    before = snapshot(engine)
    full = engine.get_object_by_key("person", "ada lovelace")
    short = engine.get_object_by_key("person", "ada")

    report = engine.merge_entities(full.id, [short.id])

    assert report.objects == [short.id] and report.self_loops == 1  # Ada knew Ada Lovelace
    merged = engine.get_object(full.id)
    assert set(merged.properties["_chunks"]) == {"c0", "c1", "c2"}
    assert "Ada in c1." in merged.properties["description"]
    babbage = engine.get_object_by_key("person", "charles babbage")
    (edge,) = [r for r in engine.store.relationships_touching(engine.project, [babbage.id])]
    assert edge.source_id == full.id and edge.weight == 4  # two chunks joined, strengths summed
    assert edge.source_chunks == ["c0", "c1"]
    with pytest.raises(NotFound):
        engine.get_object(short.id)

    engine.split_entity(full.id, short.id)

    assert snapshot(engine) == before


def test_incompatible_types_are_refused_unless_forced(engine: Engine) -> None:
    film, person = engine.add_objects(
        [ObjectIn(type="film", key="Jesse James"), ObjectIn(type="person", key="Jesse James")]
    )
    with pytest.raises(InvalidRequest, match="incompatible types"):
        engine.merge_entities(film.id, [person.id])
    assert engine.merge_entities(film.id, [person.id], force=True).objects == [person.id]
    with pytest.raises(NotFound):
        engine.split_entity(film.id, "nobody")


def test_candidates_propose_merges_within_types_only(engine: Engine) -> None:
    engine.add_objects(
        [
            ObjectIn(type="person", key="Zoë Ancelot"),
            ObjectIn(type="person", key="zoe ancelot"),
            ObjectIn(type="org", key="International Business Machines"),
            ObjectIn(type="org", key="IBM"),
            ObjectIn(type="film", key="Jesse James"),
            ObjectIn(type="person", key="Jesse James"),
            ObjectIn(type="city", key="東京"),
            ObjectIn(type="city", key="東京 "),
        ]
    )
    names = {o.id: o.key for o in engine.list_rows("object").items}

    proposals = engine.entity_candidates(vectors=False)

    pairs = {frozenset((names[m.a_id], names[m.b_id])): m.reason for m in proposals}
    assert pairs[frozenset(("Zoë Ancelot", "zoe ancelot"))] == "exact"
    assert pairs[frozenset(("International Business Machines", "IBM"))] == "acronym"
    assert (
        frozenset(("Jesse James",)) not in pairs
        and len([p for p in pairs if "Jesse James" in p]) == 0
    )
    assert pairs[frozenset(("東京", "東京 "))] == "exact"
    assert len(engine.list_rows("object").items) == 8  # nothing applied
