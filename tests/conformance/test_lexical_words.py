"""Lexical search splits stored text into words the way it splits queries (``\\w``
runs), on every store: numbers, hosts, addresses and paths are found by their parts."""

from __future__ import annotations

import contextlib

import pytest

from kgsearch.engine import Engine
from kgsearch.errors import InvalidRequest
from kgsearch.model import ChunkIn, Filters, Kind, ObjectIn
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder

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
