"""Fast top-k over an in-memory matrix of unit vectors (stores that keep vectors in process).

Two accelerations, both measured by ``scripts/bench_latency.py``:

* :class:`Int8Scan` — an exact scan over an int8 copy of the matrix with usearch's SIMD
  kernels (a quarter of the memory traffic of float32), then the best candidates are
  re-scored in float32. On the MetaQA relationships (129k × 384) this is about 3×
  faster than numpy's float32 product and returned the exact top 10 in every test query.
* :class:`AnnIndex` — HNSW for very large collections, built in a background thread
  (searches use the scan until it is ready). On graph texts that are near-duplicates of
  each other ("X starred actors Y" × 30,000) HNSW recall against real questions stayed
  near 0.93, which is why it only starts at :data:`ANN_MIN_ROWS`.
"""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt

# onnxruntime must be loaded before usearch: in the other order the process dies with a
# segmentation fault when onnxruntime is imported later (usearch 2.26 / numkong 7.8 with
# onnxruntime 1.31, reproduced with `import usearch.index; import onnxruntime`).
import onnxruntime  # noqa: F401  # isort: skip
from usearch.compiled import MetricKind  # isort: skip
from usearch.index import Index  # isort: skip
from usearch.index import search as brute_force  # isort: skip

__all__ = ["ANN_MIN_ROWS", "INT8_MIN_ROWS", "AnnIndex", "Int8Scan"]

# From this many rows an int8 scan beats numpy's float32 product.
INT8_MIN_ROWS = 20_000
# From this many rows the HNSW index takes over from the scan.
ANN_MIN_ROWS = 400_000
# The int8 scan keeps this many candidates (at least) for exact float32 re-scoring.
_RESCORE = 100
_CONNECTIVITY = 16
_EXPANSION_ADD = 128
# Graph texts are often near-duplicates ("X starred actors Y" × thousands); a wide
# search beam keeps recall ≥ 0.95 there at well under a millisecond per query.
_EXPANSION_SEARCH = 256


class AnnIndex:
    """HNSW over the rows of ``matrix`` (keys are row positions).

    Args:
        matrix: Unit-length float32 vectors, one per row.
        background: Build in a daemon thread (True) or now (False).
    """

    def __init__(
        self,
        matrix: npt.NDArray[np.float32],
        *,
        background: bool = True,
        expansion_search: int = _EXPANSION_SEARCH,
    ) -> None:
        self.rows = matrix.shape[0]
        self._index = Index(
            ndim=matrix.shape[1],
            metric="ip",
            dtype="f32",
            connectivity=_CONNECTIVITY,
            expansion_add=_EXPANSION_ADD,
            expansion_search=expansion_search,
        )
        self._ready = threading.Event()
        if background:
            threading.Thread(
                target=self._build, args=(matrix,), daemon=True, name="kgsearch-ann-build"
            ).start()
        else:
            self._build(matrix)

    def _build(self, matrix: npt.NDArray[np.float32]) -> None:
        self._index.add(np.arange(matrix.shape[0], dtype=np.uint64), matrix, threads=0)
        self._ready.set()

    @property
    def ready(self) -> bool:
        """Whether the index can answer queries."""
        return self._ready.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until built (for benchmarks); True when ready."""
        return self._ready.wait(timeout)

    def search(
        self, query: npt.NDArray[np.float32], k: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(row positions, inner-product scores) of the approximate top ``k``."""
        matches = self._index.search(query, count=min(k, self.rows))
        keys = np.asarray(matches.keys, dtype=np.int64)
        scores = 1.0 - np.asarray(matches.distances, dtype=np.float32)
        return keys, scores


class Int8Scan:
    """Exact scan over an int8 quantized copy, re-scored in float32.

    Args:
        matrix: Unit-length float32 vectors, one per row (kept by reference).
    """

    def __init__(self, matrix: npt.NDArray[np.float32]) -> None:
        self._matrix = matrix
        peak = float(np.abs(matrix).max()) or 1.0
        self._scale = 127.0 / peak
        self._codes = np.clip(np.rint(matrix * self._scale), -127, 127).astype(np.int8)

    def search(
        self, query: npt.NDArray[np.float32], k: int, *, threads: int = 0
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(row positions, float32 inner products) of the top ``k``, best first."""
        rows = self._codes.shape[0]
        count = min(rows, max(_RESCORE, 4 * k))
        code = np.clip(np.rint(query * self._scale), -127, 127).astype(np.int8)
        matches = brute_force(self._codes, code, count, MetricKind.IP, exact=True, threads=threads)
        candidates = np.asarray(matches.keys, dtype=np.int64)
        scores = self._matrix[candidates] @ query
        order = np.lexsort((candidates, -scores))[:k]
        return candidates[order], scores[order].astype(np.float32)
