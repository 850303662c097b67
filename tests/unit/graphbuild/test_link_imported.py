"""Extracted entities land on the objects already in the graph (imported structured
data keyed and typed its own way), never across incompatible types."""

from __future__ import annotations

from collections.abc import Sequence

from kgsearch import Engine
from kgsearch.extract.schema import (
    ChunkText,
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    ExtractionResult,
)
from kgsearch.model import ObjectIn
from kgsearch.testing import FakeEmbedder


class Scripted:
    """Finds the same entities in every chunk."""

    name = "scripted"
    version = "scripted@1"

    def __init__(self, entities: list[tuple[str, str]], relations: list[tuple[str, str, str]]):
        self.entities, self.relations = entities, relations

    def extract(self, chunks: Sequence[ChunkText]) -> list[ExtractionResult]:
        graph = ExtractedGraph(
            entities=[
                ExtractedEntity(name=n, type=t, description=f"{n} in the text.")
                for n, t in self.entities
            ],
            relationships=[
                ExtractedRelation(source=s, target=t, relation=r) for s, t, r in self.relations
            ],
        )
        return [ExtractionResult(chunk_id=c.id, graph=graph, extractor=self.name) for c in chunks]


def engine_with(store_engine: Engine, extractor: Scripted) -> Engine:
    return Engine(
        store_engine.store, embedder=FakeEmbedder(16), extractors=lambda _n, _d: extractor
    )


def test_text_links_to_imported_objects_of_its_type_only(engine: Engine) -> None:
    movie, person, king = engine.add_objects(
        [
            ObjectIn(type="Movie", key="Jesse James", properties={"release_year": "1939"}),
            ObjectIn(type="Person", key="Jesse James"),
            ObjectIn(type="Person", key="Henry King"),
        ]
    )
    scripted = Scripted(
        [("Jesse James", "movie"), ("Henry King", "person"), ("Tyrone Power", "person")],
        [("Jesse James", "Henry King", "directed by")],
    )
    text_engine = engine_with(engine, scripted)

    text_engine.ingest(texts=["Jesse James was directed by Henry King."], extractor="scripted")

    keys = sorted((o.type, o.key) for o in engine.list_rows("object").items)
    assert keys == [
        ("Movie", "Jesse James"),
        ("Person", "Henry King"),
        ("Person", "Jesse James"),
        ("person", "tyrone power"),  # nothing imported: a new extracted object
    ]
    (edge,) = engine.list_rows("relationship").items
    assert (edge.source_id, edge.target_id) == (movie.id, king.id)
    linked = engine.get_object(movie.id)
    assert linked.properties["release_year"] == "1939"  # imported fields kept
    assert "description" not in linked.properties  # its own description is not replaced
    assert list(linked.properties["_chunks"])  # but it cites the chunk
    assert "_chunks" not in engine.get_object(person.id).properties  # the person untouched
