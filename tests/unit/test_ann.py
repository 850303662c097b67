"""The accelerated vector paths return what an exact float32 product returns."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kgsearch.store import ann
from kgsearch.store.ann import AnnIndex, Int8Scan


def _unit(rows: int, dims: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((rows, dims)).astype(np.float32)
    unit: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return unit


def _assert_exact(scan: Int8Scan, matrix: np.ndarray, queries: np.ndarray, **kw: Any) -> None:
    for query in queries:
        positions, scores = scan.search(query, 10, **kw)
        exact = matrix @ query
        expected = np.argsort(-exact)[:10]
        assert positions.tolist() == expected.tolist()
        np.testing.assert_allclose(scores, exact[expected], rtol=1e-5)


def test_int8_scan_returns_the_exact_top_k_with_float32_scores() -> None:
    matrix = _unit(25_000, 64, seed=1)
    _assert_exact(Int8Scan(matrix), matrix, _unit(20, 64, seed=2))


@pytest.mark.parametrize("threads", [1, 2])
def test_int8_scan_in_parallel_parts_is_still_exact(
    threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "_PART_MIN_ROWS", 50_000)
    matrix = _unit(120_000, 32, seed=5)
    assert len(ann._parts(120_000, threads)) == threads
    _assert_exact(Int8Scan(matrix), matrix, _unit(10, 32, seed=6), threads=threads)


def test_int8_scan_without_numkong_falls_back_to_usearch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ann._native(), "cdist", None)
    matrix = _unit(25_000, 64, seed=7)
    _assert_exact(Int8Scan(matrix), matrix, _unit(10, 64, seed=8))


def test_int8_scan_of_tiny_matrices_returns_every_row() -> None:
    matrix = _unit(7, 16, seed=9)
    positions, scores = Int8Scan(matrix).search(matrix[3], 10)
    assert sorted(positions.tolist()) == list(range(7))
    assert positions[0] == 3
    assert scores[0] == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(("size", "count"), [(50, 100), (5_000, 100), (200_000, 100), (300, 1)])
def test_largest_picks_the_top_scores_even_with_ties(size: int, count: int) -> None:
    rng = np.random.default_rng(size)
    scores = rng.integers(-50, 50, size).astype(np.float32)  # many ties
    picked = ann._largest(scores, count)
    assert len(set(picked.tolist())) == min(size, count)
    assert sorted(scores[picked].tolist()) == sorted(scores.tolist())[-count:]


def test_hnsw_finds_most_of_the_exact_top_10_on_random_vectors() -> None:
    matrix = _unit(5_000, 32, seed=3)
    index = AnnIndex(matrix, background=False)
    queries = _unit(50, 32, seed=4)
    found = 0
    for query in queries:
        positions, _ = index.search(query, 10)
        expected = set(np.argsort(-(matrix @ query))[:10].tolist())
        found += len(expected & set(positions.tolist()))
    assert found / (10 * len(queries)) >= 0.9


def test_hnsw_beam_can_be_changed() -> None:
    index = AnnIndex(_unit(100, 8, seed=10), background=False, expansion_search=64)
    assert index.expansion_search == 64
    index.expansion_search = 512
    assert index.expansion_search == 512


def test_hnsw_scores_are_float32_products_best_first() -> None:
    matrix = _unit(2_000, 16, seed=11)
    index = AnnIndex(matrix, background=False)
    for query in _unit(10, 16, seed=12):
        positions, scores = index.search(query, 10)
        np.testing.assert_allclose(scores, matrix[positions] @ query, rtol=1e-6)
        assert scores.tolist() == sorted(scores.tolist(), reverse=True)


def test_a_saved_index_is_loaded_for_the_same_vectors(tmp_path: Path) -> None:
    matrix = _unit(3_000, 16, seed=13)
    path = tmp_path / "idx" / "rel.usearch"
    first = AnnIndex(matrix, background=False, saved=path)
    assert not first.loaded
    assert len(list(path.parent.glob("rel-*.usearch"))) == 1
    second = AnnIndex(matrix.copy(), background=False, saved=path)
    assert second.loaded
    for query in _unit(5, 16, seed=14):
        a, b = first.search(query, 10), second.search(query, 10)
        assert a[0].tolist() == b[0].tolist()


def test_a_saved_index_of_other_vectors_is_rebuilt_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "rel.usearch"
    AnnIndex(_unit(3_000, 16, seed=15), background=False, saved=path)
    changed = _unit(3_000, 16, seed=16)
    rebuilt = AnnIndex(changed, background=False, saved=path)
    assert not rebuilt.loaded
    again = AnnIndex(changed, background=False, saved=path)
    assert again.loaded
    assert len(list(tmp_path.glob("rel-*.usearch"))) == 1  # the older vectors' file is gone
    query = changed[7]
    assert again.search(query, 1)[0].tolist() == [7]


def test_a_corrupt_saved_index_is_rebuilt(tmp_path: Path) -> None:
    matrix = _unit(1_000, 16, seed=17)
    path = tmp_path / "rel.usearch"
    AnnIndex(matrix, background=False, saved=path)
    (saved,) = tmp_path.glob("rel-*.usearch")
    saved.write_bytes(b"not an index")
    index = AnnIndex(matrix, background=False, saved=path)
    assert not index.loaded
    assert index.search(matrix[3], 1)[0].tolist() == [3]
    assert AnnIndex(matrix, background=False, saved=path).loaded


def test_an_index_that_cannot_be_saved_still_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where a folder should be")
    matrix = _unit(500, 8, seed=18)
    index = AnnIndex(matrix, background=False, saved=blocker / "rel.usearch")
    assert index.ready
    assert index.search(matrix[5], 1)[0].tolist() == [5]
    assert "could not save the vector index" in caplog.text


def test_int8_codes_do_not_depend_on_the_block_size(monkeypatch: pytest.MonkeyPatch) -> None:
    matrix = _unit(1_000, 16, seed=19)
    whole = Int8Scan(matrix)
    monkeypatch.setattr(ann, "_QUANTIZE_ROWS", 64)
    blocks = Int8Scan(matrix)
    assert np.array_equal(whole._codes, blocks._codes)
    _assert_exact(blocks, matrix, _unit(5, 16, seed=20))


def test_a_build_never_deletes_an_index_saved_after_it_began(tmp_path: Path) -> None:
    path = tmp_path / "rel.usearch"
    AnnIndex(_unit(2_000, 16, seed=22), background=False, saved=path)  # newer vectors
    (newer,) = tmp_path.glob("rel-*.usearch")
    late = AnnIndex(_unit(2_000, 16, seed=21), background=False)  # began before it
    late._save(late._file(path), started=newer.stat().st_mtime - 10)
    assert newer.exists()
    assert len(list(tmp_path.glob("rel-*.usearch"))) == 2
    assert not list(tmp_path.glob(".*.tmp"))


def test_the_native_libraries_load_on_first_use_onnxruntime_before_usearch() -> None:
    # importing usearch before onnxruntime crashes the process once onnxruntime loads
    # (usearch 2.26 / numkong 7.8 with onnxruntime 1.31), so the index imports
    # onnxruntime first; and opening a store imports neither
    code = (
        "import sys, numpy as np\n"
        "from kgsearch.store import ann\n"
        "print('onnxruntime' in sys.modules, 'usearch' in sys.modules)\n"
        "matrix = np.eye(4, dtype=np.float32)\n"
        "print(ann.AnnIndex(matrix, background=False).search(matrix[2], 1)[0].tolist())\n"
        "names = list(sys.modules)\n"
        "print(names.index('onnxruntime') < names.index('usearch'))\n"
        "import onnxruntime\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "[2]", "True"]


def test_largest_falls_back_when_few_scores_reach_the_tight_threshold() -> None:
    # every 16th score is high, the rest low: the sample's tight threshold admits only
    # a few dozen scores, fewer than asked for, so the looser one must decide
    scores = np.zeros(100_000, dtype=np.float32)
    scores[:: ann._SAMPLE_STRIDE] = np.arange(scores[:: ann._SAMPLE_STRIDE].size) + 100
    scores[1::2] = np.random.default_rng(3).random(50_000).astype(np.float32)
    picked = ann._largest(scores, 100)
    assert len(set(picked.tolist())) == 100
    assert sorted(scores[picked].tolist()) == sorted(scores.tolist())[-100:]


def test_int8_scan_ties_come_in_position_order() -> None:
    matrix = _unit(30_000, 32, seed=11)
    query = matrix[20_000].copy()
    for position in (29_000, 5, 17_000):
        matrix[position] = query  # the same vector at four positions
    positions, scores = Int8Scan(matrix).search(query, 4)
    assert positions.tolist() == [5, 17_000, 20_000, 29_000]
    assert len(set(scores.tolist())) == 1
