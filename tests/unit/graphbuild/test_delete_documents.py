"""Delete and update by document: reference counting over each row's chunks.

The property: ingest any set of documents, delete any subset, and the graph left is the
graph a fresh ingest of the remaining documents builds (objects, descriptions,
relationships, weights, source chunks, mention links), with no orphan.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgsearch import Engine, connect
from kgsearch.extract.schema import ChunkText, ExtractedEntity, ExtractionResult
from kgsearch.io.documents import Document, document_from_text
from kgsearch.model import ObjectIn
from kgsearch.testing import FakeEmbedder, FakeExtractor

NAMES = ["Ada", "Babbage", "Lovelace", "Turing", "Hopper", "Noether", "Curie", "Euler"]


class Describing(FakeExtractor):
    """FakeExtractor whose entities carry a description: the sentence they are in."""

    def extract(self, chunks: Sequence[ChunkText]) -> list[ExtractionResult]:
        out = []
        for chunk, result in zip(chunks, super().extract(chunks), strict=True):
            described = [
                ExtractedEntity(
                    name=e.name,
                    type=e.type,
                    description=next(
                        (s for s in chunk.text.split(". ") if e.name in s), ""
                    ).strip(),
                )
                for e in result.graph.entities
            ]
            graph = result.graph.model_copy(update={"entities": described})
            out.append(result.model_copy(update={"graph": graph}))
        return out


def make_engine(path: Path) -> Engine:
    extractor = Describing()
    return Engine(
        connect(str(path)), embedder=FakeEmbedder(16), extractors=lambda _n, _d: extractor
    )


def document(source_id: str, text: str) -> Document:
    return dataclasses.replace(document_from_text(text, title=source_id), source_id=source_id)


def ingest(engine: Engine, docs: Sequence[Document]) -> None:
    report = engine.ingest(documents=docs, extractor="fake", chunk_chars=100)
    assert report.ok, report


def graph(engine: Engine) -> dict[str, Any]:
    """The graph, without timestamps, embedding states and run provenance."""
    p = engine.project
    objects = {
        (o.type, o.key): (
            o.name.casefold(),
            o.properties.get("description"),
            o.properties.get("_chunks"),
            o.properties.get("_extracted"),
        )
        for o in engine.store.iter_rows(p, "object")
    }
    relationships = {
        r.id: (
            r.type,
            r.source_id,
            r.target_id,
            r.description,
            r.weight,
            r.source_chunks,
            r.properties.get("keywords"),
            r.properties.get("_chunks"),
        )
        for r in engine.store.iter_rows(p, "relationship")
    }
    chunks = {c.id for c in engine.store.iter_rows(p, "chunk")}
    mentions = {
        (m.chunk_id, m.object_id, m.relationship_id)
        for m in engine.store.iter_rows(p, "mention")
        if m.chunk_id in chunks
    }
    return {
        "objects": objects,
        "relationships": relationships,
        "chunks": chunks,
        "mentions": mentions,
    }


def assert_no_orphan(engine: Engine) -> None:
    p = engine.project
    chunks = {c.id for c in engine.store.iter_rows(p, "chunk")}
    links = list(engine.store.iter_rows(p, "mention"))
    assert {m.chunk_id for m in links if m.chunk_id} <= chunks
    supported = {m.object_id for m in links} | {m.relationship_id for m in links}
    for o in engine.store.iter_rows(p, "object"):
        assert o.id in supported and set(o.properties["_chunks"]) <= chunks
    for r in engine.store.iter_rows(p, "relationship"):
        assert r.id in supported and set(r.source_chunks) <= chunks


sentence = st.builds(
    lambda a, b, w: f"{a} met {b} {w}.",
    st.sampled_from(NAMES),
    st.sampled_from(NAMES),
    st.sampled_from(["in spring", "at the club", "over tea", "about engines"]),
)
texts = st.lists(
    st.lists(sentence, min_size=1, max_size=6).map(" ".join),
    min_size=1,
    max_size=5,
    unique=True,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, st.data())
def test_deleting_documents_leaves_the_graph_a_fresh_ingest_of_the_rest_builds(
    bodies: list[str], data: st.DataObject
) -> None:
    docs = [document(f"doc{i}", t) for i, t in enumerate(bodies)]
    gone = data.draw(st.sets(st.sampled_from([d.source_id for d in docs])))
    rest = [d for d in docs if d.source_id not in gone]
    with tempfile.TemporaryDirectory() as tmp:
        everything = make_engine(Path(tmp) / "all.db")
        ingest(everything, docs)
        report = everything.delete_documents(sorted(gone))
        assert report.sources == len(gone)
        fresh = make_engine(Path(tmp) / "rest.db")
        if rest:
            ingest(fresh, rest)
        assert graph(everything) == graph(fresh)
        assert_no_orphan(everything)
        everything.close()
        fresh.close()


def test_a_deleted_document_takes_what_only_it_said_and_rewrites_the_rest(
    tmp_path: Path,
) -> None:
    engine = make_engine(tmp_path / "kg.db")
    ingest(
        engine,
        [
            document("a", "Ada met Babbage over tea. Ada met Turing in spring."),
            document("b", "Ada met Babbage at the club."),
        ],
    )
    engine.embed_pending()
    ada = engine.get_object_by_key("thing", "ada")
    assert len(ada.properties["_chunks"]) == 2
    babbage = engine.get_object_by_key("thing", "babbage")
    (edge,) = [r for r in engine.list_rows("relationship").items if r.target_id == babbage.id]
    assert edge.weight == 2  # seen in both documents

    report = engine.delete_documents(["a", "missing"])

    assert report.sources == 1 and report.chunks == 1
    assert report.objects_deleted == 1  # Turing: only document a named it
    assert report.relationships_deleted == 1 and report.relationships_updated == 1
    assert {o.key for o in engine.list_rows("object").items} == {"ada", "babbage"}
    ada = engine.get_object(ada.id)
    assert ada.properties["description"] == "Ada met Babbage at the club."
    assert ada.embedding.status == "pending"  # its text changed
    (edge,) = engine.list_rows("relationship").items
    assert edge.weight == 1 and edge.description == "Ada met Babbage at the club."
    assert engine.list_rows("source").items[0].id == "b"
    assert engine.extraction_status().counts.get("done") == 1
    assert engine.delete_documents(["a"]).sources == 0  # already gone


def test_re_ingesting_a_changed_document_updates_and_never_duplicates(tmp_path: Path) -> None:
    engine = make_engine(tmp_path / "kg.db")
    ingest(engine, [document("a", "Ada met Babbage over tea. Hopper met Curie in spring.")])
    before = graph(engine)
    ingest(engine, [document("a", "Ada met Babbage over tea. Noether met Curie in spring.")])
    after = graph(engine)
    fresh = make_engine(tmp_path / "fresh.db")
    ingest(fresh, [document("a", "Ada met Babbage over tea. Noether met Curie in spring.")])
    assert after == graph(fresh)
    assert ("thing", "hopper") in before["objects"] and ("thing", "hopper") not in after["objects"]
    assert len(after["objects"]) == 4


def test_imported_objects_an_extraction_linked_to_stay_when_their_chunks_go(
    tmp_path: Path,
) -> None:
    engine = make_engine(tmp_path / "kg.db")
    engine.add_objects(
        [ObjectIn(type="thing", key="ada", properties={"name": "Ada", "description": "Imported."})]
    )
    ingest(engine, [document("a", "Ada met Babbage over tea.")])
    ada = engine.get_object_by_key("thing", "ada")
    assert ada.properties["description"] == "Imported."  # not the extraction's
    assert list(ada.properties["_chunks"]) and "_extracted" not in ada.properties
    engine.delete("source", ["a"])
    ada = engine.get_object_by_key("thing", "ada")
    assert ada.properties == {"name": "Ada", "description": "Imported."}
    assert [o.key for o in engine.list_rows("object").items] == ["ada"]
    assert engine.list_rows("chunk").items == []
