"""Import (JSONL, JSON graph, CSV) and export through the Engine, on every store backend."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kgsearch.engine import Engine
from kgsearch.errors import ImportFailed
from kgsearch.model import ChunkIn, Kind, MentionIn, ObjectIn, ObjectRef, RelationshipIn, SourceIn
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder

SAMPLE = Path(__file__).parents[2] / "data" / "sample" / "metaqa-movies.jsonl"
EMPTY = {"objects": 0, "relationships": 0, "chunks": 0, "sources": 0, "mentions": 0}


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def obj(key: str, name: str | None = None, type_: str = "Person", **props: Any) -> dict[str, Any]:
    return {
        "kind": "object",
        "type": type_,
        "key": key,
        "properties": {"name": name or key.title(), **props},
    }


def rel(source: str, target: str, type_: str = "KNOWS") -> dict[str, Any]:
    return {
        "kind": "relationship",
        "type": type_,
        "source": {"type": "Person", "key": source},
        "target": {"type": "Person", "key": target},
    }


def snapshot(store: Store, project: str = "default") -> dict[str, Any]:
    """Everything an export must carry over, by id, including the embedding texts."""
    return {
        "objects": {
            o.id: (o.type, o.key, o.tags, o.properties, o.labels, o.embedding.text)
            for o in store.iter_rows(project, "object")
        },
        "relationships": {
            r.id: (
                r.type,
                r.source_id,
                r.target_id,
                r.label,
                r.description,
                r.properties,
                r.weight,
                r.valid_from,
                r.valid_to,
                r.source_chunks,
                r.embedding.text,
            )
            for r in store.iter_rows(project, "relationship")
        },
        "sources": {s.id: (s.title, s.uri, s.metadata) for s in store.iter_rows(project, "source")},
        "chunks": {
            c.id: (c.text, c.source_id, c.position, c.metadata, c.embedding.text)
            for c in store.iter_rows(project, "chunk")
        },
        "mentions": sorted(
            (m.source_id or "", m.chunk_id or "", m.object_id or "", m.relationship_id or "")
            for m in store.iter_rows(project, "mention")
        ),
    }


# formats -------------------------------------------------------------------------


def test_import_jsonl_writes_every_kind(engine: Engine, tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "graph.jsonl",
        [
            obj("ada", "Ada", role="CEO"),
            obj("bob"),
            rel("ada", "bob"),
            {"kind": "source", "id": "s1", "title": "Diary"},
            {"kind": "chunk", "id": "c1", "text": "Ada met Bob.", "source_id": "s1"},
            {"kind": "mention", "chunk_id": "c1", "object": {"type": "Person", "key": "ada"}},
        ],
    )

    counts = engine.import_files([path])

    assert counts == {"objects": 2, "relationships": 1, "sources": 1, "chunks": 1, "mentions": 1}
    assert engine.store.counts("default") == {
        "objects": 2,
        "relationships": 1,
        "chunks": 1,
        "sources": 1,
        "mentions": 1,
    }
    ada = engine.get_object_by_key("Person", "ada")
    assert ada.properties == {"name": "Ada", "role": "CEO"}
    assert ada.embedding.text == "[Type: #person] [Role: CEO] Ada"
    [r] = engine.list_rows("relationship").items
    assert (r.source_id, r.embedding.text) == (ada.id, "Ada knows Bob")
    [chunk] = engine.store.get_chunks("default", ["c1"])
    assert chunk.embedding.text == "Diary: Ada met Bob."
    assert [m.object_id for m in engine.store.mentions("default", chunk_ids=["c1"])] == [ada.id]


def test_import_json_graph(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "graph.json"
    path.write_text(
        json.dumps(
            {
                "objects": [
                    {"type": "Person", "key": "ada", "properties": {"name": "Ada"}},
                    {"type": "City", "key": "london", "tags": ["capital"]},
                ],
                "relationships": [
                    {
                        "type": "LIVES_IN",
                        "source": {"type": "Person", "key": "ada"},
                        "target": {"type": "City", "key": "london"},
                        "description": "since 1815",
                    }
                ],
            }
        ),
        encoding="utf-8",
    )

    counts = engine.import_files([path])

    assert counts == {"objects": 2, "relationships": 1, "sources": 0, "chunks": 0, "mentions": 0}
    london = engine.get_object_by_key("City", "london")
    assert london.tags == ["capital"]
    [r] = engine.list_rows("relationship").items
    assert r.embedding.text == "Ada lives in london: since 1815"
    assert r.target_id == london.id


def test_import_csv_objects_and_relationships(engine: Engine, tmp_path: Path) -> None:
    objects = tmp_path / "objects.csv"
    objects.write_text(
        "type,key,name,age,tags\nPerson,ada,Ada,36,vip;founder\nPerson,bob,Bob,,\n",
        encoding="utf-8",
    )
    rels = tmp_path / "relationships.csv"
    rels.write_text(
        "type,source_type,source_key,target_type,target_key,weight,since\n"
        "KNOWS,Person,ada,Person,bob,0.5,1840\n",
        encoding="utf-8",
    )

    counts = engine.import_files([rels, objects])

    assert counts == {"objects": 2, "relationships": 1, "sources": 0, "chunks": 0, "mentions": 0}
    ada = engine.get_object_by_key("Person", "ada")
    bob = engine.get_object_by_key("Person", "bob")
    assert (ada.properties, ada.tags) == ({"name": "Ada", "age": "36"}, ["vip", "founder"])
    assert (bob.properties, bob.tags) == ({"name": "Bob"}, [])
    [r] = engine.list_rows("relationship").items
    assert (r.type, r.source_id, r.target_id, r.weight, r.properties) == (
        "KNOWS",
        ada.id,
        bob.id,
        0.5,
        {"since": "1840"},
    )


def test_import_csv_relationships_by_id(engine: Engine, tmp_path: Path) -> None:
    ada, bob = engine.add_objects(
        [ObjectIn(type="Person", key="ada"), ObjectIn(type="Person", key="bob")]
    )
    rels = tmp_path / "rels.csv"
    rels.write_text(f"type,source_id,target_id\nKNOWS,{ada.id},{bob.id}\n", encoding="utf-8")

    assert engine.import_files([rels])["relationships"] == 1
    assert [(r.source_id, r.target_id) for r in engine.list_rows("relationship").items] == [
        (ada.id, bob.id)
    ]


# errors --------------------------------------------------------------------------

BAD_LINES = [
    json.dumps(obj("ada")),
    json.dumps(obj("bob")),
    '{"kind": "object", "type": "Person", "key": "cy"',
    json.dumps(rel("ada", "bob")),
    json.dumps({"kind": "widget", "type": "Person", "key": "w"}),
    json.dumps({**obj("dee"), "id": "dee-id"}),
    json.dumps({"kind": "object", "type": "Person", "properties": {"name": "No Key"}}),
    json.dumps(rel("bob", "dee")),
    json.dumps(rel("ada", "nobody")),
    json.dumps({"kind": "chunk", "id": "c1", "text": "fine"}),
    json.dumps({"kind": "relationship", "type": "KNOWS", "source": "dee-id", "target": "dee-id"}),
    json.dumps({"kind": "mention", "chunk_id": "c1", "object": {"type": "Person", "key": "ada"}}),
    json.dumps({"kind": "mention", "chunk_id": "c1", "object": "dee-id"}),
]


def bad_file(tmp_path: Path) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(BAD_LINES) + "\n", encoding="utf-8")
    return path


def test_bad_file_reports_exactly_the_bad_lines(engine: Engine, tmp_path: Path) -> None:
    path = bad_file(tmp_path)

    with pytest.raises(ImportFailed) as caught:
        engine.import_files([path])

    errors = caught.value.details["errors"]
    assert [e["location"] for e in errors] == [f"{path}:3", f"{path}:5", f"{path}:7", f"{path}:9"]
    reasons = [e["reason"] for e in errors]
    for reason, phrase in zip(
        reasons,
        ["invalid JSON", "unknown kind 'widget'", "key: Field required", "Person/nobody"],
        strict=True,
    ):
        assert phrase in reason, reasons
    assert caught.value.details["error_count"] == 4


def test_bad_file_writes_nothing(engine: Engine, tmp_path: Path) -> None:
    with pytest.raises(ImportFailed):
        engine.import_files([bad_file(tmp_path)])

    assert engine.store.counts("default") == EMPTY
    assert engine.store.projects() == []


def test_bad_file_leaves_existing_rows_unchanged(engine: Engine, tmp_path: Path) -> None:
    good = write_jsonl(tmp_path / "good.jsonl", [obj("ada", "Ada Original"), obj("zed")])
    engine.import_files([good])
    before = snapshot(engine.store)

    with pytest.raises(ImportFailed):
        engine.import_files([bad_file(tmp_path)])

    assert snapshot(engine.store) == before


def test_bad_csv_row_is_reported_by_its_line(engine: Engine, tmp_path: Path) -> None:
    objects = tmp_path / "objects.csv"
    objects.write_text("type,key\nPerson,ada\nPerson,bob\n", encoding="utf-8")
    rels = tmp_path / "rels.csv"
    rels.write_text(
        "type,source_type,source_key,target_type,target_key\n"
        "KNOWS,Person,ada,Person,bob\n"
        "KNOWS,Person,ada,Person,ghost\n",
        encoding="utf-8",
    )

    with pytest.raises(ImportFailed) as caught:
        engine.import_files([objects, rels])

    assert [e["location"] for e in caught.value.details["errors"]] == [f"{rels}:3"]
    assert engine.store.counts("default") == EMPTY


def test_bad_json_graph_file_writes_nothing_and_keeps_the_index(
    engine: Engine, tmp_path: Path
) -> None:
    engine.import_files([write_jsonl(tmp_path / "good.jsonl", [obj("ada", "Zebulon")])])
    before = snapshot(engine.store)
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps(
            {
                "objects": [obj("ada", "Quillon"), {"type": "Person"}],
                "relationships": [rel("ada", "ada")],
            }
        ),
        encoding="utf-8",
    )

    with pytest.raises(ImportFailed) as caught:
        engine.import_files([path])

    assert [e["location"] for e in caught.value.details["errors"]] == [f"{path}:objects[1]"]
    assert snapshot(engine.store) == before
    search = engine.store.text_search
    ada = engine.get_object_by_key("Person", "ada").id
    assert [i for i, _ in search("default", Kind.OBJECT, "zebulon", limit=5)] == [ada]
    assert search("default", Kind.OBJECT, "quillon", limit=5) == []


def test_json_graph_import_keeps_the_lexical_index_in_sync(engine: Engine, tmp_path: Path) -> None:
    engine.import_files([write_jsonl(tmp_path / "v1.jsonl", [obj("ada", "Zebulon"), obj("bob")])])
    engine.add_relationships(
        [
            RelationshipIn(
                type="KNOWS",
                source=ObjectRef(type="Person", key="ada"),
                target=ObjectRef(type="Person", key="bob"),
            )
        ]
    )
    engine.delete("object", [engine.get_object_by_key("Person", "bob").id])
    path = tmp_path / "v2.json"
    path.write_text(
        json.dumps({"objects": [obj("ada", "Quillon"), obj("cy", "Walrus")]}), encoding="utf-8"
    )

    engine.import_files([path])

    ada = engine.get_object_by_key("Person", "ada").id
    cy = engine.get_object_by_key("Person", "cy").id
    search = engine.store.text_search
    assert search("default", Kind.OBJECT, "zebulon", limit=5) == []
    assert [i for i, _ in search("default", Kind.OBJECT, "quillon", limit=5)] == [ada]
    assert [i for i, _ in search("default", Kind.OBJECT, "walrus", limit=5)] == [cy]
    assert search("default", Kind.OBJECT, "bob", limit=5) == []
    assert search("default", Kind.RELATIONSHIP, "bob", limit=5) == []


def test_missing_file_fails_before_writing(engine: Engine, tmp_path: Path) -> None:
    good = write_jsonl(tmp_path / "good.jsonl", [obj("ada")])
    missing = tmp_path / "missing.jsonl"

    with pytest.raises(ImportFailed) as caught:
        engine.import_files([good, missing])

    assert caught.value.details["errors"] == [
        {"location": str(missing), "reason": "file not found"}
    ]
    assert engine.store.counts("default") == EMPTY


# idempotence and order -----------------------------------------------------------


def graph_records() -> list[dict[str, Any]]:
    return [
        obj("ada", "Ada", role="CEO"),
        obj("bob"),
        obj("cy"),
        rel("ada", "bob"),
        rel("bob", "cy", "LIKES"),
        {"kind": "source", "id": "s1", "title": "Diary"},
        {"kind": "chunk", "id": "c1", "text": "Ada met Bob.", "source_id": "s1"},
        {"kind": "mention", "chunk_id": "c1", "object": {"type": "Person", "key": "ada"}},
    ]


def test_reimporting_the_same_file_changes_nothing(engine: Engine, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "graph.jsonl", graph_records())

    first = engine.import_files([path])
    before = snapshot(engine.store)
    second = engine.import_files([path])

    assert second == first
    assert snapshot(engine.store) == before
    assert engine.store.counts("default") == {
        "objects": 3,
        "relationships": 2,
        "chunks": 1,
        "sources": 1,
        "mentions": 1,
    }


def test_relationships_may_come_before_their_objects(engine: Engine, tmp_path: Path) -> None:
    records = graph_records()
    path = write_jsonl(tmp_path / "graph.jsonl", list(reversed(records)))

    engine.import_files([path])

    in_order = engine.store
    assert in_order.counts("default")["relationships"] == 2
    assert sorted(r.embedding.text for r in engine.list_rows("relationship").items) == [
        "Ada knows Bob",
        "Bob likes Cy",
    ]


def test_import_gives_the_same_ids_as_engine_writes(
    engine: Engine, store_factory: Any, tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "graph.jsonl", graph_records())
    engine.import_files([path])
    other = Engine(store_factory(), embedder=FakeEmbedder(32))
    other.add_objects(
        [
            ObjectIn(type="Person", key="ada", properties={"name": "Ada", "role": "CEO"}),
            ObjectIn(type="Person", key="bob", properties={"name": "Bob"}),
            ObjectIn(type="Person", key="cy", properties={"name": "Cy"}),
        ]
    )
    other.add_relationships(
        [
            RelationshipIn(
                type="KNOWS",
                source=ObjectRef(type="Person", key="ada"),
                target=ObjectRef(type="Person", key="bob"),
            ),
            RelationshipIn(
                type="LIKES",
                source=ObjectRef(type="Person", key="bob"),
                target=ObjectRef(type="Person", key="cy"),
            ),
        ]
    )
    other.add_sources([SourceIn(id="s1", title="Diary")])
    other.add_chunks([ChunkIn(id="c1", text="Ada met Bob.", source_id="s1")])
    other.add_mentions([MentionIn(chunk_id="c1", object=ObjectRef(type="Person", key="ada"))])

    assert snapshot(other.store) == snapshot(engine.store)


def test_a_repeated_object_record_keeps_the_first_stored_id(engine: Engine, tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "graph.jsonl",
        [
            {**obj("ada"), "id": "ada-1"},
            obj("bob"),
            obj("ada", "Ada Lovelace"),
            rel("ada", "bob"),
        ],
    )

    engine.import_files([path])

    ada = engine.get_object_by_key("Person", "ada")
    [r] = engine.list_rows("relationship").items
    assert (ada.id, ada.properties) == ("ada-1", {"name": "Ada Lovelace"})
    assert (r.source_id, r.embedding.text) == ("ada-1", "Ada Lovelace knows Bob")
    assert [n.id for n in engine.neighbors([engine.get_object_by_key("Person", "bob").id])] == [
        "ada-1"
    ]


# export round trip ----------------------------------------------------------------


def rich_graph(engine: Engine) -> None:
    engine.add_objects(
        [
            ObjectIn(
                type="Person",
                key="ada",
                tags=["mathematician"],
                labels=["vip"],
                properties={"name": "Ada Lovelace", "born": 1815, "notes": {"a": [1, "ü"]}},
            ),
            ObjectIn(type="Machine", key="engine", properties={"name": "Analytical Engine"}),
            ObjectIn(type="Person", key="charles", id="custom-id-charles"),
        ]
    )
    engine.add_relationships(
        [
            RelationshipIn(
                type="WROTE_ABOUT",
                source=ObjectRef(type="Person", key="ada"),
                target=ObjectRef(type="Machine", key="engine"),
                label="wrote the first program for",
                description="Note G",
                properties={"year": 1843},
                weight=0.75,
                valid_from=datetime(1843, 1, 1, tzinfo=UTC),
                source_chunks=["c1"],
            ),
            RelationshipIn(
                id="rel-custom",
                type="DESIGNED",
                source="custom-id-charles",
                target=ObjectRef(type="Machine", key="engine"),
                valid_to=datetime(1871, 10, 18, tzinfo=UTC),
            ),
        ]
    )
    engine.add_sources([SourceIn(id="s1", title="Sketch", uri="https://example.org/s")])
    engine.add_chunks(
        [
            ChunkIn(id="c1", text="Note G describes an algorithm.", source_id="s1", position=7),
            ChunkIn(id="c2", text="No source here.", metadata={"lang": "en"}),
        ]
    )
    rels = engine.list_rows("relationship").items
    engine.add_mentions(
        [
            MentionIn(chunk_id="c1", object=ObjectRef(type="Person", key="ada")),
            MentionIn(source_id="s1", relationship_id=rels[0].id),
        ]
    )


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_export_then_import_round_trips(
    engine: Engine, store_factory: Any, tmp_path: Path, fmt: Any
) -> None:
    rich_graph(engine)
    path = tmp_path / f"export.{fmt}"

    exported = engine.export(path, fmt=fmt)
    fresh = Engine(store_factory(), embedder=FakeEmbedder(32))
    imported = fresh.import_files([path])

    assert exported == {
        "object": 3,
        "relationship": 2,
        "source": 1,
        "chunk": 2,
        "mention": 2,
    }
    assert imported == {"objects": 3, "relationships": 2, "sources": 1, "chunks": 2, "mentions": 2}
    assert snapshot(fresh.store) == snapshot(engine.store)


def test_export_of_an_empty_project_imports_to_nothing(
    engine: Engine, store_factory: Any, tmp_path: Path
) -> None:
    path = tmp_path / "empty.jsonl"

    assert engine.export(path) == {}
    fresh = Engine(store_factory(), embedder=FakeEmbedder(32))
    assert fresh.import_files([path]) == {
        "objects": 0,
        "relationships": 0,
        "sources": 0,
        "chunks": 0,
        "mentions": 0,
    }


# renames -----------------------------------------------------------------------


def test_reimport_with_a_new_name_rewrites_relationship_texts(
    engine: Engine, tmp_path: Path
) -> None:
    records = [obj("ada", "Ada"), obj("bob"), obj("cy"), rel("ada", "bob"), rel("bob", "cy")]
    engine.import_files([write_jsonl(tmp_path / "v1.jsonl", records)])
    engine.embed_pending()
    ab, bc = (r.id for r in engine.list_rows("relationship").items)
    records[0] = obj("ada", "Ada Lovelace")

    engine.import_files([write_jsonl(tmp_path / "v2.jsonl", records)])

    renamed = engine.get_relationship(ab).embedding
    assert (renamed.text, renamed.status, renamed.embedded_text) == (
        "Ada Lovelace knows Bob",
        "pending",
        "Ada knows Bob",
    )
    untouched = engine.get_relationship(bc).embedding
    assert (untouched.text, untouched.status) == ("Bob knows Cy", "embedded")
    engine.embed_pending()
    assert engine.get_relationship(ab).embedding.embedded_text == "Ada Lovelace knows Bob"


# sample data -----------------------------------------------------------------------


def test_import_metaqa_sample(engine: Engine) -> None:
    counts = engine.import_files([SAMPLE])

    assert counts == {
        "objects": 7155,
        "relationships": 11666,
        "sources": 0,
        "chunks": 0,
        "mentions": 0,
    }
    assert engine.store.counts("default") == {
        "objects": 7155,
        "relationships": 11666,
        "chunks": 0,
        "sources": 0,
        "mentions": 0,
    }
    movie = engine.get_object_by_key("Movie", "'71")
    person = engine.get_object_by_key("Person", "Yann Demange")
    assert [n.id for n in engine.neighbors([person.id], direction="in")] == [movie.id]
    hits = engine.store.text_search("default", Kind.OBJECT, "Yann Demange", limit=3)
    assert hits[0][0] == person.id
