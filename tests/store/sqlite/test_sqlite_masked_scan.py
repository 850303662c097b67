"""A kind scanned in int8 whose mask leaves a few rows out (relationships no longer
valid) is answered by the scan with room for them: the same top k as an exact product
over the rows kept; a mask that leaves many out is scored exactly."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from kgsearch.engine import Engine
from kgsearch.model import Kind, ObjectIn, RelationshipIn
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.store.sqlite import vectors as vector_cache
from kgsearch.testing import FakeEmbedder

ROWS = 200


def store_with(tmp_path: Path, expired: int) -> tuple[SQLiteStore, set[str]]:
    """Relationships scanned in int8, ``expired`` of them valid until 2001."""
    store = SQLiteStore(str(tmp_path / "kg.db"), ann_min_rows=10_000)
    engine = Engine(store, embedder=FakeEmbedder(16))
    ends = [o.id for o in engine.add_objects([ObjectIn(type="T", key=f"k{i}") for i in range(20)])]
    found = engine.add_relationships(
        [
            RelationshipIn(
                type=f"r{i % 3}",
                source=ends[i % 20],
                target=ends[(i // 20 + 1 + i % 20) % 20],
                properties={"n": i},
                valid_to=datetime(2001, 1, 1, tzinfo=UTC) if i < expired else None,
            )
            for i in range(ROWS)
        ]
    )
    engine.embed_pending()
    return store, {r.id for r in found[:expired]}


def exact(store: SQLiteStore, query: np.ndarray, out: set[str], k: int) -> list[str]:
    rows = store.db.all(
        "SELECT id, vector FROM relationships WHERE deleted_at IS NULL ORDER BY rowid"
    )
    scored = [
        (float(np.frombuffer(r["vector"], dtype=np.float32) @ query), r["id"])
        for r in rows
        if r["id"] not in out
    ]
    return [i for _, i in sorted(scored, key=lambda x: -x[0])[:k]]  # ties: first stored first


@pytest.mark.parametrize("expired", [3, 150])
def test_a_mask_gives_the_exact_top_of_the_rows_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, expired: int
) -> None:
    monkeypatch.setattr(vector_cache, "INT8_MIN_ROWS", 10)
    store, out = store_with(tmp_path, expired)
    entry = store.vectors_cache.entry(store.db, "default", Kind.RELATIONSHIP)
    assert entry.scan is not None and entry.has_validity
    scanned: list[int] = []
    search = type(entry.scan).search

    def counted(self: object, query: np.ndarray, k: int, **kwargs: object) -> object:
        scanned.append(k)
        return search(self, query, k, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(type(entry.scan), "search", counted)
    rng = np.random.default_rng(7)
    for _ in range(5):
        query = rng.standard_normal(16).astype(np.float32)
        query /= np.linalg.norm(query)
        got = store.vector_search("default", Kind.RELATIONSHIP, query, limit=10)
        assert [i for i, _ in got] == exact(store, query, out, 10)
        assert not out & {i for i, _ in got}
    # a few rows out: the scan, asked for that many more; most out: the exact product
    assert scanned == ([10 + expired] * 5 if expired <= ROWS * 0.05 else [])
