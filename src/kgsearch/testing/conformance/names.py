"""Exact-name lookup of objects (the ``objects:name`` search leg)."""

from __future__ import annotations

import pytest

from kgsearch.engine import Engine
from kgsearch.model import Filters, ObjectIn
from kgsearch.search.request import ScopeConfig, SearchRequest
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder


def test_keys_equal_to_the_name_ignoring_case(store: Store, named: dict[str, str]) -> None:
    expected = [(named["Movie:Benji"], 1.0), (named["Person:Benji"], 1.0)]
    assert store.objects_named("default", "Benji", limit=10) == expected
    assert store.objects_named("default", "bENJI", limit=10) == expected
    assert store.objects_named("default", "benj", limit=10) == []
    assert store.objects_named("default", "Benji", limit=1) == expected[:1]


def test_filters_deleted_rows_and_projects_apply(store: Store, named: dict[str, str]) -> None:
    people = Filters(object_types=["Person"])
    assert store.objects_named("default", "benji", limit=10, filters=people) == [
        (named["Person:Benji"], 1.0)
    ]
    store.delete("default", "object", [named["Movie:Benji"]])
    assert store.objects_named("default", "benji", limit=10) == [(named["Person:Benji"], 1.0)]
    (other,) = store.objects_named("other", "benji", limit=10)
    assert other[0] not in named.values()


@pytest.mark.parametrize("name", ["", "x\x00y", "'; DROP TABLE objects; --", "名前 😀", "é" * 300])
def test_any_name_is_safe(store: Store, named: dict[str, str], name: str) -> None:
    engine = Engine(store, embedder=FakeEmbedder(32))
    response = engine.search(SearchRequest(query=name or "?", limit=5))
    assert response.metadata["totalResults"] >= 0


def test_the_exact_name_ranks_first_among_longer_names(store: Store, named: dict[str, str]) -> None:
    engine = Engine(store, embedder=FakeEmbedder(32))
    request = SearchRequest(
        query="Benji",
        limit=3,
        relationships=None,
        chunks=None,
        objects=ScopeConfig(methods=["bm25"]),
        type_hint="movie",
    )
    top = engine.search(request).results[0]
    assert (top.id, [f.leg for f in top.found_by][-1]) == (named["Movie:Benji"], "objects:name")


@pytest.mark.parametrize(
    ("hint", "expected"), [("movie", "Movie:Benji"), ("person", "Person:Benji")]
)
def test_the_hint_picks_between_same_name_objects(
    store: Store, named: dict[str, str], hint: str, expected: str
) -> None:
    engine = Engine(store, embedder=FakeEmbedder(32))
    request = SearchRequest(query="benji", limit=3, relationships=None, chunks=None, type_hint=hint)
    response = engine.search(request)
    assert response.results[0].id == named[expected]
    assert "objects:name:hinted" in {f.leg for f in response.results[0].found_by}


def test_many_names_in_one_call(store: Store, named: dict[str, str]) -> None:
    both = [named["Movie:Benji"], named["Person:Benji"]]
    found = store.objects_named_many("default", ["bENJI", "Benji", "benj", "", "a\x00b"], limit=10)
    assert found == {"bENJI": both, "Benji": both}
    assert store.objects_named_many("default", ["benji"], limit=1) == {"benji": both[:1]}
    assert store.objects_named_many("default", [], limit=5) == {}
    store.delete("default", "object", [named["Movie:Benji"]])
    assert store.objects_named_many("default", ["benji"], limit=10) == {
        "benji": [named["Person:Benji"]]
    }
    assert set(store.objects_named_many("other", ["benji"], limit=10)["benji"]).isdisjoint(both)


def test_named_objects_gives_every_match_with_its_type_and_key(
    store: Store, named: dict[str, str]
) -> None:
    found = store.named_objects("default", ["bENJI", "Benji", "benj", "", "a\x00b", "Benji"])
    both = [("Movie", named["Movie:Benji"], "Benji"), ("Person", named["Person:Benji"], "Benji")]
    assert found == {"bENJI": both, "Benji": both}
    assert store.named_objects("default", []) == {}
    # the same ids, in the same order, as the filtered and limited look-ups give
    assert [i for _, i, _ in found["Benji"]] == [
        i for i, _ in store.objects_named("default", "Benji", limit=10)
    ]
    store.delete("default", "object", [named["Person:Benji"]])
    assert store.named_objects("default", ["benji"]) == {"benji": both[:1]}


@pytest.mark.parametrize("key", ["Émile Zola", "Łódź", "İstanbul", "Straße", "ΣΊΣΥΦΟΣ"])
def test_a_key_outside_ascii_is_found_as_spelt(store: Store, key: str) -> None:
    engine = Engine(store, embedder=FakeEmbedder(32))
    (obj,) = engine.add_objects([ObjectIn(type="Person", key=key)])
    assert store.objects_named("default", key, limit=5) == [(obj.id, 1.0)]
    assert store.named_objects("default", [key]) == {key: [("Person", obj.id, key)]}
    assert store.objects_named_many("default", [key], limit=5) == {key: [obj.id]}
    if "Zola" in key:  # its ASCII letters in another case find it too, on every store
        assert store.named_objects("default", ["Émile zOLA"]) == {
            "Émile zOLA": [("Person", obj.id, key)]
        }
