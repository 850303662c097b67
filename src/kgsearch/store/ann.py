"""Fast top-k over an in-memory matrix of unit vectors (stores that keep vectors in process).

Two accelerations, both measured by ``scripts/bench_latency.py``:

* :class:`Int8Scan` — a scan over an int8 copy of the matrix with numkong's SIMD
  kernels (a quarter of the memory traffic of float32), then the best candidates are
  re-scored in float32. On the MetaQA relationships (129k × 384) this is several times
  faster than numpy's float32 product and returned the exact top 10 in every test query.
* :class:`AnnIndex` — HNSW for very large collections, built in a background thread
  (searches use the scan until it is ready). On graph texts that are near-duplicates of
  each other ("X starred actors Y" × 30,000) HNSW recall against real questions stayed
  near 0.93, which is why it only starts at :data:`ANN_MIN_ROWS`.

An IVF partition (k-means lists, scan the few nearest the query) was measured and not
adopted: questions are far from the triplet texts they match, so the right rows sit in
lists far from the query (recall in docs/benchmarks.md, section latency-metaqa).
"""

from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

# onnxruntime must be loaded before usearch: in the other order the process dies with a
# segmentation fault when onnxruntime is imported later (usearch 2.26 / numkong 7.8 with
# onnxruntime 1.31, reproduced with `import usearch.index; import onnxruntime`).
import onnxruntime  # noqa: F401  # isort: skip
from usearch.compiled import MetricKind  # isort: skip
from usearch.index import Index  # isort: skip
from usearch.index import search as brute_force  # isort: skip

_cdist: Any
try:  # numkong ships with usearch >= 2.26; older usearch falls back to its exact search
    from numkong import cdist as _cdist  # isort: skip
except ImportError:  # pragma: no cover
    _cdist = None

__all__ = ["ANN_MIN_ROWS", "INT8_MIN_ROWS", "AnnIndex", "Int8Scan"]

Positions = npt.NDArray[np.int64]

# From this many rows an int8 scan beats numpy's float32 product.
INT8_MIN_ROWS = 20_000
# From this many rows the HNSW index takes over from the scan.
ANN_MIN_ROWS = 400_000
# The int8 scan keeps this many candidates (at least) for exact float32 re-scoring.
_RESCORE = 100
# Parallel parts of the int8 scan: at most this many threads, each at least this many rows.
_MAX_THREADS = 2
_PART_MIN_ROWS = 250_000
# _largest() takes its threshold from every this-many-th score.
_SAMPLE_STRIDE = 16
_CONNECTIVITY = 16
_EXPANSION_ADD = 128
# Graph texts are often near-duplicates ("X starred actors Y" × thousands): on 1M
# relationships made of perturbed copies of the MetaQA vectors (bench_latency.py, part
# scale), real questions reached recall@10 0.93–0.95 at a beam of 256, 0.98 at 1024, so
# the wide beam (a few ms per query at that size).
_EXPANSION_SEARCH = 1024


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
    def expansion_search(self) -> int:
        """The search beam (ef): wider is slower and finds more of the true neighbours."""
        return int(self._index.expansion_search)

    @expansion_search.setter
    def expansion_search(self, value: int) -> None:
        self._index.expansion_search = value  # type: ignore[misc]  # settable; stub says not

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

    The int8 products come from numkong's ``cdist`` (one SIMD pass, no top-k heap;
    about 3× faster than usearch's exact search here); the best ``count`` of each part
    are picked by :func:`_largest`, and all picked rows are re-scored in float32. Large
    matrices are split into parts scanned by parallel threads (numkong releases the GIL).

    Args:
        matrix: Unit-length float32 vectors, one per row (kept by reference).
    """

    def __init__(self, matrix: npt.NDArray[np.float32]) -> None:
        self._matrix = matrix
        peak = float(np.abs(matrix).max()) if matrix.size else 1.0
        self._scale = 127.0 / (peak or 1.0)
        self._codes = np.clip(np.rint(matrix * self._scale), -127, 127).astype(np.int8)

    def search(
        self, query: npt.NDArray[np.float32], k: int, *, threads: int = 0
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(row positions, float32 inner products) of the top ``k``, best first.

        ``threads`` bounds the parallel parts (0: one per core, at most
        :data:`_MAX_THREADS`).
        """
        rows = self._codes.shape[0]
        count = min(rows, max(_RESCORE, 4 * k))
        code = np.clip(np.rint(query * self._scale), -127, 127).astype(np.int8)
        parts = _parts(rows, threads)
        if len(parts) == 1:
            candidates = self._top(code, 0, rows, count)
        else:
            pool = _pool()
            futures = [pool.submit(self._top, code, a, b, count) for a, b in parts[1:]]
            first = self._top(code, *parts[0], count)
            candidates = np.concatenate([first, *(f.result() for f in futures)])
        scores = self._matrix[candidates] @ query
        order = np.lexsort((candidates, -scores))[:k]
        return candidates[order], scores[order].astype(np.float32)

    def _top(self, code: npt.NDArray[np.int8], start: int, stop: int, count: int) -> Positions:
        """Row positions of the ``count`` best int8 products among rows [start, stop)."""
        codes = self._codes[start:stop]
        if _cdist is None:
            matches = brute_force(codes, code, count, MetricKind.IP, exact=True, threads=1)
            return start + np.asarray(matches.keys, dtype=np.int64)
        scores = np.asarray(
            _cdist(code[None, :], codes, metric="dot", dtype="int8", out_dtype="float32")
        ).reshape(-1)
        return start + _largest(scores, count)


def _parts(rows: int, threads: int) -> list[tuple[int, int]]:
    """Row ranges scanned in parallel: one per thread, none under :data:`_PART_MIN_ROWS`."""
    wanted = threads or min(_MAX_THREADS, os.cpu_count() or 1)
    n = max(1, min(wanted, rows // _PART_MIN_ROWS))
    bounds = [rows * i // n for i in range(n + 1)]
    return list(itertools.pairwise(bounds))


def _largest(scores: npt.NDArray[np.float32], count: int) -> Positions:
    """Positions of the ``count`` largest scores, in no order (ties broken arbitrarily).

    On long arrays a full partition costs more than the products themselves, so a
    threshold is taken from every 16th score first: at least ``count`` scores reach it,
    hence the true top ``count`` all do, and only those few are partitioned.
    """
    n = scores.shape[0]
    if n <= count:
        return np.arange(n, dtype=np.int64)
    if n >= _SAMPLE_STRIDE * 4 * count:
        sample = scores[::_SAMPLE_STRIDE]
        cut = sample.shape[0] - count
        threshold = np.partition(sample, cut)[cut]
        pool = np.flatnonzero(scores >= threshold)
        if pool.shape[0] > count:
            pool = pool[np.argpartition(scores[pool], pool.shape[0] - count)[-count:]]
        return pool.astype(np.int64)
    return np.argpartition(scores, n - count)[n - count :].astype(np.int64)


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(_MAX_THREADS - 1, thread_name_prefix="kgsearch-scan")
        return _POOL
