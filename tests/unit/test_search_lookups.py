"""Mention lookups: what sources/chunks mention, which sources mention a row, and an
object's neighbourhood."""

from __future__ import annotations

from kgsearch.engine import Engine
from kgsearch.model import (
    ChunkIn,
    Mentioned,
    MentionIn,
    Neighborhood,
    NeighborObject,
    ObjectIn,
    RelationshipIn,
    SourceIn,
)


def _graph(engine: Engine) -> dict[str, str]:
    objs = engine.add_objects(
        [
            ObjectIn(type="Person", key="ada", properties={"name": "Ada"}),
            ObjectIn(type="Company", key="acme", properties={"name": "Acme"}),
            ObjectIn(type="City", key="london", properties={"name": "London"}),
        ]
    )
    ids = {o.key: o.id for o in objs}
    rel = engine.add_relationships(
        [RelationshipIn(type="works_for", source=ids["ada"], target=ids["acme"])]
    )[0]
    ids["works_for"] = rel.id
    engine.add_sources([SourceIn(id=s, title=s.upper()) for s in ("s1", "s2", "s3")])
    engine.add_chunks(
        [
            ChunkIn(id="s1-c1", text="Ada at Acme", source_id="s1", position=0),
            ChunkIn(id="s1-c2", text="Ada again", source_id="s1", position=1),
        ]
    )
    engine.add_mentions(
        [
            # s1: one direct mention of ada and two through its chunks -> 3
            MentionIn(source_id="s1", object=ids["ada"]),
            MentionIn(chunk_id="s1-c1", object=ids["ada"]),
            MentionIn(chunk_id="s1-c2", object=ids["ada"]),
            MentionIn(source_id="s1", relationship_id=rel.id),
            # s2: acme only -> 1 for ada's lookups below that include acme
            MentionIn(source_id="s2", object=ids["acme"]),
            # s3: ada and london -> 1 for ada, 2 with london
            MentionIn(source_id="s3", object=ids["ada"]),
            MentionIn(source_id="s3", object=ids["london"]),
        ]
    )
    return ids


def test_mentioned_by_sources_returns_their_objects_and_relationships(engine: Engine) -> None:
    ids = _graph(engine)
    found = engine.mentioned_by(source_ids=["s1"])
    assert [o.id for o in found.objects] == [ids["ada"]]
    assert [r.id for r in found.relationships] == [ids["works_for"]]


def test_mentioned_by_several_sources_returns_each_object_once(engine: Engine) -> None:
    ids = _graph(engine)
    found = engine.mentioned_by(source_ids=["s2", "s3"])
    assert sorted(o.id for o in found.objects) == sorted([ids["acme"], ids["ada"], ids["london"]])
    assert found.relationships == []


def test_mentioned_by_chunks_returns_their_objects(engine: Engine) -> None:
    ids = _graph(engine)
    found = engine.mentioned_by(chunk_ids=["s1-c2"])
    assert ([o.id for o in found.objects], found.relationships) == ([ids["ada"]], [])


def test_mentioned_by_skips_deleted_objects(engine: Engine) -> None:
    ids = _graph(engine)
    engine.delete("object", [ids["london"]])
    found = engine.mentioned_by(source_ids=["s3"])
    assert [o.id for o in found.objects] == [ids["ada"]]


def test_sources_mentioning_sorts_sources_by_mention_count(engine: Engine) -> None:
    ids = _graph(engine)
    found = engine.sources_mentioning(object_ids=[ids["ada"], ids["london"]])
    assert [(s.source.id, s.mentions) for s in found] == [("s1", 3), ("s3", 2)]


def test_sources_mentioning_breaks_ties_by_source_id(engine: Engine) -> None:
    ids = _graph(engine)
    found = engine.sources_mentioning(object_ids=[ids["acme"], ids["london"]])
    assert [(s.source.id, s.mentions) for s in found] == [("s2", 1), ("s3", 1)]


def test_sources_mentioning_a_relationship(engine: Engine) -> None:
    ids = _graph(engine)
    found = engine.sources_mentioning(relationship_ids=[ids["works_for"]])
    assert [(s.source.id, s.source.title, s.mentions) for s in found] == [("s1", "S1", 1)]


def test_lookups_stay_inside_their_project(engine: Engine) -> None:
    ids = _graph(engine)
    assert engine.sources_mentioning(object_ids=[ids["ada"]], project="other") == []
    assert engine.mentioned_by(source_ids=["s1"], project="other") == Mentioned(
        objects=[], relationships=[]
    )


def test_mentioned_by_a_deleted_source_returns_nothing(engine: Engine) -> None:
    _graph(engine)
    engine.delete("source", ["s3"])
    assert engine.mentioned_by(source_ids=["s3"]) == Mentioned(objects=[], relationships=[])


def test_mentioned_by_a_deleted_chunk_returns_nothing(engine: Engine) -> None:
    _graph(engine)
    engine.delete("chunk", ["s1-c2"])
    assert engine.mentioned_by(chunk_ids=["s1-c2"]) == Mentioned(objects=[], relationships=[])


def test_sources_mentioning_skips_deleted_sources(engine: Engine) -> None:
    ids = _graph(engine)
    engine.delete("source", ["s1"])
    found = engine.sources_mentioning(object_ids=[ids["ada"]])
    assert [(s.source.id, s.mentions) for s in found] == [("s3", 1)]


def test_neighborhood_returns_each_neighbour_with_its_object(engine: Engine) -> None:
    ids = _graph(engine)
    found = engine.neighborhood(ids["ada"])
    assert found == Neighborhood(
        id=ids["ada"],
        neighbors=[
            NeighborObject(
                id=ids["acme"],
                depth=1,
                via=ids["works_for"],
                object=engine.get_object(ids["acme"]),
            )
        ],
    )
