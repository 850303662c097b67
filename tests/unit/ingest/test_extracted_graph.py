"""Extraction records into graph rows: keys, types, merged descriptions, provenance,
and idempotence (writing the same records twice changes nothing)."""

from __future__ import annotations

from kgsearch import Engine
from kgsearch.extract.schema import (
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    ExtractionResult,
)
from kgsearch.model import ChunkIn, SourceIn
from kgsearch.text.names import entity_key, entity_type, relation_type
from kgsearch.writes.extracted import ChunkExtraction, add_extractions


def result(
    chunk: str, entities: list[tuple[str, str, str]], rels: list[tuple[str, str, str, str]]
) -> ExtractionResult:
    return ExtractionResult(
        chunk_id=chunk,
        graph=ExtractedGraph(
            entities=[ExtractedEntity(name=n, type=t, description=d) for n, t, d in entities],
            relationships=[
                ExtractedRelation(source=s, target=t, relation=r, description=d, strength=7)
                for s, t, r, d in rels
            ],
        ),
        extractor="llm",
        model="fake:m",
        prompt_id="extract/general",
        prompt_version="3",
    )


def setup(engine: Engine) -> None:
    engine.add_sources([SourceIn(id="s1", title="doc")])
    engine.add_chunks(
        [ChunkIn(id=f"c{i}", text=f"chunk {i}", source_id="s1", position=i) for i in range(3)]
    )


def write(engine: Engine, *items: ChunkExtraction) -> None:
    add_extractions(engine._writes(None), list(items))


def test_keys_normalise_width_case_and_space_but_keep_every_script() -> None:
    assert entity_key("  Ｔｈｅ   BEATLES ") == "the beatles"
    assert entity_key("東京") == "東京" and entity_key("Москва") == "москва"
    assert entity_key("東京") != entity_key("大阪")
    assert entity_type("Legal Case") == "legal_case" and entity_type("") == "entity"
    assert relation_type("works for") == "works_for" and relation_type("  ") == "related_to"


def test_same_name_of_two_types_is_two_objects_and_one_type_merges_across_chunks(
    engine: Engine,
) -> None:
    setup(engine)
    write(
        engine,
        ChunkExtraction(
            "c0",
            "s1",
            result(
                "c0",
                [("Jesse James", "person", "An outlaw."), ("Jesse James", "movie", "A 1939 film.")],
                [],
            ),
        ),
        ChunkExtraction(
            "c1", "s1", result("c1", [("JESSE  JAMES", "Person", "Robbed trains.")], [])
        ),
    )
    person = engine.get_object_by_key("person", "jesse james")
    movie = engine.get_object_by_key("movie", "jesse james")
    assert person.id != movie.id
    assert person.properties["description"] == "An outlaw.\nRobbed trains."
    assert person.name == "Jesse James"
    cited = engine.mentioned_by(chunk_ids=["c1"])
    assert [o.id for o in cited.objects] == [person.id]


def test_relationships_keep_provenance_and_union_their_chunks(engine: Engine) -> None:
    setup(engine)
    rel = ("Ada", "Babbage", "worked with", "Ada worked with Babbage on the engine design.")
    write(engine, ChunkExtraction("c0", "s1", result("c0", [("Ada", "person", "")], [rel])))
    write(
        engine,
        ChunkExtraction(
            "c2",
            "s1",
            result("c2", [], [("ada", "babbage", "Worked With", "They corresponded for years.")]),
        ),
    )
    (edge,) = engine.list_rows("relationship").items
    assert edge.type == "worked_with" and edge.label == "worked with"
    assert edge.source_chunks == ["c0", "c2"]
    assert edge.description == (
        "Ada worked with Babbage on the engine design.\nThey corresponded for years."
    )
    assert edge.weight == 14  # strengths summed over the chunks that saw it
    assert sorted(edge.properties["_chunks"]) == ["c0", "c2"]
    assert edge.properties["prompt"] == "extract/general@3"
    assert edge.properties["model"] == "fake:m"
    babbage = engine.get_object_by_key("entity", "babbage")  # endpoint never listed as entity
    assert babbage.name == "Babbage"


def test_writing_the_same_records_twice_changes_nothing(engine: Engine) -> None:
    setup(engine)
    item = ChunkExtraction(
        "c0",
        "s1",
        result(
            "c0",
            [("Ada", "person", "A mathematician."), ("Babbage", "person", "An inventor.")],
            [("Ada", "Babbage", "knew", "Ada knew Babbage through London society circles.")],
        ),
    )
    write(engine, item)
    first = (
        engine.list_rows("object").items,
        engine.list_rows("relationship").items,
        engine.store.mentions(engine.project, chunk_ids=["c0"]),
    )
    write(engine, item)
    again = (
        engine.list_rows("object").items,
        engine.list_rows("relationship").items,
        engine.store.mentions(engine.project, chunk_ids=["c0"]),
    )
    strip = lambda rows: [r.model_dump(exclude={"updated_at", "embedding"}) for r in rows]  # noqa: E731
    assert strip(first[0]) == strip(again[0]) and strip(first[1]) == strip(again[1])
    assert first[2] == again[2] and len(again[2]) == 3


def test_self_loops_and_blank_names_are_not_written(engine: Engine) -> None:
    setup(engine)
    write(
        engine,
        ChunkExtraction(
            "c0",
            "s1",
            result(
                "c0", [("  ", "person", "x"), ("Ada", "person", "")], [("Ada", "ADA", "is", "x")]
            ),
        ),
    )
    assert [o.key for o in engine.list_rows("object").items] == ["ada"]
    assert engine.list_rows("relationship").items == []


def test_a_facts_supporting_sentence_is_kept_as_its_provenance(engine: Engine) -> None:
    setup(engine)
    stated = ExtractionResult(
        chunk_id="c0",
        graph=ExtractedGraph(
            entities=[ExtractedEntity(name="Ada", type="person"), ExtractedEntity(name="Acme")],
            relationships=[
                ExtractedRelation(
                    source="Ada",
                    target="Acme",
                    relation="works for",
                    description="Ada works for Acme",
                    evidence="In 1843 Ada, a mathematician, worked for Acme in London.",
                )
            ],
        ),
        extractor="spacy",
    )
    write(engine, ChunkExtraction("c0", "s1", stated))
    (rel,) = engine.list_rows("relationship", limit=5).items
    assert rel.description == "Ada works for Acme"  # the short fact is what is embedded
    (entry,) = rel.properties["_chunks"]["c0"]
    assert entry["evidence"] == "In 1843 Ada, a mathematician, worked for Acme in London."
