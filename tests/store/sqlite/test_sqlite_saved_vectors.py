"""Vectors saved beside the store and mapped (store/sqlite/saved_vectors.py): a later
store maps the file instead of reading every vector from SQLite; whatever changed
since, in this process or another, is in what it serves (the logged changes applied on
top, or the file left unused and saved anew); a damaged file is never used; two
processes map the same file."""

from __future__ import annotations

import json
import mmap
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kgsearch.engine import Engine
from kgsearch.model import Kind, ObjectIn
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.store.sqlite import vectors as vector_cache
from kgsearch.store.sqlite.vectors import Entry
from kgsearch.testing import FakeEmbedder

ROWS = 80


@pytest.fixture(autouse=True)
def small_scans(monkeypatch: pytest.MonkeyPatch) -> None:
    """Collections this small get the int8 scan, so their vectors are saved."""
    monkeypatch.setattr(vector_cache, "INT8_MIN_ROWS", 10)


def saved_store(tmp_path: Path, name: str = "thing") -> Engine:
    """A store of ``ROWS`` embedded objects whose vectors were read once and saved."""
    store = SQLiteStore(str(tmp_path / "kg.db"), ann_min_rows=10_000)
    engine = Engine(store, embedder=FakeEmbedder(16))
    engine.add_objects(
        [
            ObjectIn(type="Thing", key=f"k{i}", properties={"name": f"{name} {i}"})
            for i in range(ROWS)
        ]
    )
    engine.embed_pending()
    store.vectors_cache.entry(store.db, "default", Kind.OBJECT)
    assert store.vectors_cache.saves == 1
    return engine


def files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "kg.db.ann").glob("*-object-*.vectors"))


def reopened(tmp_path: Path) -> tuple[SQLiteStore, Entry]:
    store = SQLiteStore(str(tmp_path / "kg.db"), ann_min_rows=10_000)
    return store, store.vectors_cache.entry(store.db, "default", Kind.OBJECT)


def from_sqlite(tmp_path: Path) -> dict[str, bytes]:
    """Each live embedded object's vector, read from SQLite (no saved file involved)."""
    store = SQLiteStore(str(tmp_path / "kg.db"), ann_min_rows=None)
    rows = store.db.all(
        "SELECT id, vector FROM objects WHERE deleted_at IS NULL AND status = 'embedded' "
        "AND vector IS NOT NULL"
    )
    store.close()
    return {r["id"]: bytes(r["vector"]) for r in rows}


def served(entry: Entry) -> dict[str, bytes]:
    """What an entry searches: each live position's id and vector."""
    live = range(len(entry.ids)) if entry.alive is None else np.flatnonzero(entry.alive)
    return {entry.ids[p]: entry.matrix[p].tobytes() for p in live}


def mapped(array: np.ndarray) -> bool:
    base: Any = array
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None)
    return base is not None


def in_another_process(tmp_path: Path, body: str) -> str:
    script = textwrap.dedent(
        f"""
        from kgsearch.engine import Engine
        from kgsearch.model import ObjectIn
        from kgsearch.store.sqlite import SQLiteStore
        from kgsearch.testing import FakeEmbedder
        engine = Engine(SQLiteStore({str(tmp_path / "kg.db")!r}), embedder=FakeEmbedder(16))
        ids = [o.id for o in engine.list_rows("object", limit=10).items]
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script + textwrap.dedent(body) + "\nengine.close()\n"],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def test_a_later_store_maps_the_saved_vectors_instead_of_reading_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = saved_store(tmp_path)
    first_store = engine.store
    assert isinstance(first_store, SQLiteStore)
    first = first_store.vectors_cache.entry(first_store.db, "default", Kind.OBJECT)
    assert mapped(first.matrix)  # the saving process maps its own file too

    def no_reads(*args: object) -> None:
        raise AssertionError("the vectors were read from SQLite")

    monkeypatch.setattr(vector_cache, "_load", no_reads)
    store, entry = reopened(tmp_path)
    assert store.vectors_cache.mapped == 1 and mapped(entry.matrix)
    assert entry.scan is not None and mapped(entry.scan.codes[0])
    assert served(entry) == from_sqlite(tmp_path)
    query = entry.matrix[5].copy()
    wanted = first_store.vector_search("default", Kind.OBJECT, query, limit=5)
    assert store.vector_search("default", Kind.OBJECT, query, limit=5) == wanted
    store.close()
    engine.close()


CHANGES = {
    "insert": "engine.add_objects([ObjectIn(type='Thing', key='new')]); engine.embed_pending()",
    "re-embed": (
        "engine.update_object(ids[3], {'properties': {'name': 'something else'}}); "
        "engine.embed_pending()"
    ),
    "delete": "engine.delete('object', ids[:2])",
}


@pytest.mark.parametrize("where", ["this process", "another process"])
@pytest.mark.parametrize("change", list(CHANGES))
def test_changes_since_the_save_are_served_on_top_of_the_mapped_file(
    tmp_path: Path, change: str, where: str
) -> None:
    engine = saved_store(tmp_path)
    before = files(tmp_path)
    if where == "this process":
        exec(CHANGES[change], {"engine": engine, "ObjectIn": ObjectIn, "ids": _ids(engine)})
    else:
        in_another_process(tmp_path, CHANGES[change])
    store, entry = reopened(tmp_path)
    assert store.vectors_cache.mapped == 1 and store.vectors_cache.saves == 0
    assert files(tmp_path) == before
    assert served(entry) == from_sqlite(tmp_path) != served(_first(engine, before[0]))
    store.close()
    engine.close()


def _ids(engine: Engine) -> list[str]:
    return [o.id for o in engine.list_rows("object", limit=10).items]


def _first(engine: Engine, file: Path) -> Entry:
    """What the file alone holds."""
    from kgsearch.store.sqlite import saved_vectors

    saved = saved_vectors.read(file)
    assert saved is not None
    size = len(saved.ids)
    return Entry("", saved.seq, saved.rowids, saved.ids, saved.buffer[:size], saved.buffer, False)


@pytest.mark.parametrize("where", ["this process", "another process"])
def test_a_new_model_leaves_the_file_unused_and_saves_anew(tmp_path: Path, where: str) -> None:
    engine = saved_store(tmp_path)
    (old,) = files(tmp_path)
    switch = "engine.switch_model(FakeEmbedder(24)); engine.embed_pending()"
    if where == "this process":
        exec(switch, {"engine": engine, "FakeEmbedder": FakeEmbedder})
    else:
        in_another_process(tmp_path, switch)
    store, entry = reopened(tmp_path)
    assert store.vectors_cache.mapped == 0 and store.vectors_cache.saves == 1
    assert entry.matrix.shape[1] == 24
    assert served(entry) == from_sqlite(tmp_path)
    assert files(tmp_path) != [old] and len(files(tmp_path)) == 1
    store.close()
    engine.close()


def test_a_log_pruned_past_the_file_leaves_it_unused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = saved_store(tmp_path)
    monkeypatch.setattr(vector_cache, "_LOG_KEEP", 0)
    engine.add_objects([ObjectIn(type="Thing", key=f"n{i}") for i in range(2)])
    engine.embed_pending()
    engine.delete("object", _ids(engine)[:1])
    store, entry = reopened(tmp_path)
    assert store.vectors_cache.mapped == 0 and store.vectors_cache.saves == 1
    assert served(entry) == from_sqlite(tmp_path)
    store.close()
    engine.close()


def _truncate(file: Path) -> None:
    os.truncate(file, file.stat().st_size - 1)


def _scramble_vectors(file: Path) -> None:
    with file.open("r+b") as f:
        f.seek(4096)
        f.write(np.random.default_rng(0).standard_normal(ROWS * 16, dtype=np.float32).tobytes())


def _scramble_header(file: Path) -> None:
    with file.open("r+b") as f:
        f.seek(20)
        f.write(b"}{not json")


@pytest.mark.parametrize("damage", [_truncate, _scramble_vectors, _scramble_header])
def test_a_damaged_file_is_never_used_and_is_saved_anew(tmp_path: Path, damage: Any) -> None:
    engine = saved_store(tmp_path)
    (file,) = files(tmp_path)
    damage(file)
    store, entry = reopened(tmp_path)
    assert store.vectors_cache.mapped == 0 and store.vectors_cache.saves == 1
    assert served(entry) == from_sqlite(tmp_path)
    again, _ = reopened(tmp_path)
    assert again.vectors_cache.mapped == 1  # the new file is whole
    again.close()
    store.close()
    engine.close()


def test_a_store_replaced_by_another_does_not_use_the_file(tmp_path: Path) -> None:
    engine = saved_store(tmp_path)
    engine.close()
    other = tmp_path / "other"
    other.mkdir()
    twin = saved_store(other, "other")  # same rowids and log positions, other vectors
    twin.close()
    (tmp_path / "kg.db").unlink()
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"kg.db{suffix}").unlink(missing_ok=True)
    (other / "kg.db").rename(tmp_path / "kg.db")
    store, entry = reopened(tmp_path)
    assert store.vectors_cache.mapped == 0
    assert served(entry) == from_sqlite(tmp_path)
    store.close()


MAPS = """
import json, sys
from kgsearch.model import Kind
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.store.sqlite import vectors
vectors.INT8_MIN_ROWS = 10
store = SQLiteStore(sys.argv[1], ann_min_rows=10_000)
store.vectors_cache.entry(store.db, "default", Kind.OBJECT)
maps = [line.split() for line in open("/proc/self/maps")]
files = sorted({(m[4], m[5]) for m in maps if len(m) > 5 and m[5].endswith(".vectors")})
cache = store.vectors_cache
print(json.dumps({"mapped": cache.mapped, "saves": cache.saves, "files": files}))
"""


# Each process reads its rows slowly (a wide window for the other to read them too),
# and starts once both are ready.
TOGETHER = """
import os, sys, time
from kgsearch.store.sqlite import vectors
real = vectors._load
def slow(*args):
    time.sleep(0.5)
    return real(*args)
vectors._load = slow
print("ready", flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
"""


def _run_together(tmp_path: Path) -> list[dict[str, Any]]:
    go = tmp_path / "go"
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", TOGETHER + MAPS, str(tmp_path / "kg.db"), str(go)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for run in runs:
        assert run.stdout is not None and run.stdout.readline() == "ready\n"
    go.touch()
    return [json.loads(run.communicate(timeout=120)[0]) for run in runs]


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/self/maps")
def test_two_processes_map_the_same_file(tmp_path: Path) -> None:
    saved_store(tmp_path).close()
    (file,) = files(tmp_path)
    found = _run_together(tmp_path)
    inode = str(file.stat().st_ino)
    for one in found:
        assert one["mapped"] == 1
        assert one["files"] == [[inode, str(file)]]
    assert files(tmp_path) == [file]


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/self/maps")
def test_processes_starting_together_read_the_rows_once_and_share_the_file(
    tmp_path: Path,
) -> None:
    saved_store(tmp_path).close()
    (old,) = files(tmp_path)
    old.unlink()  # as before any process saved one
    found = _run_together(tmp_path)
    (file,) = files(tmp_path)
    assert sorted((one["saves"], one["mapped"]) for one in found) == [(0, 1), (1, 0)]
    for one in found:
        assert one["files"] == [[str(file.stat().st_ino), str(file)]]
