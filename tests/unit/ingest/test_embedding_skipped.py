"""Objects extraction named once are not embedded on their own (``skipped``) until a
second passage names them or a relationship reaches them; the status report counts
them apart, and stores written before the state existed accept it after migrating."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from kgsearch import Engine
from kgsearch.extract.schema import (
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    ExtractionResult,
)
from kgsearch.model import ChunkIn, Kind, ObjectIn, ObjectRef, RelationshipIn, SourceIn
from kgsearch.store.sqlite.schema import MIGRATIONS
from kgsearch.writes.extracted import ChunkExtraction, add_extractions


def extraction(
    chunk: str,
    names: list[str],
    rels: Sequence[tuple[str, str]] = (),
) -> ChunkExtraction:
    graph = ExtractedGraph(
        entities=[ExtractedEntity(name=n, type="person", description=f"{n} here.") for n in names],
        relationships=[
            ExtractedRelation(source=s, target=t, relation="knows", description=f"{s} knows {t}")
            for s, t in rels
        ],
    )
    result = ExtractionResult(chunk_id=chunk, graph=graph, extractor="spacy", model="m")
    return ChunkExtraction(chunk, "s1", result)


def setup(engine: Engine) -> None:
    engine.add_sources([SourceIn(id="s1", title="doc")])
    engine.add_chunks(
        [ChunkIn(id=f"c{i}", text=f"chunk {i}", source_id="s1", position=i) for i in range(3)]
    )


def write(engine: Engine, *items: ChunkExtraction) -> None:
    add_extractions(engine._writes(None), list(items))


def status(engine: Engine, name: str) -> str:
    return str(engine.get_object_by_key("person", name.casefold()).embedding.status)


def test_an_object_named_once_without_a_relationship_is_skipped(engine: Engine) -> None:
    setup(engine)
    write(
        engine,
        extraction("c0", ["Ada", "Bob", "Cy"], [("Ada", "Bob")]),
        extraction("c1", ["Dee", "Cy"]),
    )
    assert [status(engine, n) for n in ("Ada", "Bob", "Cy", "Dee")] == [
        "pending",
        "pending",
        "pending",
        "skipped",
    ]


def test_a_second_passage_wakes_a_skipped_object(engine: Engine) -> None:
    setup(engine)
    write(engine, extraction("c0", ["Dee"]))
    assert status(engine, "Dee") == "skipped"
    write(engine, extraction("c1", ["Dee"]))
    assert status(engine, "Dee") == "pending"


def test_a_relationship_wakes_a_skipped_object(engine: Engine) -> None:
    setup(engine)
    write(engine, extraction("c0", ["Dee"]), extraction("c1", ["Eve"]))
    engine.add_relationships(
        [
            RelationshipIn(
                type="knows",
                source=ObjectRef(type="person", key="dee"),
                target=ObjectRef(type="person", key="eve"),
            )
        ]
    )
    assert [status(engine, "Dee"), status(engine, "Eve")] == ["pending", "pending"]


def test_an_object_written_before_extraction_is_never_skipped(engine: Engine) -> None:
    setup(engine)
    engine.add_objects([ObjectIn(type="person", key="dee", properties={"name": "Dee"})])
    engine.embed_pending()
    write(engine, extraction("c0", ["Dee"]))
    assert status(engine, "Dee") in ("pending", "embedded")


def test_skipped_rows_are_counted_apart_and_never_embedded(engine: Engine) -> None:
    setup(engine)
    write(engine, extraction("c0", ["Ada", "Bob"], [("Ada", "Bob")]), extraction("c1", ["Dee"]))
    report = engine.embed_pending()
    assert report.embedded == 3 + 3  # two objects, one relationship, three chunks
    after = engine.embedding_status()
    objects = next(r for r in after.rows if r.kind == Kind.OBJECT)
    assert (objects.total, objects.embedded, objects.pending, objects.skipped) == (3, 2, 0, 1)
    assert (after.pending, after.skipped, after.percent_embedded) == (0, 1, 100.0)
    assert engine.embedding_todo().total == 0
    assert status(engine, "Dee") == "skipped"


def test_a_skipped_object_is_still_found_by_its_name(engine: Engine) -> None:
    setup(engine)
    write(engine, extraction("c0", ["Dorothea Brooke"]))
    engine.embed_pending()
    found = engine.search("Dorothea Brooke", result_types="graph")
    assert [h.id for h in found.results][:1] == [
        engine.get_object_by_key("person", "dorothea brooke").id
    ]


def test_a_store_made_before_the_skipped_state_accepts_it_after_migrating(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path, isolation_level=None)

    def execute(sql: str) -> None:
        old.execute(sql)

    at = [m.name for m in MIGRATIONS].index("m012_embedding_skipped")
    for migration in MIGRATIONS[:at]:
        migration.apply(execute)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("SELECT count(*) FROM objects").fetchall()  # caches the old schema
    last = MIGRATIONS[at]
    old.execute("BEGIN")
    last.apply(execute)
    old.execute("COMMIT")
    insert = (
        "INSERT INTO objects (id, project, type, key, created_at, updated_at, status) "
        "VALUES (?, 'p', 't', ?, '', '', 'skipped')"
    )
    other.execute(insert, ("a", "a"))
    old.execute(insert, ("b", "b"))
    assert old.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert old.execute("SELECT count(*) FROM objects WHERE status = 'skipped'").fetchall() == [(2,)]
