"""BM25 legs in a worker thread beside the vector legs: same response as one by one."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from kgsearch.engine import Engine
from kgsearch.model import ObjectIn, RelationshipIn
from kgsearch.search import methods
from kgsearch.search.request import SearchRequest
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.testing import FakeEmbedder

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


def test_parallel_and_serial_legs_give_the_same_response(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = Engine(SQLiteStore(str(tmp_path / "kg.db")), embedder=FakeEmbedder(16))
    objects = engine.add_objects(
        [
            ObjectIn(type="Thing", key=f"k{i}", properties={"name": f"{w} {WORDS[i % 3]}"})
            for i, w in enumerate(WORDS)
        ]
    )
    engine.add_relationships(
        [
            RelationshipIn(type="near", source=a.id, target=b.id)
            for a, b in itertools.pairwise(objects)
        ]
    )
    engine.embed_pending()
    for query in ("alpha bravo", "charlie near delta", "golf"):
        request = SearchRequest(query=query, limit=5, include_debug=True)
        monkeypatch.setattr(methods, "_PARALLEL_LEGS", True)
        parallel = engine.search(request)
        monkeypatch.setattr(methods, "_PARALLEL_LEGS", False)
        serial = engine.search(request)
        assert parallel.results == serial.results
        assert parallel.metadata["legs"] == serial.metadata["legs"]
        assert parallel.debug == serial.debug
