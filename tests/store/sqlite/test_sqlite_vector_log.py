"""The in-memory vector indexes follow writes by key (store/sqlite/vectors.py): a write is
searchable at once without a reload, deleted and re-embedded rows are never returned
from an old position, another process's writes are seen, and a reload happens only when
it pays (many changes) or is needed (the log was pruned past the cache)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from kgsearch.engine import Engine
from kgsearch.model import Filters, Kind, ObjectIn, RelationshipIn
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.store.sqlite import vectors as vector_cache
from kgsearch.testing import FakeEmbedder

ROWS = 80
# exact float32 product; int8 scan; HNSW index (over the int8 scan)
MODES = {"exact": (10_000, 10_000), "int8": (10, 10_000), "hnsw": (10, 50)}


def opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> Engine:
    int8_rows, ann_rows = MODES[mode]
    monkeypatch.setattr(vector_cache, "INT8_MIN_ROWS", int8_rows)
    store = SQLiteStore(str(tmp_path / "kg.db"), ann_min_rows=ann_rows)
    engine = Engine(store, embedder=FakeEmbedder(16))
    things(engine, range(ROWS))
    assert store.wait_for_index("default", Kind.OBJECT, 60)
    return engine


def things(engine: Engine, numbers: range) -> list[str]:
    found = engine.add_objects(
        [ObjectIn(type="Thing", key=f"k{i}", properties={"name": f"thing {i}"}) for i in numbers]
    )
    engine.embed_pending()
    return [o.id for o in found]


def sqlite(engine: Engine) -> SQLiteStore:
    store = engine.store
    assert isinstance(store, SQLiteStore)
    return store


def nearest(store: SQLiteStore, id: str, limit: int, **filters: object) -> list[str]:
    """Ids nearest to the stored vector of ``id`` (``id`` itself first when it is live)."""
    vector = vector_of(store, id)
    found = store.vector_search(
        "default", Kind.OBJECT, vector, limit=limit, filters=Filters(**filters)
    )
    return [i for i, _ in found]


def exact_matches(store: SQLiteStore, id: str) -> set[str]:
    """Ids whose vector equals the stored vector of ``id`` (the fake embedder gives some
    texts the same vector)."""
    found = store.vector_search("default", Kind.OBJECT, vector_of(store, id), limit=ROWS + 10)
    return {i for i, score in found if score > 0.9999}


def vector_of(store: SQLiteStore, id: str) -> np.ndarray:
    (row,) = store.db.all("SELECT vector FROM objects WHERE id = ?", (id,))
    return np.frombuffer(row["vector"], dtype=np.float32).copy()


@pytest.mark.parametrize("mode", list(MODES))
def test_a_new_row_is_found_at_once_without_a_reload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    engine = opened(tmp_path, monkeypatch, mode)
    store = sqlite(engine)
    cache = store.vectors_cache
    before = cache.entry(store.db, "default", Kind.OBJECT)
    reloads = cache.reloads
    (new,) = things(engine, range(ROWS, ROWS + 1))
    assert new in exact_matches(store, new)
    after = cache.entry(store.db, "default", Kind.OBJECT)
    assert cache.reloads == reloads
    assert len(after.ids) == ROWS + 1
    assert (after.ann is before.ann) and (after.scan is before.scan)
    assert (after.ann is not None) == (mode == "hnsw")
    assert (after.scan is not None) == (mode != "exact")
    engine.close()


@pytest.mark.parametrize("mode", list(MODES))
def test_deleted_and_re_embedded_rows_are_never_returned_from_old_positions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    engine = opened(tmp_path, monkeypatch, mode)
    store = sqlite(engine)
    ids = [o.id for o in engine.list_rows("object", limit=ROWS).items]
    gone, changed = ids[:3], ids[3]
    old_vectors = {i: vector_of(store, i) for i in gone}
    old_changed = vector_of(store, changed)
    reloads = store.vectors_cache.reloads
    engine.delete("object", gone)
    engine.update_object(changed, {"properties": {"name": "something else entirely"}})
    engine.embed_pending()
    assert not np.array_equal(vector_of(store, changed), old_changed)
    for id, vector in old_vectors.items():
        for filters in ({}, {"object_types": ["Thing"]}):
            found = store.vector_search(
                "default", Kind.OBJECT, vector, limit=ROWS, filters=Filters(**filters)
            )
            assert id not in {i for i, _ in found}
    near = [i for i, _ in store.vector_search("default", Kind.OBJECT, old_changed, limit=ROWS)]
    live = set(ids) - set(gone)
    assert len(near) == len(set(near)) and set(near) <= live  # no stale second copy
    if mode != "hnsw":  # HNSW is approximate: asked for every row, it may miss one
        assert len(near) == ROWS - 3
    assert changed in exact_matches(store, changed)
    assert store.vectors_cache.reloads == reloads
    engine.close()


def test_another_processs_writes_are_seen_by_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = opened(tmp_path, monkeypatch, "hnsw")
    store = sqlite(engine)
    ids = [o.id for o in engine.list_rows("object", limit=2).items]
    reloads = store.vectors_cache.reloads
    script = textwrap.dedent(
        f"""
        from kgsearch.engine import Engine
        from kgsearch.model import ObjectIn
        from kgsearch.store.sqlite import SQLiteStore
        from kgsearch.testing import FakeEmbedder
        engine = Engine(SQLiteStore({str(tmp_path / "kg.db")!r}), embedder=FakeEmbedder(16))
        (new,) = engine.add_objects([ObjectIn(type="Thing", key="elsewhere")])
        engine.embed_pending()
        engine.delete("object", [{ids[0]!r}])
        print(new.id)
        engine.close()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    )
    new = done.stdout.strip().splitlines()[-1]
    assert new in exact_matches(store, new)
    assert ids[0] not in nearest(store, ids[1], ROWS)
    assert store.vectors_cache.reloads == reloads
    engine.close()


def test_many_changes_at_once_reload_the_matrix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = opened(tmp_path, monkeypatch, "int8")
    store = sqlite(engine)
    ids = [o.id for o in engine.list_rows("object", limit=ROWS).items]
    nearest(store, ids[0], 1)
    reloads = store.vectors_cache.reloads
    engine.delete("object", ids[: ROWS // 2])
    assert ids[0] not in nearest(store, ids[-1], ROWS)
    assert store.vectors_cache.reloads == reloads + 1
    entry = store.vectors_cache.entry(store.db, "default", Kind.OBJECT)
    assert len(entry.ids) == ROWS // 2 and entry.alive is None
    engine.close()


def test_a_log_pruned_past_the_cache_reloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = opened(tmp_path, monkeypatch, "exact")
    store = sqlite(engine)
    ids = [o.id for o in engine.list_rows("object", limit=ROWS).items]
    nearest(store, ids[0], 1)
    reloads = store.vectors_cache.reloads
    monkeypatch.setattr(vector_cache, "_LOG_KEEP", 0)
    things(engine, range(ROWS, ROWS + 2))  # each write keeps only the newest entry
    engine.delete("object", [ids[0]])
    assert ids[0] not in nearest(store, ids[1], ROWS + 2)
    assert store.vectors_cache.reloads == reloads + 1
    engine.close()


def test_writes_that_change_no_vector_leave_the_matrix_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = opened(tmp_path, monkeypatch, "exact")
    store = sqlite(engine)
    before = store.vectors_cache.entry(store.db, "default", Kind.OBJECT)
    seq = before.seq
    engine.add_objects([ObjectIn(type="Thing", key="not embedded yet")])  # pending
    after = store.vectors_cache.entry(store.db, "default", Kind.OBJECT)
    assert after.seq == seq and after.matrix is before.matrix
    engine.close()


@pytest.mark.parametrize("mode", list(MODES))
def test_a_written_relationship_with_validity_times_is_filtered_without_a_reload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    int8_rows, ann_rows = MODES[mode]
    monkeypatch.setattr(vector_cache, "INT8_MIN_ROWS", int8_rows)
    store = SQLiteStore(str(tmp_path / "kg.db"), ann_min_rows=ann_rows)
    engine = Engine(store, embedder=FakeEmbedder(16))
    ends = things(engine, range(12))
    engine.add_relationships(
        [
            RelationshipIn(type=f"r{i % 3}", source=ends[i % 12], target=ends[(i + 1) % 12])
            for i in range(ROWS)
        ]
    )
    engine.embed_pending()
    assert store.wait_for_index("default", Kind.RELATIONSHIP, 60)
    entry = store.vectors_cache.entry(store.db, "default", Kind.RELATIONSHIP)
    assert not entry.has_validity  # no relationship has validity times yet
    reloads = store.vectors_cache.reloads
    (expired,) = engine.add_relationships(
        [
            RelationshipIn(
                type="ended",
                source=ends[0],
                target=ends[5],
                valid_to=datetime(2001, 1, 1, tzinfo=UTC),
            )
        ]
    )
    engine.embed_pending()
    (row,) = store.db.all("SELECT vector FROM relationships WHERE id = ?", (expired.id,))
    vector = np.frombuffer(row["vector"], dtype=np.float32).copy()
    now = store.vector_search("default", Kind.RELATIONSHIP, vector, limit=ROWS + 5)
    assert expired.id not in {i for i, _ in now}  # not valid now
    back = store.vector_search(
        "default",
        Kind.RELATIONSHIP,
        vector,
        limit=5,
        filters=Filters(as_of=datetime(2000, 1, 1, tzinfo=UTC)),
    )
    assert back[0][0] == expired.id  # valid then, and nearest to its own vector
    assert store.vectors_cache.reloads == reloads  # applied by key
    assert store.vectors_cache.entry(store.db, "default", Kind.RELATIONSHIP).has_validity
    engine.close()
