"""The lexical index: text search follows writes, splits words, survives any query."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgsearch.engine import Engine
from kgsearch.errors import InvalidRequest
from kgsearch.model import ChunkIn, Filters, Kind, ObjectIn
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder
from kgsearch.testing.conformance.builders import ids, knows, person


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


# stored text is split into words the way queries are (``\w`` runs): numbers, hosts,
# addresses and paths are found by their parts

TEXT = "Python 3.12 docs at docs.python.org, mail guido@python.org, /usr/lib/x.so v1.2.3"


@pytest.mark.parametrize("query", ["3.12", "12", "docs", "guido", "usr lib", "v1", "so"])
def test_parts_of_dotted_and_slashed_tokens_are_found(store: Store, query: str) -> None:
    engine = Engine(store, embedder=FakeEmbedder(32))
    engine.add_chunks([ChunkIn(id="c1", text=TEXT), ChunkIn(id="c2", text="unrelated words")])
    assert [i for i, _ in store.text_search("default", Kind.CHUNK, query, limit=5)] == ["c1"]


def test_a_very_long_text_is_stored_and_searchable(store: Store) -> None:
    engine = Engine(store, embedder=FakeEmbedder(32))
    long_text = "needle " + " ".join(f"w{i}x" for i in range(250_000))  # about 1.6 MB
    engine.add_chunks([ChunkIn(id="long", text=long_text)])
    assert [i for i, _ in store.text_search("default", Kind.CHUNK, "needle", limit=5)] == ["long"]


def test_a_nul_in_a_property_never_breaks_filters(store: Store) -> None:
    engine = Engine(store, embedder=FakeEmbedder(32))
    engine.add_objects([ObjectIn(type="T", key="ok", properties={"name": "fine"})])
    # a store may refuse it (PostgreSQL's jsonb cannot hold NUL), but only with a clear error
    with contextlib.suppress(InvalidRequest):
        engine.add_objects([ObjectIn(type="T", key="nul", properties={"name": "x\x00y"})])
    page = store.list_rows("default", "object", filters=Filters(properties={"name": "fine"}))
    assert [o.key for o in page.items] == ["ok"]
    hits = store.text_search(
        "default", Kind.OBJECT, "fine", limit=5, filters=Filters(labels=["none"])
    )
    assert hits == []


def test_a_write_run_leaves_each_row_found_by_its_text_at_its_end(engine: Engine) -> None:
    """Rows written inside a write run (nested runs join it) are read back as usual;
    after it, text search finds each by its current text only, and a row deleted in the
    run not at all."""
    store, search = engine.store, engine.store.text_search
    [ada, bob] = engine.add_objects([person("ada", "Zebulon"), person("bob", "Walrus")])
    with store.write_run():
        engine.add_objects([person("ada", "Quillon"), person("cyd", "Narwhal")])
        with store.write_run():
            engine.add_objects([person("ada", "Ptarmigan")])
        engine.delete("object", [bob.id])
        assert engine.get_object(ada.id).properties["name"] == "Ptarmigan"
    assert search("default", Kind.OBJECT, "zebulon", limit=5) == []
    assert search("default", Kind.OBJECT, "quillon", limit=5) == []
    assert search("default", Kind.OBJECT, "walrus", limit=5) == []
    assert ids(search("default", Kind.OBJECT, "ptarmigan", limit=5)) == [ada.id]
    [cyd] = search("default", Kind.OBJECT, "narwhal", limit=5)
    assert engine.get_object(cyd[0]).key == "cyd"
