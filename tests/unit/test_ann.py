"""The accelerated vector paths return what an exact float32 product returns."""

from __future__ import annotations

import numpy as np
import pytest

from kgsearch.store import ann
from kgsearch.store.ann import AnnIndex, Int8Scan


def _unit(rows: int, dims: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((rows, dims)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _assert_exact(scan: Int8Scan, matrix: np.ndarray, queries: np.ndarray, **kw: int) -> None:
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
    monkeypatch.setattr(ann, "_cdist", None)
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
