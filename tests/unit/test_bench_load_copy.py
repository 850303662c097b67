"""scripts/bench_load.py serves a fresh copy of its --db: the write client's objects go
into the copy, never into --db, so runs compare across runs."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@pytest.fixture
def bench_load() -> Iterator[ModuleType]:
    pytest.importorskip("psycopg")  # bench_load also drives the PostgreSQL variant
    sys.path.insert(0, str(SCRIPTS))
    try:
        import bench_load

        yield bench_load
    finally:
        sys.path.remove(str(SCRIPTS))


def _rows(path: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT id, name FROM t ORDER BY id").fetchall()


def test_fresh_copy_holds_the_committed_rows_and_leaves_the_source_alone(
    bench_load: ModuleType, tmp_path: Path
) -> None:
    source = tmp_path / "source.db"
    writer = sqlite3.connect(source)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
    writer.executemany("INSERT INTO t (name) VALUES (?)", [("a",), ("b",)])
    writer.commit()  # still in the WAL: the writer holds it open
    (tmp_path / "source.db.ann").mkdir()
    (tmp_path / "source.db.ann" / "objects.idx").write_bytes(b"index")
    target = tmp_path / "run" / "served.db"
    target.parent.mkdir()
    target.write_bytes(b"an older copy")
    Path(f"{target}-wal").write_bytes(b"its stale log")

    copied = bench_load.fresh_copy(source, target)
    with sqlite3.connect(copied) as served:
        served.execute("INSERT INTO t (name) VALUES ('BenchWrite')")
    writer.close()

    assert copied == target
    assert _rows(source) == [(1, "a"), (2, "b")]
    assert _rows(target) == [(1, "a"), (2, "b"), (3, "BenchWrite")]
    assert (tmp_path / "run" / "served.db.ann" / "objects.idx").read_bytes() == b"index"
    again = bench_load.fresh_copy(source, target)
    assert _rows(again) == [(1, "a"), (2, "b")]  # the next server starts from the source
