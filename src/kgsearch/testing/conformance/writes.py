"""Writes: upserts keep ids, relationships need live endpoints, lists page."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kgsearch.engine import Engine
from kgsearch.errors import Conflict, InvalidRequest, NotFound
from kgsearch.model import (
    MAX_ID_BYTES,
    ChunkIn,
    Kind,
    MentionIn,
    ObjectIn,
    ObjectRef,
    RelationshipIn,
    SourceIn,
)
from kgsearch.store.base import Endpoint, RelationshipRow
from kgsearch.testing.conformance.builders import knows, person

# upsert, get, list ---------------------------------------------------------------


def test_upsert_same_object_twice_keeps_one_row_and_its_id(engine: Engine) -> None:
    first = engine.add_objects([person("ada")])
    second = engine.add_objects([person("ada")])

    assert [o.id for o in second] == [o.id for o in first]
    assert engine.store.counts("default")["objects"] == 1
    assert second[0].created_at == first[0].created_at
    assert second[0].updated_at == first[0].updated_at


def test_upsert_with_new_properties_updates_row_and_keeps_id(engine: Engine) -> None:
    [before] = engine.add_objects([person("ada", "Ada", role="CEO")])
    [after] = engine.add_objects([person("ada", "Ada Lovelace", role="CTO")])

    assert after.id == before.id
    assert after.properties == {"name": "Ada Lovelace", "role": "CTO"}
    assert engine.get_object(before.id).properties == {"name": "Ada Lovelace", "role": "CTO"}
    assert after.created_at == before.created_at
    assert engine.store.counts("default")["objects"] == 1


def test_store_upsert_matches_by_type_and_key_not_by_row_id(engine: Engine) -> None:
    [existing] = engine.add_objects([person("ada")])
    row = engine.rules.object_row("default", ObjectIn(type="Person", key="ada", id="other-id"))

    assert engine.store.upsert_objects("default", [row]) == [existing.id]
    assert engine.store.get_objects("default", ["other-id"]) == []


def test_same_key_under_another_type_is_another_object(engine: Engine) -> None:
    a, b = engine.add_objects(
        [ObjectIn(type="Person", key="paris"), ObjectIn(type="City", key="paris")]
    )

    assert a.id != b.id
    assert engine.store.counts("default")["objects"] == 2


def test_get_objects_returns_asked_order_and_skips_missing(engine: Engine) -> None:
    a, _, c = engine.add_objects([person("a"), person("b"), person("c")])

    got = engine.store.get_objects("default", [c.id, "missing", a.id, c.id])

    assert [o.id for o in got] == [c.id, a.id, c.id]


def test_get_by_key_and_resolve(engine: Engine) -> None:
    [ada] = engine.add_objects([person("ada", role="CEO")])

    assert engine.get_object_by_key("Person", "ada") == ada
    assert engine.store.resolve(
        "default", [ObjectRef(type="Person", key="ada"), ObjectRef(type="Person", key="nobody")]
    ) == {
        ObjectRef(type="Person", key="ada"): Endpoint(
            ada.id, "Person", "ada", {"name": "Ada", "role": "CEO"}
        )
    }
    with pytest.raises(NotFound):
        engine.get_object_by_key("Person", "nobody")
    with pytest.raises(NotFound):
        engine.get_object("missing")


@pytest.mark.parametrize("limit", [1, 4, 5, 23, 100])
def test_list_pages_cover_every_object_exactly_once(engine: Engine, limit: int) -> None:
    created = engine.add_objects([person(f"p{i:02}") for i in range(23)])

    seen: list[str] = []
    pages = 0
    cursor: str | None = None
    while True:
        page = engine.list_rows("object", limit=limit, cursor=cursor)
        pages += 1
        assert len(page.items) <= limit
        seen.extend(o.id for o in page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor

    assert seen == [o.id for o in created]
    assert pages == -(-23 // limit)


def test_list_pages_relationships_in_insertion_order(engine: Engine) -> None:
    engine.add_objects([person(f"p{i}") for i in range(6)])
    rels = engine.add_relationships([knows(f"p{i}", f"p{(i + 1) % 6}") for i in range(6)])

    first = engine.list_rows("relationship", limit=4)
    second = engine.list_rows("relationship", limit=4, cursor=first.next_cursor)

    assert [r.id for r in first.items] + [r.id for r in second.items] == [r.id for r in rels]
    assert second.next_cursor is None


def test_explicit_id_reused_by_another_object_raises_conflict(engine: Engine) -> None:
    engine.add_objects([ObjectIn(type="Person", key="ada", id="shared-id")])

    with pytest.raises(Conflict):
        engine.add_objects([ObjectIn(type="City", key="paris", id="shared-id")])

    assert [(o.type, o.key) for o in engine.list_rows("object").items] == [("Person", "ada")]


def test_list_rejects_a_malformed_cursor(engine: Engine) -> None:
    engine.add_objects([person("ada")])

    with pytest.raises(InvalidRequest):
        engine.list_rows("object", cursor="not-a-cursor")


# relationships -------------------------------------------------------------------


def test_relationship_to_missing_object_raises_not_found_and_writes_nothing(
    engine: Engine,
) -> None:
    engine.add_objects([person("ada")])

    with pytest.raises(NotFound) as caught:
        engine.add_relationships([knows("ada", "bob"), knows("ada", "ada")])

    assert caught.value.details == {"missing": ["Person/bob"]}
    assert engine.store.counts("default")["relationships"] == 0


def test_relationship_to_deleted_object_raises_not_found(engine: Engine) -> None:
    ada, bob = engine.add_objects([person("ada"), person("bob")])
    engine.delete("object", [bob.id])

    with pytest.raises(NotFound):
        engine.add_relationships([RelationshipIn(type="KNOWS", source=ada.id, target=bob.id)])


def test_store_refuses_relationship_whose_endpoint_is_not_a_live_object(engine: Engine) -> None:
    [ada] = engine.add_objects([person("ada")])
    ada_end = Endpoint(ada.id, "Person", "ada", {"name": "Ada"})
    ghost = Endpoint("ghost-id", "Person", "ghost", {})
    row: RelationshipRow = engine.rules.relationship_row(
        "default", RelationshipIn(type="KNOWS", source=ada.id, target="ghost-id"), ada_end, ghost
    )

    with pytest.raises(NotFound):
        engine.store.upsert_relationships("default", [row])
    assert engine.store.counts("default")["relationships"] == 0


def test_relationship_upsert_is_idempotent_by_type_and_endpoints(engine: Engine) -> None:
    engine.add_objects([person("ada"), person("bob")])
    [first] = engine.add_relationships([knows("ada", "bob")])
    [second] = engine.add_relationships([knows("ada", "bob")])

    assert second.id == first.id
    assert engine.store.counts("default")["relationships"] == 1


# the longest ids -----------------------------------------------------------------


def _longest(prefix: str) -> str:
    """``prefix`` (two ASCII letters) and two-byte letters, MAX_ID_BYTES in all."""
    return prefix + "é" * ((MAX_ID_BYTES - 2) // 2)


def test_the_longest_ids_keys_and_types_are_kept_and_found(engine: Engine) -> None:
    """Every id, key and type at MAX_ID_BYTES (in two-byte characters) is written,
    embedded and read back on every backend; one byte more is refused before a write."""
    source, chunk = _longest("so"), _longest("ch")
    engine.add_sources([SourceIn(id=source, title="Notes")])
    engine.add_chunks([ChunkIn(id=chunk, text="walrus tusks", source_id=source)])
    [ada] = engine.add_objects([ObjectIn(type=_longest("Ty"), key=_longest("ke"))])
    [bob] = engine.add_objects([ObjectIn(id=_longest("ob"), type="Person", key="bob")])
    [rel] = engine.add_relationships(
        [RelationshipIn(id=_longest("re"), type="knows", source=ada.id, target=bob.id)]
    )
    mentions = [
        MentionIn(source_id=source, chunk_id=chunk, object=ada.id),
        MentionIn(source_id=source, chunk_id=chunk, relationship_id=rel.id),
    ]
    assert engine.add_mentions(mentions) == 2
    engine.embed_pending()

    store = engine.store
    assert [c.id for c in store.get_chunks("default", [chunk])] == [chunk]
    assert engine.get_object_by_key(ada.type, ada.key).id == ada.id
    assert [r.id for r in store.get_relationships("default", [rel.id])] == [rel.id]
    assert [c for c, _ in store.text_search("default", Kind.CHUNK, "walrus", limit=5)] == [chunk]
    with pytest.raises(ValidationError, match=f"at most {MAX_ID_BYTES}"):
        ChunkIn(id=chunk + "x", text="walrus")
