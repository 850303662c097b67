"""The one graph-write path: pure row builders, tested without a store, and the batch
writer, which reads back only the object ids its caller could not know."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kgsearch import Engine
from kgsearch.model import GraphObject, Mention, ObjectIn, ObjectRef, Relationship
from kgsearch.store.base import Store
from kgsearch.store.records import Endpoint
from kgsearch.text import EnrichmentConfig
from kgsearch.writes.batch import GraphBatch, MentionDrop, write_batch, write_objects
from kgsearch.writes.extracted import _Edge, _Entity, mention_rows, object_in, relationship_in
from kgsearch.writes.forget import object_changes
from kgsearch.writes.merge import _moves, _new_ends
from kgsearch.writes.rows import TextRules, object_id

STAMP = "2026-01-01T00:00:00+00:00"
WHEN = datetime(2026, 1, 1, tzinfo=UTC)


def entity(name: str, chunk: str, description: str) -> _Entity:
    ent = _Entity("person", name.lower(), name, provenance={"extractor": "llm", "model": ""})
    ent.add(chunk, name, description)
    return ent


def test_a_new_entity_becomes_an_extracted_object_with_its_chunk_and_first_time() -> None:
    made = object_in(entity("Ada", "c1", "A mathematician."), None, STAMP)
    assert made == ObjectIn(
        type="person",
        key="ada",
        properties={
            "name": "Ada",
            "_extracted": True,
            "_provenance": {"extractor": "llm", "extracted_at": STAMP},
            "_chunks": {"c1": [{"name": "Ada", "description": "A mathematician."}]},
            "description": "A mathematician.",
        },
    )


def test_an_entity_landing_on_a_stored_object_keeps_its_chunks_and_first_time() -> None:
    first = object_in(entity("Ada", "c1", "A mathematician."), None, STAMP)
    stored = Endpoint("id-1", "person", "ada", dict(first.properties))
    again = object_in(entity("Ada", "c2", "A writer."), stored, "2027-01-01T00:00:00+00:00")
    assert again.properties["_chunks"] == {
        "c1": [{"name": "Ada", "description": "A mathematician."}],
        "c2": [{"name": "Ada", "description": "A writer."}],
    }
    assert again.properties["_provenance"]["extracted_at"] == STAMP
    assert again.properties["description"] == "A mathematician.\nA writer."


def test_a_new_edge_becomes_a_relationship_whose_weight_is_its_strength() -> None:
    ends = {
        ("person", "ada"): Endpoint("a", "person", "ada", {"name": "Ada"}),
        ("person", "bob"): Endpoint("b", "person", "bob", {"name": "Bob"}),
    }
    edge = _Edge("knew", "knew", ("person", "ada"), ("person", "bob"))
    edge.entries["c1"] = [{"description": "Old friends.", "keywords": ["friend"], "strength": 3}]
    made = relationship_in(edge, "r1", ends, None, STAMP)
    assert (made.id, made.source, made.target, made.label) == ("r1", "a", "b", "knew")
    assert (made.description, made.weight, made.source_chunks) == ("Old friends.", 3.0, ["c1"])
    assert made.properties["keywords"] == ["friend"]
    assert made.properties["extracted_at"] == STAMP


def test_every_chunk_mentions_what_was_extracted_from_it() -> None:
    ada = entity("Ada", "c1", "")
    ends = {("person", "ada"): Endpoint("a", "person", "ada", {})}
    edge = _Edge("knew", "knew", ("person", "ada"), ("person", "ada"))
    edge.entries["c2"] = [{}]
    rows = mention_rows(
        "p", {"c1": "s1", "c2": None}, {("person", "ada"): ada}, ends, [edge], ["r"]
    )
    assert rows == [
        Mention(project="p", chunk_id="c1", source_id="s1", object_id="a"),
        Mention(project="p", chunk_id="c2", source_id=None, relationship_id="r"),
    ]


def rel(id: str, source: str, target: str, chunks: dict[str, Any] | None = None) -> Relationship:
    return Relationship(
        id=id,
        project="p",
        type="knew",
        source_id=source,
        target_id=target,
        properties={"_chunks": chunks} if chunks else {},
        created_at=WHEN,
        updated_at=WHEN,
    )


def test_a_merge_plan_drops_self_loops_joins_meeting_edges_and_moves_the_rest() -> None:
    touching = [rel("ab", "a", "b"), rel("ak", "a", "k", {"c1": [{}]}), rel("ac", "a", "c")]
    there = rel("kk-c", "k", "c", {"c0": [{}]})
    ends = _new_ends("k", ["a", "b"], touching)
    new_ids = {"ab": "kk", "ak": "kk", "ac": "kk-c"}
    moves = _moves(["a", "b"], touching, ends, new_ids, {"kk-c": there})
    assert moves.loops == 2  # a–b and a–k both become k–k
    assert moves.made == {"a": [], "b": []}
    assert moves.joined == {"a": [{"id": "kk-c", "chunks": {}}], "b": []}
    assert list(moves.moved) == ["kk-c"]
    assert moves.moved["kk-c"].properties["_chunks"] == {"c0": [{}]}


def test_forgetting_a_chunk_deletes_an_object_only_it_supported() -> None:
    def obj(id: str, chunks: dict[str, Any]) -> GraphObject:
        props = {"_extracted": True, "name": id, "_chunks": chunks}
        return GraphObject(
            id=id,
            project="p",
            type="person",
            key=id,
            properties=props,
            created_at=WHEN,
            updated_at=WHEN,
        )

    updates, deletes = object_changes(
        [obj("only", {"c1": [{"name": "only"}]}), obj("both", {"c1": [{}], "c2": [{}]})],
        {"c1"},
        {},
    )
    assert deletes == ["only"]
    assert [u.id for u in updates] == ["both"]
    assert updates[0].properties["_chunks"] == {"c2": [{}]}


class Counting:
    """A store proxy that counts ``resolve`` calls and the refs asked."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.resolved: list[ObjectRef] = []

    def resolve(self, project: str, refs: Any) -> Any:
        self.resolved.extend(refs)
        return self.inner.resolve(project, refs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_write_objects_reads_ids_back_by_id_and_keeps_a_revived_objects_own(
    engine: Engine,
) -> None:
    rules = TextRules(EnrichmentConfig())
    p = engine.project
    (old,) = engine.add_objects([ObjectIn(id="custom", type="person", key="ada")])
    engine.delete("object", [old.id])
    rows = [
        rules.object_row(p, ObjectIn(type="person", key="ada", properties={"x": 1})),
        rules.object_row(p, ObjectIn(type="person", key="bob")),
    ]
    assert rows[0].id != "custom"
    store = Counting(engine.store)
    ids = write_objects(store, p, rows)
    # the soft-deleted object written again keeps its own id; the new one has its row's
    assert ids == ["custom", object_id(p, "person", "bob")]
    assert store.resolved == []  # nothing asked by type and key from the writer
    assert [o.properties for o in engine.store.get_objects(p, ["custom"])] == [{"x": 1}]


def test_a_batch_deletes_first_then_writes_and_counts_what_went(engine: Engine) -> None:
    p = engine.project
    a, b = engine.add_objects([ObjectIn(type="person", key="a"), ObjectIn(type="person", key="b")])
    rules = TextRules(EnrichmentConfig())
    batch = GraphBatch(
        delete_objects=[a.id],
        drop_mentions=[MentionDrop([])],
        objects=[rules.object_row(p, ObjectIn(type="person", key="c"))],
        mentions=[Mention(project=p, source_id=None, chunk_id="c9", object_id=b.id)],
    )
    written = write_batch(engine.store, p, batch)
    assert (written.objects_deleted, written.relationships_deleted) == (1, 0)
    assert sorted(o.key for o in engine.store.iter_rows(p, "object")) == ["b", "c"]
