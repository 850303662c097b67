"""A relationship vector leg on a store without validity bounds reads its filters as
they are: the instant it would drop is not there to drop, so no copy is made (a pydantic
copy a leg, ~17-20 us of a relationship leg's CPU on the REST sample graph:
scripts/bench_scan_parts.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kgsearch.engine import Engine
from kgsearch.model import Filters, Kind, ObjectIn, RelationshipIn
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.testing import FakeEmbedder


def test_filters_without_an_instant_are_not_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(str(tmp_path / "kg.db"))
    engine = Engine(store, embedder=FakeEmbedder(16))
    ends = [o.id for o in engine.add_objects([ObjectIn(type="T", key=f"k{i}") for i in range(4)])]
    engine.add_relationships(
        [RelationshipIn(type="r", source=ends[i], target=ends[i + 1]) for i in range(3)]
    )
    engine.embed_pending()
    query = np.full(16, 0.25, dtype=np.float32)
    expected = store.vector_search("default", Kind.RELATIONSHIP, query, limit=3)

    def refused(self: Filters, *args: object, **kwargs: object) -> Filters:
        raise AssertionError("filters copied")

    monkeypatch.setattr(Filters, "model_copy", refused)
    got = store.vector_search(
        "default", Kind.RELATIONSHIP, query, limit=3, filters=Filters(relationship_types=["r"])
    )
    assert got == expected and len(got) == 3
