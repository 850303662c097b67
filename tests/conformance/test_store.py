"""The Store conformance suite: written once, run against every backend.

Rows are built through the Engine where that is the convenient way to get ids and
embedding texts; every assertion is about what the store persists and returns.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import Edge, assert_topk, bfs, cosine_scores

from kgsearch.engine import Engine
from kgsearch.errors import (
    ConfigError,
    Conflict,
    DimensionMismatch,
    InvalidRequest,
    NotFound,
)
from kgsearch.model import (
    ChunkIn,
    Filters,
    GraphObject,
    Kind,
    Mention,
    MentionIn,
    ObjectIn,
    ObjectRef,
    RelationshipIn,
    SourceIn,
)
from kgsearch.store.base import Endpoint, RelationshipRow, Store, StoreInfo
from kgsearch.testing import FakeEmbedder

DIMS = 32


def person(key: str, name: str | None = None, **properties: Any) -> ObjectIn:
    props = {"name": name or key.title(), **properties}
    return ObjectIn(type="Person", key=key, properties=props)


def knows(source: str, target: str, type_: str = "KNOWS") -> RelationshipIn:
    return RelationshipIn(
        type=type_,
        source=ObjectRef(type="Person", key=source),
        target=ObjectRef(type="Person", key=target),
    )


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [id_ for id_, _ in hits]


def all_ids(store: Store, project: str, kind: Any) -> list[str]:
    return [row.id for row in store.list_rows(project, kind, limit=10_000).items]


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


# neighbours --------------------------------------------------------------------

GRAPH_EDGES = [
    ("a", "b", "KNOWS"),
    ("b", "c", "KNOWS"),
    ("c", "d", "LIKES"),
    ("d", "a", "KNOWS"),
    ("c", "e", "KNOWS"),
    ("e", "f", "LIKES"),
    ("f", "g", "KNOWS"),
    ("g", "e", "LIKES"),
    ("h", "a", "LIKES"),
    ("b", "b", "KNOWS"),
]


def build_graph(engine: Engine, project: str = "default") -> tuple[dict[str, str], list[Edge]]:
    keys = sorted({k for s, t, _ in GRAPH_EDGES for k in (s, t)} | {"lonely"})
    objects = engine.add_objects([person(k) for k in keys], project=project)
    by_key = {o.key: o.id for o in objects}
    rels = engine.add_relationships([knows(s, t, ty) for s, t, ty in GRAPH_EDGES], project=project)
    edges = [(r.id, r.type, r.source_id, r.target_id) for r in rels]
    return by_key, edges


def test_neighbors_equal_bfs_for_every_start_direction_depth_and_type_filter(
    engine: Engine,
) -> None:
    by_key, edges = build_graph(engine)
    edge_ends = {rid: (s, t) for rid, _, s, t in edges}

    got: dict[tuple[Any, ...], dict[str, int]] = {}
    want: dict[tuple[Any, ...], dict[str, int]] = {}
    for key, id_ in by_key.items():
        for direction in ("out", "in", "both"):
            for depth in (1, 2, 3):
                for types in (None, ["KNOWS"], ["LIKES"], ["KNOWS", "LIKES"]):
                    case = (key, direction, depth, tuple(types or ()))
                    found = engine.neighbors(
                        [id_], depth=depth, direction=direction, relationship_types=types
                    )
                    got[case] = {n.id: n.depth for n in found}
                    assert len(found) == len(got[case]), found
                    for n in found:
                        assert n.id in edge_ends[n.via], (case, n)
                    want[case] = bfs(edges, [id_], depth=depth, direction=direction, types=types)

    assert got == want


def test_neighbors_from_several_starts_exclude_the_starts(engine: Engine) -> None:
    by_key, edges = build_graph(engine)
    starts = [by_key["a"], by_key["e"]]

    found = engine.neighbors(starts, depth=2)

    assert {n.id: n.depth for n in found} == bfs(edges, starts, depth=2)
    assert not {n.id for n in found} & set(starts)


def test_neighbors_skip_relationships_outside_their_validity(engine: Engine) -> None:
    ada, bob, cy = engine.add_objects([person("ada"), person("bob"), person("cy")])
    engine.add_relationships(
        [
            RelationshipIn(
                type="KNEW", source=ada.id, target=bob.id, valid_to=datetime(2000, 1, 1, tzinfo=UTC)
            ),
            RelationshipIn(
                type="KNOWS",
                source=ada.id,
                target=cy.id,
                valid_from=datetime(2001, 1, 1, tzinfo=UTC),
            ),
        ]
    )

    now = engine.store.neighbors("default", [ada.id])
    then = engine.store.neighbors("default", [ada.id], as_of=datetime(1999, 1, 1, tzinfo=UTC))

    assert [n.id for n in now] == [cy.id]
    assert [n.id for n in then] == [bob.id]


@pytest.mark.parametrize("depth", [0, -1, 6])
def test_neighbors_reject_depth_out_of_range(engine: Engine, depth: int) -> None:
    by_key, _ = build_graph(engine)

    with pytest.raises(InvalidRequest):
        engine.neighbors([by_key["a"]], depth=depth)


# soft delete and purge -----------------------------------------------------------


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


# project isolation -----------------------------------------------------------------


@pytest.fixture
def two_projects(engine: Engine) -> dict[str, dict[str, Any]]:
    """The same graph in projects A and B; B's names all say 'Bravo'."""
    made: dict[str, dict[str, Any]] = {}
    for project, word in (("A", "Alpha"), ("B", "Bravo")):
        objects = engine.add_objects(
            [person(k, f"{word} {k}", team=word) for k in ("x", "y", "z")], project=project
        )
        rels = engine.add_relationships(
            [knows("x", "y"), knows("y", "z", "LIKES")], project=project
        )
        engine.add_sources([SourceIn(id="s1", title=f"{word} notes")], project=project)
        engine.add_chunks(
            [ChunkIn(id="c1", text=f"{word} chunk text", source_id="s1")], project=project
        )
        engine.add_mentions(
            [MentionIn(chunk_id="c1", object=ObjectRef(type="Person", key="x"))],
            project=project,
        )
        made[project] = {
            "objects": {o.key: o.id for o in objects},
            "relationships": [r.id for r in rels],
        }
    engine.embed_pending()
    return made


def test_project_a_get_and_list_never_return_project_b_rows(
    engine: Engine, two_projects: dict[str, dict[str, Any]]
) -> None:
    store = engine.store
    b_objects = list(two_projects["B"]["objects"].values())

    assert store.get_objects("A", b_objects) == []
    assert store.get_relationships("A", two_projects["B"]["relationships"]) == []
    assert store.endpoints("A", b_objects) == {}
    listed = [o.id for o in store.list_rows("A", "object").items]
    assert listed == list(two_projects["A"]["objects"].values())
    assert all(o.project == "A" for o in store.list_rows("A", "object").items)
    rels = [r.id for r in store.list_rows("A", "relationship").items]
    assert rels == two_projects["A"]["relationships"]
    assert [c.project for c in store.get_chunks("A", ["c1"])] == ["A"]
    assert [s.title for s in store.get_sources("A", ["s1"])] == ["Alpha notes"]


def test_project_a_resolve_and_neighbors_stay_in_project_a(
    engine: Engine, two_projects: dict[str, dict[str, Any]]
) -> None:
    store = engine.store
    a = two_projects["A"]["objects"]

    resolved = store.resolve("A", [ObjectRef(type="Person", key=k) for k in ("x", "y", "z")])

    assert {ref.key: e.id for ref, e in resolved.items()} == a
    assert {e.properties["team"] for e in resolved.values()} == {"Alpha"}
    assert [(n.id, n.depth) for n in store.neighbors("A", [a["x"]], depth=3)] == [
        (a["y"], 1),
        (a["z"], 2),
    ]
    assert store.neighbors("A", list(two_projects["B"]["objects"].values()), depth=3) == []
    assert store.relationships_touching("A", list(two_projects["B"]["objects"].values())) == []
    assert store.edges_among("A", list(two_projects["B"]["objects"].values())) == []


def test_project_a_searches_never_return_project_b_rows(
    engine: Engine, two_projects: dict[str, dict[str, Any]]
) -> None:
    store = engine.store
    embedder = FakeEmbedder(DIMS)

    a_rows = {
        Kind.OBJECT: set(two_projects["A"]["objects"].values()),
        Kind.RELATIONSHIP: set(two_projects["A"]["relationships"]),
        Kind.CHUNK: {"c1"},
    }

    for kind in Kind:
        assert store.text_search("A", kind, "Bravo", limit=50) == []
        assert set(ids(store.text_search("A", kind, "Alpha Bravo", limit=50))) == a_rows[kind]
        hits = store.vector_search("A", kind, embedder.embed_query("Bravo x"), limit=50)
        assert set(ids(hits)) == a_rows[kind]
    assert ids(store.text_search("B", Kind.CHUNK, "Bravo", limit=50)) == ["c1"]


def test_project_a_mentions_and_counts_exclude_project_b(
    engine: Engine, two_projects: dict[str, dict[str, Any]]
) -> None:
    store = engine.store
    a_x, b_x = two_projects["A"]["objects"]["x"], two_projects["B"]["objects"]["x"]

    assert store.mentions("A", chunk_ids=["c1"]) == [
        Mention(project="A", chunk_id="c1", object_id=a_x)
    ]
    assert store.mentions("A", object_ids=[b_x]) == []
    assert store.counts("A") == {
        "objects": 3,
        "relationships": 2,
        "chunks": 1,
        "sources": 1,
        "mentions": 1,
    }
    assert store.projects() == ["A", "B"]


def test_deleting_and_purging_in_project_a_leaves_project_b_alone(
    engine: Engine, two_projects: dict[str, dict[str, Any]]
) -> None:
    store = engine.store
    before = store.counts("B")

    engine.delete("object", list(two_projects["A"]["objects"].values()), project="A")
    engine.delete("object", list(two_projects["A"]["objects"].values()), project="B")
    engine.delete("chunk", ["c1"], project="A")
    engine.purge(project="A")

    assert store.counts("B") == before
    assert store.counts("A")["objects"] == 0
    assert [c.id for c in store.get_chunks("B", ["c1"])] == ["c1"]


# lexical index -------------------------------------------------------------------


def test_text_search_follows_updates(engine: Engine) -> None:
    [ada] = engine.add_objects([person("ada", "Zebulon")])
    assert ids(engine.store.text_search("default", Kind.OBJECT, "zebulon", limit=5)) == [ada.id]

    engine.add_objects([person("ada", "Quillon")])

    assert engine.store.text_search("default", Kind.OBJECT, "zebulon", limit=5) == []
    assert ids(engine.store.text_search("default", Kind.OBJECT, "quillon", limit=5)) == [ada.id]


def test_text_search_follows_relationship_and_chunk_updates(engine: Engine) -> None:
    engine.add_objects([person("ada", "Zebulon"), person("bob")])
    [rel] = engine.add_relationships([knows("ada", "bob")])
    engine.add_chunks([ChunkIn(id="c1", text="walrus tusks")])

    engine.add_objects([person("ada", "Quillon")])
    engine.add_chunks([ChunkIn(id="c1", text="narwhal tusks")])

    search = engine.store.text_search
    assert search("default", Kind.RELATIONSHIP, "zebulon", limit=5) == []
    assert ids(search("default", Kind.RELATIONSHIP, "quillon", limit=5)) == [rel.id]
    assert search("default", Kind.CHUNK, "walrus", limit=5) == []
    assert ids(search("default", Kind.CHUNK, "narwhal", limit=5)) == ["c1"]


def test_text_search_ranks_by_every_word_and_matches_a_prefix_only_when_asked(
    engine: Engine,
) -> None:
    chunks = engine.add_chunks(
        [
            ChunkIn(id="both", text="walrus tusks"),
            ChunkIn(id="one", text="walrus flippers"),
            ChunkIn(id="other", text="narwhal tusks tusks"),
            ChunkIn(id="none", text="penguin"),
        ]
    )
    assert len(chunks) == 4
    search = engine.store.text_search
    ranked = ids(search("default", Kind.CHUNK, "walrus tusks", limit=5))
    assert ranked[0] == "both" and set(ranked) == {"both", "one", "other"}
    assert search("default", Kind.CHUNK, "walr", limit=5) == []
    assert set(ids(search("default", Kind.CHUNK, "walr", limit=5, prefix=True))) == {"both", "one"}
    prefixed = ids(search("default", Kind.CHUNK, "tusks walr", limit=5, prefix=True))
    assert prefixed[0] == "both" and set(prefixed) == {"both", "one", "other"}


def test_text_search_finds_revived_rows_again(engine: Engine) -> None:
    [ada] = engine.add_objects([person("ada", "Zebulon")])
    engine.delete("object", [ada.id])
    engine.add_objects([person("ada", "Zebulon")])

    assert ids(engine.store.text_search("default", Kind.OBJECT, "zebulon", limit=5)) == [ada.id]


HOSTILE_QUERIES = [
    "",
    " ",
    '"',
    '""',
    "'",
    "\"unbalanced 'quotes",
    "AND",
    "OR",
    "NOT",
    "AND OR NOT",
    "ada AND",
    "NOT ada",
    "*",
    "ada*",
    "* ada *",
    ":",
    "text:ada",
    "objects_fts:ada",
    "(",
    ")",
    "(ada OR",
    "NEAR(ada bob)",
    "^ada",
    "ada + bob - cy",
    "{text}: ada",
    "\\",
    "%_%",
    "'; DROP TABLE objects; --",
    "Ünïcödé straße ĳ",
    "日本語のテキスト",
    "مرحبا",
    "🦓🐧 emoji 👩‍💻",
    "\x00\x01\x1f",
    "ada " * 2500,
    "x" * 10_240,
    "a" * 20 + " " + "b" * 20,
]


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_hostile_query_strings_never_raise(engine: Engine, query: str) -> None:
    engine.add_objects([person("ada", "Ada AND Bob"), person("bob", 'Bob: NOT "quoted"')])
    engine.add_chunks([ChunkIn(id="c1", text="straße 日本語 🦓 text")])

    for kind in Kind:
        for prefix in (False, True):
            hits = engine.store.text_search("default", kind, query, limit=10, prefix=prefix)
            assert isinstance(hits, list)


def test_text_search_treats_operators_as_words(engine: Engine) -> None:
    [ada, _] = engine.add_objects([person("ada", "Ada Not Here"), person("bob", "Bob")])

    assert ids(engine.store.text_search("default", Kind.OBJECT, "NOT", limit=5)) == [ada.id]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(query=st.text(max_size=200), prefix=st.booleans())
def test_text_search_never_raises_on_any_string(engine: Engine, query: str, prefix: bool) -> None:
    if not engine.store.counts("default")["objects"]:
        engine.add_objects([person("ada", "Ada Lovelace"), person("bob", 'Bob: NOT "x" *')])
    for kind in Kind:
        hits = engine.store.text_search("default", kind, query, limit=10, prefix=prefix)
        assert all(isinstance(i, str) and isinstance(s, float) for i, s in hits)


# vector search -------------------------------------------------------------------

WORDS = [
    "apple",
    "banana",
    "cherry",
    "date",
    "elder",
    "fig",
    "grape",
    "honeydew",
    "kiwi",
    "lemon",
    "mango",
]


def random_objects(n: int, seed: int = 7) -> list[ObjectIn]:
    rng = random.Random(seed)
    objects = []
    for i in range(n):
        words = rng.sample(WORDS, rng.randint(1, 4))
        objects.append(
            ObjectIn(
                type=rng.choice(["Fruit", "Tree", "Shop"]),
                key=f"k{i}",
                properties={"name": " ".join(words), "color": rng.choice(["red", "green"])},
                labels=rng.sample(["fresh", "dried", "frozen"], rng.randint(0, 2)),
            )
        )
    return objects


def embedded_texts(store: Store, project: str, kind: Kind) -> dict[str, str]:
    rows: list[Any] = store.list_rows(project, kind.value, limit=10_000).items
    texts = {}
    for row in rows:
        assert row.embedding.status == "embedded"
        assert row.embedding.embedded_text == row.embedding.text
        texts[row.id] = row.embedding.text
    return texts


@pytest.mark.parametrize("query", ["apple", "banana cherry", "kiwi lemon mango fig", "zzz"])
@pytest.mark.parametrize("limit", [1, 5, 60])
def test_vector_search_equals_brute_force_cosine(engine: Engine, query: str, limit: int) -> None:
    engine.add_objects(random_objects(50))
    engine.embed_pending()
    texts = embedded_texts(engine.store, "default", Kind.OBJECT)

    got = engine.store.vector_search(
        "default", Kind.OBJECT, FakeEmbedder(DIMS).embed_query(query), limit=limit
    )

    assert_topk(got, cosine_scores(texts, query, DIMS), limit)


def test_vector_search_over_relationships_and_chunks_equals_brute_force(engine: Engine) -> None:
    build_graph(engine)
    engine.add_chunks(
        [ChunkIn(id=f"c{i}", text=" ".join(WORDS[i : i + 3])) for i in range(len(WORDS))]
    )
    engine.embed_pending()

    for kind, query in ((Kind.RELATIONSHIP, "A knows B"), (Kind.CHUNK, "fig grape")):
        texts = embedded_texts(engine.store, "default", kind)
        got = engine.store.vector_search(
            "default", kind, FakeEmbedder(DIMS).embed_query(query), limit=4
        )
        assert_topk(got, cosine_scores(texts, query, DIMS), 4)


def test_vector_search_restricted_to_ids_ranks_only_those(engine: Engine) -> None:
    engine.add_objects(random_objects(30))
    engine.embed_pending()
    texts = embedded_texts(engine.store, "default", Kind.OBJECT)
    chosen = sorted(texts)[::3]

    got = engine.store.vector_search(
        "default", Kind.OBJECT, FakeEmbedder(DIMS).embed_query("grape"), limit=4, ids=chosen
    )

    assert_topk(got, cosine_scores({i: texts[i] for i in chosen}, "grape", DIMS), 4)


def test_vector_search_leaves_out_rows_not_yet_embedded(engine: Engine) -> None:
    engine.add_objects(random_objects(10))
    engine.embed_pending()
    [late] = engine.add_objects([ObjectIn(type="Fruit", key="late", properties={"name": "apple"})])

    got = engine.store.vector_search(
        "default", Kind.OBJECT, FakeEmbedder(DIMS).embed_query("apple"), limit=50
    )

    assert late.id not in ids(got)
    assert len(got) == 10


def test_vector_search_with_other_dims_raises_dimension_mismatch(engine: Engine) -> None:
    engine.add_objects(random_objects(3))
    engine.embed_pending()

    with pytest.raises(DimensionMismatch):
        engine.store.vector_search(
            "default", Kind.OBJECT, FakeEmbedder(16).embed_query("apple"), limit=5
        )


@pytest.mark.parametrize("limit", [0, 1001])
def test_search_rejects_limit_out_of_range(engine: Engine, limit: int) -> None:
    engine.add_objects(random_objects(3))
    engine.embed_pending()
    vector = FakeEmbedder(DIMS).embed_query("apple")

    with pytest.raises(InvalidRequest):
        engine.store.vector_search("default", Kind.OBJECT, vector, limit=limit)
    with pytest.raises(InvalidRequest):
        engine.store.text_search("default", Kind.OBJECT, "apple", limit=limit)


def filtered_case(
    engine: Engine, filters: Filters, keep: Any, limit: int = 5
) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """Vector search with ``filters`` and the brute-force scores of the rows ``keep`` admits."""
    engine.add_objects(random_objects(60))
    engine.embed_pending()
    objects: list[GraphObject] = engine.list_rows("object", limit=1000).items
    texts = {o.id: o.embedding.text or "" for o in objects if keep(o)}
    query = "apple banana"
    got = engine.store.vector_search(
        "default",
        Kind.OBJECT,
        FakeEmbedder(DIMS).embed_query(query),
        limit=limit,
        filters=filters,
    )
    return got, cosine_scores(texts, query, DIMS)


def test_vector_filter_object_types_applies_inside_the_leg(engine: Engine) -> None:
    got, expected = filtered_case(
        engine, Filters(object_types=["Shop"]), lambda o: o.type == "Shop"
    )

    assert len(expected) > 5
    assert_topk(got, expected, 5)


def test_vector_filter_properties_applies_inside_the_leg(engine: Engine) -> None:
    got, expected = filtered_case(
        engine,
        Filters(properties={"color": "green"}),
        lambda o: o.properties["color"] == "green",
    )

    assert len(expected) > 5
    assert_topk(got, expected, 5)


def test_vector_filter_labels_applies_inside_the_leg(engine: Engine) -> None:
    got, expected = filtered_case(
        engine,
        Filters(labels=["frozen", "dried"]),
        lambda o: bool({"frozen", "dried"} & set(o.labels)),
    )

    assert len(expected) > 5
    assert_topk(got, expected, 5)


def test_vector_filters_combine_with_and(engine: Engine) -> None:
    got, expected = filtered_case(
        engine,
        Filters(object_types=["Fruit", "Tree"], labels=["fresh"], properties={"color": "red"}),
        lambda o: (
            o.type in ("Fruit", "Tree") and "fresh" in o.labels and o.properties["color"] == "red"
        ),
        limit=3,
    )

    assert len(expected) > 3
    assert_topk(got, expected, 3)


def test_vector_filter_relationship_types_applies_inside_the_leg(engine: Engine) -> None:
    build_graph(engine)
    engine.embed_pending()
    rels = engine.list_rows("relationship", limit=100).items
    texts = {r.id: r.embedding.text for r in rels if r.type == "LIKES"}
    query = "B knows C"

    got = engine.store.vector_search(
        "default",
        Kind.RELATIONSHIP,
        FakeEmbedder(DIMS).embed_query(query),
        limit=3,
        filters=Filters(relationship_types=["LIKES"]),
    )

    assert len(texts) > 3
    assert_topk(got, cosine_scores(texts, query, DIMS), 3)


def test_vector_filter_matching_nothing_returns_nothing(engine: Engine) -> None:
    got, expected = filtered_case(engine, Filters(object_types=["Nope"]), lambda o: False)

    assert got == []
    assert expected == {}


def test_text_filters_apply_inside_the_leg(engine: Engine) -> None:
    engine.add_objects(random_objects(60))
    objects: list[GraphObject] = engine.list_rows("object", limit=1000).items
    apples = {o.id: o.type for o in objects if "apple" in (o.embedding.text or "")}

    hits = engine.store.text_search(
        "default", Kind.OBJECT, "apple", limit=100, filters=Filters(object_types=["Shop"])
    )

    assert set(ids(hits)) == {id_ for id_, type_ in apples.items() if type_ == "Shop"}
    assert sorted(set(apples.values())) == ["Fruit", "Shop", "Tree"]


# metadata and migrations ---------------------------------------------------------


def test_fresh_store_info_has_no_embedding_model(store: Store) -> None:
    info = store.info()

    assert info == StoreInfo(
        url=store.url,
        schema_version=len(info.migrations),
        migrations=info.migrations,
        embedding_model=None,
        dims=None,
    )


def test_set_embedding_model_is_recorded_in_info(store: Store) -> None:
    store.set_embedding_model("fake:32", 32)
    store.set_embedding_model("fake:32", 32)

    info = store.info()
    assert (info.embedding_model, info.dims, info.distance) == ("fake:32", 32, "cosine")


def test_set_embedding_model_with_other_dims_raises_dimension_mismatch(store: Store) -> None:
    store.set_embedding_model("fake:32", 32)

    with pytest.raises(DimensionMismatch) as caught:
        store.set_embedding_model("fake:32", 16)

    assert caught.value.details == {"store_dims": 32, "embedder_dims": 16}
    assert (store.info().embedding_model, store.info().dims) == ("fake:32", 32)


def test_set_embedding_model_with_other_model_raises_config_error(store: Store) -> None:
    store.set_embedding_model("fake:32", 32)

    with pytest.raises(ConfigError) as caught:
        store.set_embedding_model("other:32", 32)

    assert caught.value.details == {"store_model": "fake:32", "embedder_model": "other:32"}
    assert (store.info().embedding_model, store.info().dims) == ("fake:32", 32)


def test_replacing_the_model_makes_every_row_pending(engine: Engine) -> None:
    engine.add_objects(random_objects(5))
    engine.embed_pending()

    engine.store.set_embedding_model("other:16", 16, replace=True)

    assert (engine.store.info().embedding_model, engine.store.info().dims) == ("other:16", 16)
    rows = engine.list_rows("object").items
    assert [(o.embedding.status, o.embedding.embedded_text) for o in rows] == [
        ("pending", None)
    ] * 5
    assert (
        engine.store.vector_search(
            "default", Kind.OBJECT, FakeEmbedder(16).embed_query("apple"), limit=5
        )
        == []
    )


def test_meta_values_round_trip(store: Store) -> None:
    assert store.get_meta("color") is None

    store.set_meta("color", "blue")
    store.set_meta("color", "green")

    assert store.get_meta("color") == "green"


def test_migrations_are_recorded_and_not_applied_twice(store: Store) -> None:
    migrations = store.info().migrations

    assert migrations[0] == "m001_create_graph"
    assert list(migrations) == sorted(set(migrations))
    assert store.migrate() == []
    assert store.info().migrations == migrations
    assert store.info().schema_version == len(migrations)


def test_reopening_a_store_applies_no_migration_and_keeps_data(
    store_factory: Any, engine: Engine
) -> None:
    engine.add_objects(random_objects(3))
    engine.embed_pending()
    store = engine.store

    again = store_factory.reopen(store)

    assert again.migrate() == []
    assert again.info() == store.info()
    assert again.counts("default") == store.counts("default")
    assert again.info().embedding_model == "fake:32"
