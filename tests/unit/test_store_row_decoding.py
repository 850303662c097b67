"""Rows decoded without validation carry the types validation would give them."""

from __future__ import annotations

from pathlib import Path

from kgsearch.engine import Engine
from kgsearch.model import (
    Chunk,
    EmbeddingStatus,
    GraphObject,
    LegHit,
    ObjectIn,
    Relationship,
    RelationshipIn,
)
from kgsearch.store.common import row_table
from kgsearch.store.rows import built
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.testing import FakeEmbedder


def test_decoded_rows_equal_validated_ones(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "kg.db"))
    engine = Engine(store, embedder=FakeEmbedder(8))
    a, b = engine.add_objects(
        [
            ObjectIn(type="Person", key="ada", properties={"name": "Ada"}, tags=["x"]),
            ObjectIn(type="Person", key="bob", properties={"age": 3}),
        ]
    )
    (rel,) = engine.add_relationships([RelationshipIn(type="knows", source=a.id, target=b.id)])
    engine.add_text("Ada knows Bob.", project="default")
    engine.embed_pending()
    objects = store.get_objects("default", [a.id, b.id])
    (edge,) = store.get_relationships("default", [rel.id])
    chunk_ids = [c.id for c in store.list_rows("default", "chunk", limit=5).items]
    chunks = store.get_chunks("default", chunk_ids)
    assert objects and chunks
    rows: list[GraphObject | Relationship | Chunk] = [*objects, edge, *chunks]
    for row in rows:
        assert row == type(row).model_validate(row.model_dump())
        assert row.embedding.status is EmbeddingStatus.EMBEDDED
        assert isinstance(row.created_at.year, int)
    assert isinstance(edge.weight, float) and edge.weight == 1.0
    store.close()


def test_built_model_matches_model_construct() -> None:
    made = built(LegHit, {"leg": "objects:bm25", "rank": 2, "score": 1.5})
    constructed = LegHit.model_construct(leg="objects:bm25", rank=2, score=1.5)
    assert made == constructed
    assert made.model_fields_set == constructed.model_fields_set == {"leg", "rank", "score"}
    assert made.model_dump_json() == constructed.model_dump_json()


def test_decoded_rows_hold_every_field_in_field_order(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "kg.db"))
    engine = Engine(store, embedder=FakeEmbedder(8))
    a, b = engine.add_objects([ObjectIn(type="T", key="a"), ObjectIn(type="T", key="b")])
    (rel,) = engine.add_relationships([RelationshipIn(type="r", source=a.id, target=b.id)])
    (obj,) = store.get_objects("default", [a.id])
    (edge,) = store.get_relationships("default", [rel.id])
    for row in (obj, edge, obj.embedding, edge.embedding):
        assert list(row.__dict__) == list(type(row).model_fields)
        assert row.model_fields_set == set(type(row).model_fields)
    store.close()


def test_empty_json_columns_decode_to_fresh_values(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "kg.db"))
    engine = Engine(store, embedder=FakeEmbedder(8))
    engine.add_objects([ObjectIn(type="T", key="a"), ObjectIn(type="T", key="b")])
    first, second = store.list_rows("default", "object", limit=5).items
    assert isinstance(first, GraphObject) and isinstance(second, GraphObject)
    assert (first.properties, first.tags, first.labels) == ({}, [], [])
    first.properties["x"] = 1
    first.tags.append("y")
    assert (second.properties, second.tags) == ({}, [])
    store.close()


def test_a_tuple_of_the_read_columns_decodes_as_the_row_by_name(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "kg.db"))
    engine = Engine(store, embedder=FakeEmbedder(8))
    a, b = engine.add_objects(
        [ObjectIn(type="T", key="a", tags=["x"], properties={"n": 1}), ObjectIn(type="T", key="b")]
    )
    engine.add_relationships([RelationshipIn(type="r", source=a.id, target=b.id, weight=0.5)])
    engine.add_text("A and B.", project="default")
    engine.embed_pending()
    for kind in ("object", "relationship", "chunk"):
        table = row_table(kind)
        sql = f"SELECT {table.columns} FROM {table.name}"
        by_name, by_position = store.db.all(sql), store.db.tuples(sql)
        assert by_name and all(type(row) is tuple for row in by_position)
        decoded = [table.decode(row) for row in by_position]
        assert decoded == [table.decode(row) for row in by_name]
        assert decoded == [type(row).model_validate(row.model_dump()) for row in decoded]
    store.close()


def test_built_models_share_one_fields_set_that_a_copy_leaves_alone() -> None:
    first = built(LegHit, {"leg": "objects:bm25", "rank": 1, "score": 2.0})
    second = built(LegHit, {"leg": "objects:vector", "rank": 2, "score": 0.5})
    assert first.model_fields_set is second.model_fields_set
    copied = first.model_copy(update={"rank": 3})
    assert copied.rank == 3 and copied.model_fields_set is not first.model_fields_set
    assert second.model_fields_set == {"leg", "rank", "score"}
