"""Hydration: candidates for the fused pool, from one read per kind."""

from __future__ import annotations

from pathlib import Path

from kgsearch.engine import Engine
from kgsearch.model import ObjectIn
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
