"""Dated facts into the graph: validity from what chunks state, and single-valued
relations where a later fact closes an earlier one (both kept, the reason recorded),
derived again on every write so re-ingesting or forgetting chunks keeps it right."""

from __future__ import annotations

from datetime import UTC, datetime

from kgsearch import Engine
from kgsearch.extract.schema import (
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    ExtractionResult,
)
from kgsearch.model import ChunkIn, Filters, Relationship, SourceIn
from kgsearch.writes.contributions import INVALIDATED
from kgsearch.writes.extracted import ChunkExtraction, add_extractions
from kgsearch.writes.forget import forget_chunks
from kgsearch.writes.merge import merge_objects

OFFICE = "Duke of Medina Sidonia"


def holder(
    chunk: str, person: str, start: str | None, end: str | None = None, *, single: bool = True
) -> ChunkExtraction:
    relation = ExtractedRelation(
        source=OFFICE,
        target=person,
        relation="officeholder",
        description=f"{person} held the title {OFFICE}.",
        valid_from=start,
        valid_to=end,
        one_value_per="source" if single else None,
    )
    graph = ExtractedGraph(
        entities=[
            ExtractedEntity(name=OFFICE, type="title", description="A Spanish noble title."),
            ExtractedEntity(name=person, type="person", description="A duke."),
        ],
        relationships=[relation],
    )
    return ChunkExtraction(chunk, "s1", ExtractionResult(chunk_id=chunk, graph=graph))


def setup(engine: Engine, chunks: int = 4) -> None:
    engine.add_sources([SourceIn(id="s1", title="dukes")])
    engine.add_chunks(
        [ChunkIn(id=f"c{i}", text=f"chunk {i}", source_id="s1", position=i) for i in range(chunks)]
    )


def write(engine: Engine, *items: ChunkExtraction) -> None:
    add_extractions(engine._writes(None), list(items))


def by_holder(engine: Engine) -> dict[str, Relationship]:
    rels = engine.store.get_relationships(
        "default", [r.id for r in engine.store.iter_rows("default", "relationship")]
    )
    names = {o.id: o.name for o in engine.store.iter_rows("default", "object")}
    return {names[r.target_id]: r for r in rels}


def year(y: int) -> datetime:
    return datetime(y, 1, 1, tzinfo=UTC)


def holders_at(engine: Engine, when: datetime | None) -> set[str]:
    response = engine.search(
        "officeholder Duke of Medina Sidonia",
        objects=None,
        chunks=None,
        filters=Filters(as_of=when),
    )
    names = {o.id: o.name for o in engine.store.iter_rows("default", "object")}
    rels = engine.store.get_relationships("default", [r.id for r in response.results])
    return {names[r.target_id] for r in rels}


def test_dates_become_validity_periods(engine: Engine) -> None:
    setup(engine)
    write(engine, holder("c0", "Gaspar Juan", "1664", "1667", single=False))
    rel = by_holder(engine)["Gaspar Juan"]
    # "from 1664 to 1667": from the first instant of 1664 up to (not including) 1668
    assert (rel.valid_from, rel.valid_to) == (year(1664), year(1668))
    stored = rel.properties["_chunks"]["c0"][0]
    assert (stored["valid_from"], stored["valid_to"]) == ("1664", "1667")


def test_a_later_holder_closes_an_open_ended_earlier_one(engine: Engine) -> None:
    setup(engine)
    write(
        engine,
        holder("c0", "Gaspar Alfonso", "1636"),
        holder("c1", "Gaspar Juan", "1664", "1667"),
        holder("c2", "Juan Claros", "1667"),
    )
    rels = by_holder(engine)
    alfonso, juan, claros = rels["Gaspar Alfonso"], rels["Gaspar Juan"], rels["Juan Claros"]
    assert (alfonso.valid_from, alfonso.valid_to) == (year(1636), year(1664))
    assert alfonso.properties[INVALIDATED]["by"] == juan.id
    assert "holds one value at a time" in alfonso.properties[INVALIDATED]["reason"]
    # a stated end stays (the text says 1667) and the latest holder stays open
    assert juan.valid_to == year(1668) and INVALIDATED not in juan.properties
    assert claros.valid_to is None and INVALIDATED not in claros.properties

    engine.embed_pending()
    assert holders_at(engine, datetime(1650, 6, 1, tzinfo=UTC)) == {"Gaspar Alfonso"}
    assert holders_at(engine, datetime(1665, 6, 1, tzinfo=UTC)) == {"Gaspar Juan"}
    assert holders_at(engine, datetime(1700, 6, 1, tzinfo=UTC)) == {"Juan Claros"}
    assert holders_at(engine, None) == {"Juan Claros"}  # valid now


def test_order_of_arrival_does_not_matter_and_rewriting_changes_nothing(engine: Engine) -> None:
    setup(engine)
    write(engine, holder("c2", "Juan Claros", "1667"))
    write(engine, holder("c0", "Gaspar Alfonso", "1636"))
    first = by_holder(engine)
    assert first["Gaspar Alfonso"].valid_to == year(1667)
    assert first["Gaspar Alfonso"].properties[INVALIDATED]["by"] == first["Juan Claros"].id

    for chunk, name, start in (("c2", "Juan Claros", "1667"), ("c0", "Gaspar Alfonso", "1636")):
        forget_chunks(engine._writes(None), [chunk])  # what a re-extraction does first
        write(engine, holder(chunk, name, start))
    again = by_holder(engine)
    for name in first:
        assert (again[name].valid_from, again[name].valid_to) == (
            first[name].valid_from,
            first[name].valid_to,
        )
        # a forgotten row is made again: only its first-extraction time may differ
        assert again[name].properties.keys() == first[name].properties.keys()
        for key in set(first[name].properties) - {"extracted_at"}:
            assert again[name].properties[key] == first[name].properties[key]


def test_forgetting_the_later_fact_opens_the_earlier_one(engine: Engine) -> None:
    setup(engine)
    write(engine, holder("c0", "Gaspar Alfonso", "1636"), holder("c2", "Juan Claros", "1667"))
    assert by_holder(engine)["Gaspar Alfonso"].valid_to == year(1667)
    forget_chunks(engine._writes(None), ["c2"])
    rels = by_holder(engine)
    assert set(rels) == {"Gaspar Alfonso"}
    assert rels["Gaspar Alfonso"].valid_to is None
    assert INVALIDATED not in rels["Gaspar Alfonso"].properties


def test_undated_or_unmarked_facts_close_nothing(engine: Engine) -> None:
    setup(engine)
    write(
        engine,
        holder("c0", "Gaspar Alfonso", "1636", single=False),
        holder("c1", "Juan Claros", "1667", single=False),
    )
    assert {r.valid_to for r in by_holder(engine).values()} == {None}

    other = Engine(engine.store, embedder=engine.embedder, project="undated")
    other.add_sources([SourceIn(id="s1", title="dukes")])
    other.add_chunks([ChunkIn(id="u0", text="x", source_id="s1"), ChunkIn(id="u1", text="y")])
    add_extractions(
        other._writes(None),
        [holder("u0", "Gaspar Alfonso", None), holder("u1", "Juan Claros", "1667")],
    )
    rels = other.store.get_relationships(
        "undated", [r.id for r in other.store.iter_rows("undated", "relationship")]
    )
    assert len(rels) == 2 and {r.valid_to for r in rels} == {None}
    assert not any(INVALIDATED in r.properties for r in rels)


def test_an_unreadable_date_is_dropped_and_the_fact_kept(engine: Engine) -> None:
    setup(engine)
    write(engine, holder("c0", "Gaspar Alfonso", "sometime after the war", "present"))
    rel = by_holder(engine)["Gaspar Alfonso"]
    assert (rel.valid_from, rel.valid_to) == (None, None)
    assert "valid_from" not in rel.properties["_chunks"]["c0"][0]


def test_merging_two_spellings_of_a_holder_keeps_the_closing_right(engine: Engine) -> None:
    setup(engine)
    write(
        engine,
        holder("c0", "Gaspar Alfonso", "1636"),
        holder("c1", "Juan Claros", "1667"),
        holder("c2", "Juan Claros Pérez", "1667"),
    )
    names = {o.name: o.id for o in engine.store.iter_rows("default", "object")}
    merge_objects(
        engine._writes(None),
        names["Juan Claros"],
        [names["Juan Claros Pérez"]],
        compatible=lambda a, b: True,
    )
    rels = by_holder(engine)
    assert set(rels) == {"Gaspar Alfonso", "Juan Claros"}
    alfonso = rels["Gaspar Alfonso"]
    assert alfonso.valid_to == year(1667)
    assert alfonso.properties[INVALIDATED]["by"] == rels["Juan Claros"].id  # a live row
    assert rels["Juan Claros"].valid_to is None
