"""The 4-bit scan kernel saved beside the store and loaded for the same rows (never for
others, never from a damaged file), and the pieces of its cheaper build: products on one
onnxruntime thread, codes handed to onnxruntime beside the graph, OpenBLAS on one
thread around the LAPACK calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kgsearch.engine import Engine
from kgsearch.model import Kind, ObjectIn
from kgsearch.store import nbits
from kgsearch.store.ann import Int8Scan
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.testing import FakeEmbedder

DIMS = 384
ROWS = 12_000


def _rows(rows: int, seed: int) -> np.ndarray:
    """Unit rows whose variance lies mostly in 48 directions (as embeddings' does), wide
    enough to be projected (256 of 384 coordinates kept)."""
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((48, DIMS))
    matrix = rng.standard_normal((rows, 48)) @ basis + 0.3 * rng.standard_normal((rows, DIMS))
    unit: np.ndarray = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)
    return unit


def _scan(matrix: np.ndarray, saved: Path) -> Int8Scan:
    scan = Int8Scan(matrix, kernel_min_rows=5_000, saved=saved)
    assert scan.wait(120)
    return scan


def _refuse_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(matrix: np.ndarray, rows: int) -> None:
        raise AssertionError("the kernel was built")

    monkeypatch.setattr(nbits, "build", refuse)


def _count_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    builds: list[int] = []
    real = nbits.build

    def counted(matrix: np.ndarray, rows: int) -> nbits.Kernel | None:
        builds.append(rows)
        return real(matrix, rows)

    monkeypatch.setattr(nbits, "build", counted)
    return builds


def _exact_top_10(scan: Int8Scan, matrix: np.ndarray, positions: list[int]) -> bool:
    return all(
        scan.search(matrix[p], 10)[0].tolist() == np.argsort(-(matrix @ matrix[p]))[:10].tolist()
        for p in positions
    )


def test_a_saved_kernel_is_loaded_for_the_same_rows_and_scores_as_the_built_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    matrix = _rows(ROWS, seed=1)
    built = _scan(matrix, tmp_path / "idx" / "rel.nbits")
    files = list((tmp_path / "idx").glob("rel-*.nbits"))
    _refuse_builds(monkeypatch)
    loaded = _scan(matrix.copy(), tmp_path / "idx" / "rel.nbits")
    assert (len(files), built.kernel_loaded, loaded.kernel_loaded) == (1, False, True)
    assert built._kernel is not None and loaded._kernel is not None
    for query in matrix[[3, 5_000, 11_999]]:
        assert np.array_equal(built._kernel.scores(query), loaded._kernel.scores(query))
    assert _exact_top_10(loaded, matrix, [3, 5_000, 11_999])


def test_a_known_key_finds_the_saved_kernel_without_reading_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the vectors mapped from their saved file (store/sqlite/saved_vectors.py) carry the
    # kernel's key: hashing every row would read the whole mapped matrix
    matrix = _rows(ROWS, seed=6)
    _scan(matrix, tmp_path / "rel.nbits")
    key = nbits.key(matrix, ROWS)
    _refuse_builds(monkeypatch)

    def no_hashing(matrix: np.ndarray, rows: int) -> str:
        raise AssertionError("the rows were hashed")

    monkeypatch.setattr(nbits, "key", no_hashing)
    scan = Int8Scan(matrix, kernel_min_rows=5_000, saved=tmp_path / "rel.nbits", key=(ROWS, key))
    assert scan.wait(120) and scan.kernel_loaded


def test_a_saved_kernel_of_other_rows_is_rebuilt_and_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    matrix = _rows(ROWS, seed=2)
    _scan(matrix, tmp_path / "rel.nbits")
    changed = matrix.copy()
    changed[7_000] = changed[8]  # one row of 12,000
    builds = _count_builds(monkeypatch)
    rebuilt = _scan(changed, tmp_path / "rel.nbits")
    again = _scan(changed, tmp_path / "rel.nbits")
    files = list(tmp_path.glob("rel-*.nbits"))  # the older rows' file is gone
    assert (builds, rebuilt.kernel_loaded, again.kernel_loaded, len(files)) == (
        [ROWS],
        False,
        True,
        1,
    )


def _truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flipped(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10  # within the codes: their CRC-32 no longer matches
    path.write_bytes(bytes(data))


def _garbage(path: Path) -> None:
    path.write_bytes(b"not a kernel")


def _an_array(path: Path) -> None:
    with path.open("wb") as out:
        np.save(out, np.zeros(3))


@pytest.mark.parametrize("damage", [_truncated, _flipped, _garbage, _an_array])
def test_a_damaged_saved_kernel_is_rebuilt_never_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Callable[[Path], None]
) -> None:
    matrix = _rows(ROWS, seed=3)
    _scan(matrix, tmp_path / "rel.nbits")
    (saved,) = tmp_path.glob("rel-*.nbits")
    damage(saved)
    builds = _count_builds(monkeypatch)
    rebuilt = _scan(matrix, tmp_path / "rel.nbits")
    assert (builds, rebuilt.kernel_loaded) == ([ROWS], False)
    assert _exact_top_10(rebuilt, matrix, [10, 6_000])
    assert _scan(matrix, tmp_path / "rel.nbits").kernel_loaded  # saved again, whole


def test_a_saved_kernel_of_other_rows_under_this_rows_name_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name is not trusted either: the file holds the digest of its rows."""
    matrix, other = _rows(ROWS, seed=4), _rows(ROWS, seed=5)
    _scan(matrix, tmp_path / "a" / "rel.nbits")
    _scan(other, tmp_path / "b" / "rel.nbits")
    (mine,), (theirs,) = (tmp_path / "a").glob("*.nbits"), (tmp_path / "b").glob("*.nbits")
    mine.write_bytes(theirs.read_bytes())
    builds = _count_builds(monkeypatch)
    rebuilt = _scan(matrix, tmp_path / "a" / "rel.nbits")
    assert (builds, rebuilt.kernel_loaded) == ([ROWS], False)
    assert _exact_top_10(rebuilt, matrix, [1, 9_000])


def test_a_sqlite_store_saves_its_kernels_beside_it_for_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_kernels: None
) -> None:
    path = str(tmp_path / "kg.db")
    store = SQLiteStore(path, ann_min_rows=10_000)
    engine = Engine(store, embedder=FakeEmbedder(128))
    engine.add_objects([ObjectIn(type="T", key=f"k{i}") for i in range(100)])
    engine.embed_pending()
    assert store.wait_for_index("default", Kind.OBJECT, timeout=60)
    engine.close()
    files = [p.name.rsplit("-", 1)[0] for p in Path(path + ".ann").glob("*.nbits")]
    assert len(files) == 1 and files[0].endswith("-object")
    _refuse_builds(monkeypatch)
    reopened = SQLiteStore(path, ann_min_rows=10_000)
    assert reopened.wait_for_index("default", Kind.OBJECT, timeout=60)
    scan = reopened.vectors_cache.entry(reopened.db, "default", Kind.OBJECT).scan
    assert scan is not None
    assert (scan.kernel_rows, scan.kernel_loaded) == (100, True)
    reopened.close()


def test_the_build_products_on_onnxruntime_equal_numpy_products() -> None:
    rows = _rows(2_048, seed=6)
    mean = rows.mean(axis=0)
    axes = np.linalg.qr(np.random.default_rng(7).standard_normal((DIMS, 256)))[0]
    axes = axes.astype(np.float32)
    gram = nbits._Products(DIMS)(rows)
    projected = nbits._Products(DIMS, (mean, axes))(rows)
    np.testing.assert_allclose(gram, rows.T @ rows, atol=1e-3)
    np.testing.assert_allclose(projected, (rows - mean) @ axes, atol=1e-5)


def test_a_kernel_given_its_codes_beside_the_graph_scores_as_the_graph_holding_them() -> None:
    import onnxruntime as ort

    matrix = _rows(3_000, seed=8)
    projection = nbits._projection(matrix, 3_000, 256)
    packed, scales = nbits._quantize(matrix, 3_000, projection)
    kernel = nbits.Kernel(nbits.Codes(packed, scales, projection))
    blob = nbits.graph_bytes(packed, scales, dims=256, rows=3_000)
    inside = ort.InferenceSession(blob, providers=["CPUExecutionProvider"])
    assert projection is not None
    query = matrix[17]
    held = inside.run(["y"], {"q": (query @ projection[1])[None, :]})[0].reshape(-1)
    assert np.array_equal(kernel.scores(query), held)


_OVERLAPPING_BLOCKS = """
import json, threading
from threadpoolctl import threadpool_info
from kgsearch.store import nbits

def count():
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

before, seen = count(), []
start, first_in, second_in = threading.Event(), threading.Event(), threading.Event()

def build(first):
    start.wait(10)
    if not first:
        first_in.wait(10)  # the second starts while the first holds its block
    with nbits._one_blas_thread():
        if first:
            first_in.set()
            second_in.wait(0.5)  # blocks that overlapped would restore each other's 1
        else:
            second_in.set()
        seen.append(count())

builds = [threading.Thread(target=build, args=(first,)) for first in (True, False)]
for thread in builds:
    thread.start()
start.set()
for thread in builds:
    thread.join(10)
print(json.dumps([before, seen, count()]))
"""


def test_blas_runs_one_thread_within_overlapping_blocks_and_its_count_comes_back() -> None:
    # a process of its own: BLAS's count is process-wide, and `serve` tests in this one
    # may have set it to 1 for good
    done = subprocess.run(
        [sys.executable, "-c", _OVERLAPPING_BLOCKS],
        env={**os.environ, "OPENBLAS_NUM_THREADS": "2"},
        capture_output=True,
        text=True,
        check=True,
    )
    before, seen, after = json.loads(done.stdout)
    if not before:
        pytest.skip("numpy has no BLAS threadpoolctl can see")
    # each block ran on one thread; the count from before both is back
    assert (before, seen, after) == ([2], [[1], [1]], [2])


def test_the_rotation_is_made_once_a_process(monkeypatch: pytest.MonkeyPatch) -> None:
    nbits._rotation.cache_clear()
    made: list[Any] = []
    real = np.linalg.qr

    def counted(a: Any, *args: Any, **kwargs: Any) -> Any:
        made.append(a.shape)
        return real(a, *args, **kwargs)

    monkeypatch.setattr(np.linalg, "qr", counted)
    matrix = _rows(6_000, seed=9)
    first = nbits._projection(matrix, 6_000, 256)
    second = nbits._projection(matrix, 6_000, 256)
    assert first is not None and second is not None
    assert made == [(256, 256)]
    assert np.array_equal(first[1], second[1])
