"""The accelerated vector paths return what an exact float32 product returns."""

from __future__ import annotations

import numpy as np

from kgsearch.store.ann import AnnIndex, Int8Scan


def _unit(rows: int, dims: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((rows, dims)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_int8_scan_returns_the_exact_top_k_with_float32_scores() -> None:
    matrix = _unit(25_000, 64, seed=1)
    scan = Int8Scan(matrix)
    for query in _unit(20, 64, seed=2):
        positions, scores = scan.search(query, 10)
        exact = matrix @ query
        expected = np.argsort(-exact)[:10]
        assert positions.tolist() == expected.tolist()
        np.testing.assert_allclose(scores, exact[expected], rtol=1e-5)


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
