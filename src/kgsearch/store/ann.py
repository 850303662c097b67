"""Approximate nearest-neighbour index (HNSW via usearch) over an in-memory matrix.

Used by stores that keep vectors in process (SQLite) once a collection is large
enough that an exact matrix product costs more than a few milliseconds. The index
is built from a snapshot of the matrix, in a background thread, so searches keep
using the exact path until it is ready; its recall against the exact path is
measured by ``scripts/bench_search.py`` (target ≥ 0.95 at k = 10).
"""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt
from usearch.index import Index

__all__ = ["ANN_MIN_ROWS", "AnnIndex"]

# Below this many rows exact search is fast enough (a few ms) and always exact.
ANN_MIN_ROWS = 20_000
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
