"""The int8 scan's 4-bit first pass (store/nbits.py): exact results (also through fewer
coordinates), appends, deletions, the rows limit, background rebuilds, failed builds and
waiting for a build."""

from __future__ import annotations

import threading
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

DIMS = 128
ROWS = 25_000


def _unit(rows: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((rows, DIMS)).astype(np.float32)
    unit: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return unit


def _near(matrix: np.ndarray, positions: list[int], seed: int) -> np.ndarray:
    """Queries close to the given rows (random queries have no clear top 10)."""
    rng = np.random.default_rng(seed)
    queries = matrix[positions] + 0.05 * rng.standard_normal((len(positions), DIMS))
    unit: np.ndarray = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    return unit


def _ready(matrix: np.ndarray, rows: int | None = None) -> Int8Scan:
    scan = Int8Scan(matrix, rows, kernel_min_rows=20_000)
    assert scan.wait(60)
    return scan


def _assert_exact_top_10(scan: Int8Scan, matrix: np.ndarray, queries: Any) -> None:
    for query in queries:
        positions, scores = scan.search(query, 10)
        exact = matrix @ query
        expected = np.argsort(-exact)[:10]
        assert positions.tolist() == expected.tolist()
        np.testing.assert_allclose(scores, exact[expected], rtol=1e-5)


def _no_int8_codes(scan: Int8Scan, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any) -> None:
        raise AssertionError("the int8 codes were scanned")

    monkeypatch.setattr(scan, "_top", refuse)


def test_a_ready_kernel_gives_the_exact_top_k_without_the_int8_codes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    matrix = _unit(ROWS, seed=1)
    scan = _ready(matrix)
    _no_int8_codes(scan, monkeypatch)
    _assert_exact_top_10(scan, matrix, _near(matrix, [3, 9_000, 24_999], seed=2))


def test_rows_appended_after_the_build_are_found_in_the_int8_codes() -> None:
    buffer = np.zeros((ROWS + 1_000, DIMS), dtype=np.float32)
    buffer[:] = _unit(ROWS + 1_000, seed=3)
    scan = _ready(buffer, ROWS)
    scan.extend(buffer, ROWS, ROWS + 100)  # too few to rebuild for
    positions, _ = scan.search(buffer[ROWS + 50], 1, rows=ROWS + 100)
    assert (scan.kernel_rows, positions.tolist()) == (ROWS, [ROWS + 50])


def test_a_search_during_a_rebuild_answers_from_the_old_kernel_and_the_codes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    buffer = _unit(ROWS + 8_000, seed=4)
    scan = _ready(buffer, ROWS)
    release, built = threading.Event(), nbits.build

    def slow(matrix: np.ndarray, rows: int) -> nbits.Kernel | None:
        release.wait(60)
        return built(matrix, rows)

    monkeypatch.setattr(nbits, "build", slow)
    scan.extend(buffer, ROWS, ROWS + 8_000)
    during = scan.search(buffer[ROWS + 7_000], 1)[0].tolist()
    held = scan.kernel_rows
    release.set()
    assert scan.wait(60)
    assert (during, held, scan.kernel_rows) == ([ROWS + 7_000], ROWS, ROWS + 8_000)


def test_killed_rows_crowd_no_live_row_out_of_the_kernel_candidates() -> None:
    matrix = _unit(ROWS, seed=5)
    query = matrix[0].copy()
    copies = np.arange(100, 400)
    matrix[copies] = query  # 300 copies, more than the candidates kept
    scan = _ready(matrix)
    scan.kill(np.concatenate([[0], copies]))
    alive = np.ones(ROWS, dtype=np.bool_)
    alive[0] = False
    alive[copies] = False
    positions, _ = scan.search(query, 1, alive=alive)
    assert positions.tolist() == [int(np.argsort(-(matrix @ query))[301])]


def test_rows_beyond_the_limit_are_not_returned_by_the_kernel() -> None:
    matrix = _unit(ROWS, seed=6)
    scan = _ready(matrix)
    positions, _ = scan.search(matrix[22_000], 5, rows=20_000)
    assert scan.kernel_rows == ROWS
    assert int(positions.max()) < 20_000


def test_without_onnx_no_kernel_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nbits, "available", lambda: False)
    matrix = _unit(ROWS, seed=7)
    scan = _ready(matrix)
    positions, _ = scan.search(matrix[11], 1)
    assert (scan.kernel_rows, positions.tolist()) == (0, [11])


def test_a_width_that_is_not_whole_blocks_keeps_the_int8_scan() -> None:
    assert nbits.build(np.ones((30_000, 96), dtype=np.float32), 30_000) is None


def _low_rank(rows: int, dims: int, seed: int) -> np.ndarray:
    """Unit rows whose variance lies mostly in 48 directions, as model embeddings' does
    (isotropic random rows would lose a third of their variance to any projection)."""
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((48, dims))
    matrix = rng.standard_normal((rows, 48)) @ basis + 0.3 * rng.standard_normal((rows, dims))
    unit: np.ndarray = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)
    return unit


def test_wide_rows_are_scanned_through_fewer_coordinates_and_keep_the_exact_top_k(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    matrix = _low_rank(ROWS, 384, seed=8)
    scan = _ready(matrix)
    _no_int8_codes(scan, monkeypatch)
    assert scan._kernel is not None and scan._kernel.width == 256
    rng = np.random.default_rng(9)
    queries = []
    for position in (5, 12_000, 24_990):
        query = matrix[position] + 0.5 * rng.standard_normal(384).astype(np.float32) / 20
        queries.append(query / np.linalg.norm(query))
    _assert_exact_top_10(scan, matrix, queries)


def test_the_width_kept_is_two_thirds_in_whole_blocks_or_everything() -> None:
    assert [nbits.width(d) for d in (128, 256, 384, 768)] == [128, 128, 256, 512]


def test_the_query_int8_code_is_not_made_when_the_kernel_holds_every_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    matrix = _unit(ROWS, seed=10)
    scan = _ready(matrix)

    def refuse(query: np.ndarray) -> None:
        raise AssertionError("the query's int8 code was made")

    monkeypatch.setattr(scan, "_code", refuse)
    assert scan.search(matrix[7], 1)[0].tolist() == [7]


def test_a_kernel_build_that_fails_is_not_tried_again_until_the_rows_double(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tried: list[int] = []

    def failing(matrix: np.ndarray, rows: int) -> nbits.Kernel | None:
        tried.append(rows)
        raise RuntimeError("no kernel")

    monkeypatch.setattr(nbits, "build", failing)
    buffer = np.zeros((50_000, DIMS), dtype=np.float32)
    buffer[:] = _unit(50_000, seed=11)
    scan = _ready(buffer, 20_000)
    for stop in range(21_000, 40_000, 6_000):  # 21k, 27k, 33k, 39k: fewer than twice 20k
        scan.extend(buffer, stop - 1_000, stop)
        assert scan.wait(60)
    scan.extend(buffer, 39_000, 40_000)
    assert scan.wait(60)
    assert (tried, scan.search(buffer[39_500], 1)[0].tolist()) == ([20_000, 40_000], [39_500])


def test_wait_for_index_waits_for_the_scan_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_kernels: None
) -> None:
    release, built = threading.Event(), nbits.build

    def held(matrix: np.ndarray, rows: int) -> nbits.Kernel | None:
        release.wait(60)
        return built(matrix, rows)

    monkeypatch.setattr(nbits, "build", held)
    store = SQLiteStore(str(tmp_path / "kg.db"), ann_min_rows=10_000)
    engine = Engine(store, embedder=FakeEmbedder(DIMS))
    engine.add_objects([ObjectIn(type="T", key=f"k{i}") for i in range(100)])
    engine.embed_pending()
    waiting = store.wait_for_index("default", Kind.OBJECT, timeout=0.01)
    release.set()
    done = store.wait_for_index("default", Kind.OBJECT, timeout=60)
    scan = store.vectors_cache.entry(store.db, "default", Kind.OBJECT).scan
    assert scan is not None
    assert (waiting, done, scan.kernel_rows) == (False, True, 100)
    engine.close()


def test_a_scan_searched_once_builds_no_kernel_but_a_second_search_or_a_wait_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A one-shot command searches each scan once: it must not pay for a build."""
    builds: list[int] = []
    real_build = nbits.build

    def counted(matrix: np.ndarray, rows: int) -> Any:
        builds.append(rows)
        return real_build(matrix, rows)

    def building() -> bool:
        return any(t.name == "kgsearch-scan-kernel" for t in threading.enumerate())

    monkeypatch.setattr(nbits, "build", counted)
    matrix = _unit(ROWS, seed=11)
    query = _near(matrix, [5], seed=12)[0]
    scan = Int8Scan(matrix, kernel_min_rows=20_000)
    scan.search(query, 10)
    assert (building(), builds, scan.kernel_rows) == (False, [], 0)
    scan.search(query, 10)
    assert scan.wait(60)
    assert (builds, scan.kernel_rows) == ([ROWS], ROWS)
    waited = Int8Scan(matrix, kernel_min_rows=20_000)
    assert waited.wait(60)
    assert (builds, waited.kernel_rows) == ([ROWS, ROWS], ROWS)


def test_each_thread_gets_its_scores_in_a_buffer_of_its_own() -> None:
    """The product is written into the calling thread's buffer (bound once): a thread's
    next call reuses it, and another thread's call leaves it alone."""
    matrix = _unit(6_000, seed=21)
    kernel = nbits.build(matrix, 6_000)
    assert kernel is not None
    first = kernel.scores(matrix[0])
    expected = first.copy()
    theirs: list[np.ndarray] = []
    thread = threading.Thread(target=lambda: theirs.append(kernel.scores(matrix[1]).copy()))
    thread.start()
    thread.join()
    assert np.array_equal(first, expected)  # untouched by the other thread's call
    assert not np.array_equal(theirs[0], expected)
    again = kernel.scores(matrix[1])
    assert again is first and np.array_equal(again, theirs[0])
