"""Hydration: candidates for the fused pool, from one read per kind."""

from __future__ import annotations

from pathlib import Path

from kgsearch.engine import Engine
from kgsearch.model import ObjectIn, RelationshipIn
from kgsearch.search.fusion import Fused
from kgsearch.search.hydrate import hydrate
from kgsearch.search.plan import QueryVectors, make_plan
from kgsearch.search.request import SearchRequest
from kgsearch.search.rows import Rows
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.testing import FakeEmbedder


def _pool(tmp_path: Path) -> tuple[SQLiteStore, list[Fused]]:
    """A store with three objects, and a fused list whose second key has no live row."""
    store = SQLiteStore(str(tmp_path / "kg.db"))
    engine = Engine(store, embedder=FakeEmbedder(8))
    a, b, c = engine.add_objects([ObjectIn(type="T", key=k) for k in ("a", "b", "c")])
    keys = [f"object:{a.id}", "object:gone", f"object:{b.id}", f"object:{c.id}"]
    return store, [Fused(k, 1.0 - i / 10) for i, k in enumerate(keys)]


def test_kept_candidates_are_the_first_live_hits_in_fused_order(tmp_path: Path) -> None:
    store, fused = _pool(tmp_path)
    plan = make_plan(SearchRequest(query="a", limit=2))
    rows = Rows(store, "default")
    kept = hydrate(store, plan, fused, rows, QueryVectors(), keep=2)
    assert [c.key for c in kept] == [fused[0].key, fused[2].key]
    # the rows of the whole pool were read in that one call
    live = [fused[0], *fused[2:]]
    assert sorted(rows.by_key(f.key for f in fused)) == sorted(f.key for f in live)
    store.close()


def test_without_keep_every_live_pooled_hit_is_a_candidate(tmp_path: Path) -> None:
    store, fused = _pool(tmp_path)
    plan = make_plan(SearchRequest(query="a", limit=2))
    candidates = hydrate(store, plan, fused, Rows(store, "default"), QueryVectors())
    assert [c.key for c in candidates] == [fused[0].key, fused[2].key, fused[3].key]
    store.close()


def test_results_equal_the_validated_models(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "kg.db"))
    engine = Engine(store, embedder=FakeEmbedder(8))
    film, person = engine.add_objects(
        [
            ObjectIn(type="Movie", key="Top Hat", properties={"name": "Top Hat", "_x": 1}),
            ObjectIn(type="Person", key="Mark Sandrich", labels=["director"]),
        ]
    )
    engine.add_relationships(
        [RelationshipIn(type="directed_by", source=film.id, target=person.id, label="dir")]
    )
    engine.add_text("Top Hat is a film directed by Mark Sandrich.", project="default")
    engine.embed_pending()
    response = engine.search(SearchRequest(query="Top Hat directed by", limit=10))
    assert {r.type for r in response.results} == {"graph", "relationship", "text"}
    for result in response.results:
        validated = type(result).model_validate(result.model_dump())
        assert result == validated
        assert result.model_dump_json() == validated.model_dump_json()
        assert list(result.__dict__) == list(type(result).model_fields)
    store.close()
