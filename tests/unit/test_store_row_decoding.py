"""Rows decoded without validation carry the types validation would give them."""

from __future__ import annotations

from pathlib import Path

from kgsearch.engine import Engine
from kgsearch.model import (
    Chunk,
    EmbeddingStatus,
    GraphObject,
    ObjectIn,
    Relationship,
    RelationshipIn,
)
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
