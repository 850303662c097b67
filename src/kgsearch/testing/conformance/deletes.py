"""Soft delete hides a row from every read; purge removes it for good."""

from __future__ import annotations

from kgsearch.engine import Engine
from kgsearch.extract.schema import (
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    ExtractionResult,
)
from kgsearch.model import ChunkIn, Kind, Mention, MentionIn, ObjectRef, SourceIn
from kgsearch.testing import FakeEmbedder
from kgsearch.testing.conformance.builders import DIMS, all_ids, build_graph, ids, knows, person
from kgsearch.testing.oracles import bfs
from kgsearch.writes.extracted import ChunkExtraction, add_extractions


def test_soft_deleted_object_is_hidden_from_every_read(engine: Engine) -> None:
    by_key, _ = build_graph(engine)
    engine.add_objects([person("zed", "Zebulon Quartz")])
    zed = engine.get_object_by_key("Person", "zed")
    engine.add_relationships([knows("zed", "a")])
    engine.embed_pending()
    vector = FakeEmbedder(DIMS).embed_query("Zebulon Quartz")
    assert ids(engine.store.text_search("default", Kind.OBJECT, "Zebulon", limit=5)) == [zed.id]

    assert engine.delete("object", [zed.id]) == 1

    store = engine.store
    assert store.get_objects("default", [zed.id]) == []
    assert store.endpoints("default", [zed.id]) == {}
    assert store.resolve("default", [ObjectRef(type="Person", key="zed")]) == {}
    assert zed.id not in all_ids(store, "default", "object")
    assert zed.id not in {n.id for n in store.neighbors("default", [by_key["a"]], depth=3)}
    assert store.neighbors("default", [zed.id], depth=2) == []
    assert store.text_search("default", Kind.OBJECT, "Zebulon Quartz", limit=5) == []
    assert zed.id not in ids(store.vector_search("default", Kind.OBJECT, vector, limit=100))
    assert store.counts("default")["objects"] == len(by_key)
    assert store.vectors("default", Kind.OBJECT, [zed.id]) == {}
    assert engine.delete("object", [zed.id]) == 0


def test_deleting_an_object_deletes_its_relationships(engine: Engine) -> None:
    by_key, edges = build_graph(engine)
    engine.embed_pending()
    touching = {rid for rid, _, s, t in edges if by_key["c"] in (s, t)}

    engine.delete("object", [by_key["c"]])

    store = engine.store
    assert store.get_relationships("default", sorted(touching)) == []
    assert store.relationships_touching("default", [by_key["c"]]) == []
    assert set(all_ids(store, "default", "relationship")) == {r for r, *_ in edges} - touching
    assert store.counts("default")["relationships"] == len(edges) - len(touching)
    hits = store.text_search("default", Kind.RELATIONSHIP, "C", limit=100)
    assert not set(ids(hits)) & touching
    query = FakeEmbedder(DIMS).embed_query("C knows D")
    assert not set(ids(store.vector_search("default", Kind.RELATIONSHIP, query, limit=100))) & (
        touching
    )
    remaining = [e for e in edges if e[0] not in touching]
    assert {n.id: n.depth for n in store.neighbors("default", [by_key["a"]], depth=3)} == bfs(
        remaining, [by_key["a"]], depth=3
    )


def test_soft_deleted_relationship_and_chunk_are_hidden(engine: Engine) -> None:
    engine.add_objects([person("ada"), person("bob")])
    [rel] = engine.add_relationships([knows("ada", "bob")])
    engine.add_chunks([ChunkIn(id="c1", text="quokka island notes")])
    engine.embed_pending()

    assert engine.delete("relationship", [rel.id]) == 1
    assert engine.delete("chunk", ["c1"]) == 1

    store = engine.store
    assert store.get_relationships("default", [rel.id]) == []
    assert store.get_chunks("default", ["c1"]) == []
    assert store.neighbors("default", [rel.source_id]) == []
    assert store.text_search("default", Kind.CHUNK, "quokka", limit=5) == []
    assert store.text_search("default", Kind.RELATIONSHIP, "Ada", limit=5) == []
    query = FakeEmbedder(DIMS).embed_query("quokka island notes")
    assert store.vector_search("default", Kind.CHUNK, query, limit=5) == []
    assert store.vector_search("default", Kind.RELATIONSHIP, query, limit=5) == []
    assert store.counts("default") == {
        "objects": 2,
        "relationships": 0,
        "chunks": 0,
        "sources": 0,
        "mentions": 0,
    }


def test_purge_removes_deleted_rows_their_mentions_and_relationships(engine: Engine) -> None:
    ada, bob, _ = engine.add_objects([person("ada"), person("bob"), person("cy")])
    rel_ab, rel_bc = engine.add_relationships([knows("ada", "bob"), knows("bob", "cy")])
    engine.add_sources([SourceIn(id="s1", title="Notes")])
    engine.add_chunks([ChunkIn(id="c1", text="ada met bob", source_id="s1")])
    engine.add_mentions(
        [
            MentionIn(chunk_id="c1", object=ada.id),
            MentionIn(chunk_id="c1", object=bob.id),
            MentionIn(chunk_id="c1", relationship_id=rel_ab.id),
            MentionIn(chunk_id="c1", relationship_id=rel_bc.id),
        ]
    )
    engine.delete("object", [ada.id])

    # the object and the one relationship it took with it
    assert engine.purge() == 2

    store = engine.store
    assert store.mentions("default", chunk_ids=["c1"]) == [
        Mention(project="default", chunk_id="c1", object_id=bob.id),
        Mention(project="default", chunk_id="c1", relationship_id=rel_bc.id),
    ]
    assert store.counts("default") == {
        "objects": 2,
        "relationships": 1,
        "chunks": 1,
        "sources": 1,
        "mentions": 2,
    }
    assert engine.purge() == 0


def test_purged_object_comes_back_as_a_new_row(engine: Engine) -> None:
    [ada] = engine.add_objects([person("ada")])
    engine.embed_pending()
    engine.delete("object", [ada.id])
    [revived] = engine.add_objects([person("ada")])
    assert revived.embedding.status == "embedded"  # soft delete keeps the vector
    engine.delete("object", [ada.id])

    engine.purge()
    [fresh] = engine.add_objects([person("ada")])

    assert fresh.id == ada.id
    assert fresh.embedding.status == "pending"
    assert fresh.embedding.embedded_text is None
    assert fresh.created_at > ada.created_at


def test_chunks_of_sources_and_deleting_their_mentions(engine: Engine) -> None:
    engine.add_sources([SourceIn(id="s1"), SourceIn(id="s2")])
    engine.add_chunks(
        [
            ChunkIn(id="c1", text="one", source_id="s1"),
            ChunkIn(id="c2", text="two", source_id="s1"),
            ChunkIn(id="c3", text="three", source_id="s2"),
        ]
    )
    engine.add_objects([person("a", "Ada")])
    engine.add_mentions(
        [
            MentionIn(chunk_id=c, source_id=s, object=ObjectRef(type="Person", key="a"))
            for c, s in (("c1", "s1"), ("c2", "s1"), ("c3", "s2"))
        ]
    )
    store = engine.store
    assert store.chunk_ids_of("default", ["s1"]) == ["c1", "c2"]
    assert store.chunk_ids_of("default", ["s1", "s2", "nope"]) == ["c1", "c2", "c3"]
    assert store.chunk_ids_of("other", ["s1"]) == []
    store.delete("default", "chunk", ["c2"])
    assert store.chunk_ids_of("default", ["s1"]) == ["c1"]

    assert store.delete_mentions("default", ["c1", "c2", "nope"]) == 2
    assert {m.chunk_id for m in store.mentions("default", chunk_ids=["c1", "c2", "c3"])} == {"c3"}
    assert store.delete_mentions("other", ["c3"]) == 0


def test_mention_pairs_link_objects_to_live_chunks(engine: Engine) -> None:
    engine.add_sources([SourceIn(id="s1")])
    engine.add_chunks([ChunkIn(id=c, text=c, source_id="s1") for c in ("c1", "c2")])
    engine.add_objects([person("a", "Ada"), person("b", "Bob")])
    engine.add_mentions(
        [
            MentionIn(chunk_id=c, source_id="s1", object=ObjectRef(type="Person", key=k))
            for c, k in (("c1", "a"), ("c2", "b"), ("c2", "a"))
        ]
        + [MentionIn(source_id="s1", object=ObjectRef(type="Person", key="b"))]  # no chunk
    )
    store = engine.store
    ids = {o.key: o.id for o in store.iter_rows("default", "object")}

    assert store.mention_pairs("default") == [
        (ids["a"], "c1"),
        (ids["b"], "c2"),
        (ids["a"], "c2"),
    ]
    assert store.mention_pairs("other") == []
    store.delete("default", "chunk", ["c2"])
    assert store.mention_pairs("default") == [(ids["a"], "c1")]


def test_deleting_a_document_takes_its_chunks_and_unsupported_rows(engine: Engine) -> None:
    engine.add_sources([SourceIn(id="s1"), SourceIn(id="s2")])
    engine.add_chunks(
        [
            ChunkIn(id="c1", text="Ada met Bob.", source_id="s1"),
            ChunkIn(id="c2", text="Ada.", source_id="s2"),
        ]
    )

    def found(chunk: str, names: list[str], rel: bool) -> ChunkExtraction:
        relationships = [ExtractedRelation(source="Ada", target="Bob", relation="met")]
        graph = ExtractedGraph(
            entities=[
                ExtractedEntity(name=n, type="person", description=f"{n} in {chunk}.")
                for n in names
            ],
            relationships=relationships if rel else [],
        )
        return ChunkExtraction(chunk, None, ExtractionResult(chunk_id=chunk, graph=graph))

    add_extractions(
        engine._writes(None), [found("c1", ["Ada", "Bob"], True), found("c2", ["Ada"], False)]
    )
    report = engine.delete_documents(["s1"])
    assert (report.sources, report.chunks, report.objects_deleted) == (1, 1, 1)
    assert report.relationships_deleted == 1
    (ada,) = engine.list_rows("object").items
    assert ada.key == "ada" and ada.properties["description"] == "Ada in c2."
    assert engine.list_rows("relationship").items == []
    assert [c.id for c in engine.list_rows("chunk").items] == ["c2"]
    assert engine.store.mentions("default", chunk_ids=["c1"]) == []
