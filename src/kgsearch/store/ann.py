"""Fast top-k over an in-memory matrix of unit vectors (stores that keep vectors in process).

Two accelerations, both measured by ``scripts/bench_latency.py``:

* :class:`Int8Scan` — a scan over an int8 copy of the matrix with numkong's SIMD
  kernels (a quarter of the memory traffic of float32), then the best candidates are
  re-scored in float32. On the MetaQA relationships (129k × 384) this is several times
  faster than numpy's float32 product and returned the exact top 10 in every test query.
  From :data:`KERNEL_MIN_ROWS` rows its first pass is a product with 4-bit codes by
  onnxruntime's ``MatMulNBits`` instead (``nbits.py``: built in the background, over
  two thirds of the coordinates, turned principal axes; a fifth of numkong's CPU on
  MetaQA's relationships, the same top 30), saved beside the store and loaded by the
  next process while the rows are the same.
* :class:`AnnIndex` — HNSW for very large collections, built in a background thread
  (searches use the scan until it is ready). On graph texts that are near-duplicates of
  each other ("X starred actors Y" × 30,000) HNSW recall against real questions stayed
  near 0.93, which is why it only starts at :data:`ANN_MIN_ROWS`. The graph holds int8
  codes (a quarter of float32's memory, twice as fast to build and search at 1M rows)
  and its candidates are re-scored in float32. A built index can be saved to a file and
  is loaded instead of rebuilt when the vectors are the same (checked by a digest).

An IVF partition (k-means lists, scan the few nearest the query) was measured and not
adopted: questions are far from the triplet texts they match, so the right rows sit in
lists far from the query (recall in docs/benchmarks.md, section latency-metaqa). Nor was
a scan of half of each vector's coordinates in its principal axes (exact all the same:
a Cauchy-Schwarz bound on the other half re-scores every row that could still make the
top k): on MetaQA's 129k relationships a query took as much CPU as the full int8 scan
(3.2 against 3.1 ms, p50 of 900 queries, at load 20), its bound re-scored 350
further rows at the median and 7,000 at worst, and projecting the rows took seconds.

Nor was a cheaper first pass before the int8 scan (issue 34; ``bench_latency.py --part
prefilter``, section latency-prefilter of docs/benchmarks.md). numkong's ``cdist`` pays a
fixed cost per row that dwarfs the width of the row: on 129k rows it took 2.3 ms CPU at
384 int8 dimensions and still 1.9 ms at 32, 1.75 ms for 1-bit codes (Hamming distance),
so the scan is not bound by the 49.5 MB it reads (nor did scanning in row blocks of 4k or
16k rows, which stay in cache, take less: 2.40 / 2.33 against 2.30 ms). Its other entry
points were slower (``dots_packed`` 2.8-3.4 ms, onnxruntime's MatMulInteger 7-10 ms);
numpy's BLAS is fast per row only on narrow float32 codes (0.8 ms at 32 dimensions, 1.6
at 64). Narrow codes keep too little: to hold the exact top 30 of 99.5 % of 1,000 real
questions a prefilter by 64 principal axes must keep 64,161 of the 129k relationships,
by 1-bit signs (Hamming) 11,102, then re-scored at the scan's own cost per row. The
1-bit signs of the centred rows scored against the float query would keep 2,159 (2 %),
but need a weighted popcount that numkong's Python API does not offer (its ``u1`` dot
products treat each byte as a number). Built from Hamming distances to four bit-planes
of the query (one ``hammings_packed`` pass, 1.6 ms), then the 2,048 best re-scored in
int8 and float32, it took 3.9 ms against the scan's 2.7 (1,000 questions, same top 30 in
99.2 %). Also measured on the 129k relationships and not adopted: HNSW (int8,
connectivity 16-32, beam 256-2048) returned the exact top 10 for only 70-87 % of 400
questions at 1.3-7.9 ms CPU; a bound by k-means clusters (2,048 centroids, each with its
radius) pruned no cluster for any of 300 questions (the radii, 0.85 at the median,
exceed every score margin).

Around the 4-bit product (issue 34, ``scripts/bench_scan_parts.py --part steps``, thread
CPU p50 at load 8): on MetaQA's relationships a leg's 1.5 ms held the product's run 1.1,
:func:`_largest` 0.17, the float32 re-scoring of 150 rows 0.09, the query's projection
0.04 and the (id, score) pairs 0.03; the objects' 0.58 ms and the REST sample graph's
0.26-0.37 are made of the same steps. onnxruntime's ``TopK`` of 150 after the product
took 2-2.3x :func:`_largest`'s CPU on MetaQA (0.17 against 0.085 ms on the objects, 0.40
against 0.17 on the relationships), and finding the scores over the threshold a word of
8 flags at a time (``nonzero`` over 8-byte words first) saved no CPU.
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from kgsearch.store import nbits, saved_files
from kgsearch.store.nbits import Kernel

if TYPE_CHECKING:
    from usearch.index import Index

__all__ = ["ANN_MIN_ROWS", "INT8_MIN_ROWS", "KERNEL_MIN_ROWS", "AnnIndex", "Int8Scan"]

_log = logging.getLogger(__name__)

Positions = npt.NDArray[np.int64]


class _Native:
    """The native libraries of the index and the scan, imported on first use so that
    opening a store (``kgsearch stats``, any read) never loads them."""

    def __init__(self) -> None:
        # onnxruntime must be loaded before usearch: in the other order the process dies
        # with a segmentation fault when onnxruntime is imported later (usearch 2.26 /
        # numkong 7.8 with onnxruntime 1.31, reproduced with `import usearch.index;
        # import onnxruntime`).
        import onnxruntime  # noqa: F401
        import usearch.index
        from usearch.compiled import MetricKind

        self.Index = usearch.index.Index
        self.brute_force = usearch.index.search
        self.ip = MetricKind.IP
        self.cdist: Any
        try:  # numkong ships with usearch >= 2.26; older usearch uses its exact search
            from numkong import cdist

            self.cdist = cdist
        except ImportError:  # pragma: no cover
            self.cdist = None


@functools.cache
def _native() -> _Native:
    return _Native()


# From this many rows an int8 scan beats numpy's float32 product. Once the float32
# matrix outgrows the caches it is memory-bound (one BLAS thread, 384 dims: 0.18 ms
# at 5k rows, 0.96 at 9k and 12k, 2.5 at 20k, against the scan's 0.19, 0.29, 0.27 and
# 0.44, same top 10 on 300 queries each), and under load the searches, the model and
# other processes share the caches: on the REST sample graph (9k objects, 11.7k
# relationships) a search cost 2.4 ms less CPU with the scan (13.1-13.6 -> 10.6-11.2
# ms at 8 clients) and the responses of 600 questions were identical.
INT8_MIN_ROWS = 5_000
# From this many rows the int8 scan's first pass is the 4-bit kernel (nbits.py): from
# the scan's own threshold. A scan (top 30) took 0.23 / 0.42 ms CPU against the int8
# codes' 0.29 / 0.56 on the demo's sample graph (7,155 objects, 11,666 relationships)
# and 0.17 against 0.20 on SciFact's 5,183 chunks (load 8-13), with the same top 30; and
# with the kernel from 5,000 rows rather than 20,000 the responses to 1,000 MetaQA
# questions there (807 claims on SciFact) kept every id and rank: scores differed in
# their last bits only (1.5e-7 at most; the float32 re-scoring rounds by the candidates'
# count). scripts/bench_kernel_min_rows.py.
KERNEL_MIN_ROWS = INT8_MIN_ROWS
# Rows appended since the kernel's build that may be left to the int8 codes (or an
# eighth of the kernel's rows, when more) before it is rebuilt in the background.
_KERNEL_TAIL = 5_000
# From this many rows the HNSW index takes over from the scan.
ANN_MIN_ROWS = 400_000
# The int8 scan keeps this many candidates (at least) for exact float32 re-scoring.
_RESCORE = 100
# Parallel parts of the int8 scan: at most this many threads, each at least this many rows.
_MAX_THREADS = 2
_CPUS = os.cpu_count() or 1
_PART_MIN_ROWS = 250_000
# Rows quantized to int8 at a time (bounds the temporary memory).
_QUANTIZE_ROWS = 65_536
# _largest() takes its threshold from every this-many-th score ...
_SAMPLE_STRIDE = 16
# ... first from this many sample scores beyond the share of ``count`` it expects.
_SAMPLE_SLACK = 4
_CONNECTIVITY = 16
_EXPANSION_ADD = 128
# Graph texts are often near-duplicates ("X starred actors Y" × thousands): on 1M
# relationships made of perturbed copies of the MetaQA vectors (bench_latency.py, part
# scale), real questions reached recall@10 0.94 at a beam of 256 and 0.98 at 1024
# (int8 graph, candidates re-scored in float32).
_EXPANSION_SEARCH = 1024
# The int8 graph returns at least this many candidates for float32 re-scoring.
_ANN_RESCORE = 30
# Version of the saved-index layout; a file of another version is rebuilt.
_SAVED_FORMAT = 1


class AnnIndex:
    """HNSW over the rows of ``matrix`` (keys are row positions), int8 inside.

    Args:
        matrix: Unit-length float32 vectors, one per row (kept by reference to re-score
            candidates).
        background: Build in a daemon thread (True) or now (False).
        saved: Where to keep the index between processes: the file used is this path
            with a digest of the vectors and parameters added to its name; it is loaded
            when present and written after a build (None: never saved).
    """

    def __init__(
        self,
        matrix: npt.NDArray[np.float32],
        *,
        background: bool = True,
        expansion_search: int = _EXPANSION_SEARCH,
        saved: Path | None = None,
    ) -> None:
        self.rows = matrix.shape[0]
        self.built = matrix.shape[0]  # rows in the graph as built (later ones were added)
        self._matrix = matrix
        self._saved = saved
        self._write = threading.Lock()
        self.loaded = False
        self._expansion_search = expansion_search
        self._index = self._new_index()
        self._ready = threading.Event()
        if background:
            threading.Thread(target=self._build, daemon=True, name="kgsearch-ann-build").start()
        else:
            self._build()

    def _new_index(self) -> Index:
        return _native().Index(
            ndim=self._matrix.shape[1],
            metric="ip",
            dtype="i8",
            connectivity=_CONNECTIVITY,
            expansion_add=_EXPANSION_ADD,
            expansion_search=self._expansion_search,
        )

    def _build(self) -> None:
        started = time.time()
        path = self._file(self._saved) if self._saved is not None else None
        if path is not None and self._load(path):
            self.loaded = True
        else:
            self._index.add(
                np.arange(self.rows, dtype=np.uint64), self._matrix, threads=0, log=False
            )
            if path is not None:
                self._save(path, started)
        self._ready.set()

    def _file(self, base: Path) -> Path:
        """The file for these vectors and parameters: ``<base stem>-<tag>.usearch``, the
        tag a digest of both, so a file is only ever read for the vectors it was built
        from and never needs a separate description."""
        tag = saved_files.digest(self._matrix, f"{_SAVED_FORMAT}:{_CONNECTIVITY}:{_EXPANSION_ADD}")
        return base.with_name(f"{base.stem}-{tag}{base.suffix}")

    def _load(self, path: Path) -> bool:
        """Load the saved index of these very vectors; False when there is none."""
        if not path.exists():
            return False
        try:
            self._index.load(str(path))
        except (OSError, ValueError, RuntimeError):
            self._index = self._new_index()
            return False
        if len(self._index) != self.rows:
            self._index = self._new_index()
            return False
        return True

    def _save(self, path: Path, started: float) -> None:
        def write(tmp: Path) -> None:
            self._index.save(str(tmp))

        saved_files.keep(path, write, started, "the vector index")

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

    def add(self, positions: Positions, matrix: npt.NDArray[np.float32]) -> None:
        """Add rows by position, re-scoring against ``matrix`` from now on (the same rows
        and these new ones: a grown copy). Only on a built index."""
        with self._write:
            self._matrix = matrix
            if positions.size:
                self._index.add(positions.astype(np.uint64), matrix[positions], threads=0)
            self.rows = max(self.rows, int(positions.max()) + 1 if positions.size else 0)

    def remove(self, positions: Positions) -> None:
        """Drop rows by position: no later search returns them. Only on a built index."""
        with self._write:
            for position in positions.tolist():
                self._index.remove(int(position))

    def search(
        self, query: npt.NDArray[np.float32], k: int, rows: int | None = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(row positions, float32 inner products) of the approximate top ``k``, best
        first (ties by position); only positions below ``rows`` when given (a reader of
        an older snapshot never sees rows added after it)."""
        count = min(len(self._index) or self.rows, max(3 * k, _ANN_RESCORE))
        matches = self._index.search(query, count=count)
        keys = np.asarray(matches.keys, dtype=np.int64)
        if rows is not None:
            keys = keys[keys < rows]
        scores = self._matrix[keys] @ query
        order = np.lexsort((keys, -scores))[:k]
        return keys[order], scores[order].astype(np.float32)


class Int8Scan:
    """Exact scan over an int8 quantized copy, re-scored in float32.

    The int8 products come from numkong's ``cdist`` (one SIMD pass, no top-k heap;
    about 3× faster than usearch's exact search here); the best ``count`` of each part
    are picked by :func:`_largest`, and all picked rows are re-scored in float32. Large
    matrices are split into parts scanned by parallel threads (numkong releases the GIL).

    From :data:`KERNEL_MIN_ROWS` rows the first pass over most rows is a 4-bit
    ``MatMulNBits`` product instead (:mod:`kgsearch.store.nbits`), built in a daemon
    thread from the scan's second search or its first :meth:`wait` (a one-shot
    command's single search would pay 0.3-0.5 s of CPU for a build it never uses):
    until it is ready, and for the rows appended since it was built, the int8 codes
    are scanned as before. It is rebuilt in the background once the rows appended
    since outnumber :data:`_KERNEL_TAIL` (and an eighth of the rows it holds), so a
    search never waits for a build.

    A built kernel is saved beside the store, like the HNSW index, and the next process
    loads it instead of building when the rows are the same (the file is named by a
    digest of them, which it holds too; :func:`nbits.load` checks it, the layout and
    the checksums, and anything else is rebuilt). On the full MetaQA store that is a
    digest and a read, 0.35-0.43 s CPU for both kinds, instead of a build (1.33 s).

    Args:
        matrix: Unit-length float32 vectors, one per row (kept by reference).
        rows: Rows of ``matrix`` in use (default: all; a buffer may hold more).
        kernel_min_rows: Rows from which the 4-bit kernel is built (None: never).
        saved: Where to keep the kernel between processes: the file used is this path
            with a digest of the rows it holds added to its name (None: never saved).
        codes: The int8 codes of every row of ``matrix`` made before at ``scale`` (with
            ``scale``; ``store/sqlite/saved_vectors.py`` maps them from a file), instead
            of quantizing the rows here.
        scale: The scale of ``codes``.
        key: (rows, :func:`nbits.key` of the first ``rows`` rows of ``matrix``) when known,
            so the saved kernel of those rows is found without reading them all.
    """

    def __init__(
        self,
        matrix: npt.NDArray[np.float32],
        rows: int | None = None,
        *,
        kernel_min_rows: int | None = KERNEL_MIN_ROWS,
        saved: Path | None = None,
        codes: npt.NDArray[np.int8] | None = None,
        scale: float | None = None,
        key: tuple[int, str] | None = None,
    ) -> None:
        self._matrix = matrix
        self._key = key
        self._saved = saved
        self.kernel_loaded = False
        """Whether the current kernel was read from a saved file rather than built."""
        rows = matrix.shape[0] if rows is None else rows
        if codes is not None and scale is not None and codes.shape == matrix.shape:
            self._scale = scale
            self._codes: npt.NDArray[np.int8] = codes
        else:
            peak = float(np.abs(matrix[:rows]).max()) if rows and matrix.size else 1.0
            self._scale = 127.0 / (peak or 1.0)
            # room for as many rows as the matrix has (a buffer may hold more than ``rows``)
            self._codes = np.zeros(matrix.shape, dtype=np.int8)
            self._quantize(0, rows)
        self._rows = rows
        self._kernel_min_rows = kernel_min_rows
        self._kernel: Kernel | None = None
        # positions killed, kept out of the kernel's candidates (its weights are fixed)
        self._dead: Positions = np.zeros(0, dtype=np.int64)
        self._building: threading.Thread | None = None
        # rows of the last build that gave no kernel: none is tried again below twice as many
        self._failed_at = 0
        self._build_lock = threading.Lock()
        self._searches = 0  # a kernel is built from the second (see the class docstring)

    def _maybe_build(self, rows: int) -> None:
        """Start a kernel build over the first ``rows`` rows when none is running and the
        current kernel (if any) leaves too many of them to the int8 codes."""
        if self._kernel_min_rows is None or rows < self._kernel_min_rows or self._searches < 2:
            return
        with self._build_lock:
            if self._building is not None or rows < 2 * self._failed_at:
                return
            held = self._kernel.rows if self._kernel is not None else 0
            if held and rows - held <= max(_KERNEL_TAIL, held // 8):
                return
            matrix = self._matrix
            self._building = threading.Thread(
                target=self._build, args=(matrix, rows), daemon=True, name="kgsearch-scan-kernel"
            )
            self._building.start()

    def _build(self, matrix: npt.NDArray[np.float32], rows: int) -> None:
        loaded = False
        try:
            known = self._key[1] if self._key is not None and self._key[0] == rows else None
            kernel, loaded = nbits.load_or_build(matrix, rows, self._saved, known)
        except Exception:  # a failed build leaves the int8 scan in charge, as without one
            _log.warning(
                "could not build the 4-bit scan kernel over %d rows (next try at %d)",
                rows,
                2 * rows,
                exc_info=True,
            )
            kernel = None
        with self._build_lock:
            if kernel is not None:
                self._kernel = kernel
                self.kernel_loaded = loaded
            else:  # failed, or no kernel for this matrix (no onnx, width not whole blocks)
                self._failed_at = rows
            self._building = None
        if kernel is not None:
            self._maybe_build(self._rows)

    def wait(self, timeout: float | None = None) -> bool:
        """Start the kernel's build if it is due, then block until no build is running
        (warm-up, tests and benchmarks); True if none is running any more."""
        self._searches = max(self._searches, 2)
        self._maybe_build(self._rows)
        building = self._building
        if building is not None:
            building.join(timeout)
            return not building.is_alive()
        return True

    @property
    def codes(self) -> tuple[npt.NDArray[np.int8], float]:
        """(the int8 codes of every row of the matrix, their scale): what a later scan of
        the same rows may be handed instead of quantizing them again."""
        return self._codes, self._scale

    @property
    def kernel_rows(self) -> int:
        """Rows the 4-bit kernel covers (0: none ready)."""
        kernel = self._kernel
        return kernel.rows if kernel is not None else 0

    def _quantize(self, start: int, stop: int) -> None:
        """Codes of rows [start, stop), a block at a time (whole-matrix temporaries would
        triple the peak memory). Values beyond the first rows' peak are clipped."""
        for a in range(start, stop, _QUANTIZE_ROWS):
            b = min(stop, a + _QUANTIZE_ROWS)
            block = self._matrix[a:b] * self._scale
            np.rint(block, out=block)
            np.clip(block, -127, 127, out=block)
            self._codes[a:b] = block

    def extend(self, matrix: npt.NDArray[np.float32], start: int, stop: int) -> None:
        """Quantize rows [start, stop) of ``matrix``, which replaces the matrix scanned (the
        same rows first, then room for more)."""
        if matrix.shape[0] > self._codes.shape[0]:
            codes = np.zeros(matrix.shape, dtype=np.int8)
            codes[: self._codes.shape[0]] = self._codes
            self._codes = codes
        self._matrix = matrix
        self._quantize(start, stop)
        self._rows = stop
        self._maybe_build(stop)

    def kill(self, positions: Positions) -> None:
        """Zero the codes of dropped rows and keep them out of the kernel's candidates, so
        they crowd no live row out (searches filter them out by ``alive`` too)."""
        self._codes[positions] = 0
        if positions.size:
            self._dead = np.union1d(self._dead, positions.astype(np.int64))

    def search(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        *,
        threads: int = 0,
        rows: int | None = None,
        alive: npt.NDArray[np.bool_] | None = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(row positions, float32 inner products) of the top ``k``, best first.

        ``threads`` bounds the parallel parts (0: one per core, at most
        :data:`_MAX_THREADS`); ``rows`` limits the scan to the first rows (default: all)
        and ``alive`` (one flag per scanned row) drops the rows marked dead.
        """
        if self._searches < 2:
            self._searches += 1
            self._maybe_build(self._rows)
        rows = self._codes.shape[0] if rows is None else rows
        count = min(rows, max(_RESCORE, 4 * k))
        # fewer rows than two parts need are one part, whatever ``threads``
        parts = _parts(rows, threads) if rows >= 2 * _PART_MIN_ROWS else [(0, rows)]
        kernel = self._kernel
        if len(parts) == 1 and kernel is not None:
            candidates = self._kernel_top(kernel, query, rows, count, max(nbits.RESCORE, 4 * k))
        elif len(parts) == 1:
            candidates = self._top(self._code(query), 0, rows, count)
        else:
            code = self._code(query)
            pool = _pool()
            futures = [pool.submit(self._top, code, a, b, count) for a, b in parts[1:]]
            first = self._top(code, *parts[0], count)
            candidates = np.concatenate([first, *(f.result() for f in futures)])
        if alive is not None:
            candidates = candidates[alive[candidates]]
        # in position order: rows read in address order; ties broken by position
        candidates.sort()
        scores = np.take(self._matrix, candidates, axis=0) @ query
        order = np.lexsort((candidates, -scores))[:k]
        return candidates[order], scores[order].astype(np.float32, copy=False)

    def _kernel_top(
        self,
        kernel: Kernel,
        query: npt.NDArray[np.float32],
        rows: int,
        count: int,
        kept: int,
    ) -> Positions:
        """The best ``kept`` of the kernel's rows below ``rows`` (killed rows scored out),
        and the best ``count`` of the int8 codes of the rows it does not hold (the query's
        int8 code is only made for those)."""
        head = min(rows, kernel.rows)
        scores = kernel.scores(query)[:head]
        dead = self._dead
        if dead.size:
            scores[dead[: np.searchsorted(dead, head)]] = -np.inf
        candidates = _largest(scores, kept)
        if rows > head:
            tail = self._top(self._code(query), head, rows, count)
            candidates = np.concatenate([candidates, tail])
        return candidates

    def _code(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.int8]:
        """The query's int8 code on the rows' scale (values beyond it clipped)."""
        scaled = query * self._scale
        np.rint(scaled, out=scaled)
        np.minimum(scaled, 127.0, out=scaled)
        np.maximum(scaled, -127.0, out=scaled)
        return scaled.astype(np.int8)

    def _top(self, code: npt.NDArray[np.int8], start: int, stop: int, count: int) -> Positions:
        """Row positions of the ``count`` best int8 products among rows [start, stop)."""
        codes = self._codes[start:stop]
        native = _native()
        if native.cdist is None:
            matches = native.brute_force(codes, code, count, native.ip, exact=True, threads=1)
            return start + np.asarray(matches.keys, dtype=np.int64)
        scores = np.asarray(
            native.cdist(code[None, :], codes, metric="dot", dtype="int8", out_dtype="float32")
        ).reshape(-1)
        return start + _largest(scores, count)


def _parts(rows: int, threads: int) -> list[tuple[int, int]]:
    """Row ranges scanned in parallel: one per thread, none under :data:`_PART_MIN_ROWS`."""
    wanted = threads or min(_MAX_THREADS, _CPUS)
    n = max(1, min(wanted, rows // _PART_MIN_ROWS))
    bounds = [rows * i // n for i in range(n + 1)]
    return list(itertools.pairwise(bounds))


def _largest(scores: npt.NDArray[np.float32], count: int) -> Positions:
    """Positions of the ``count`` largest scores, in no order (ties broken arbitrarily).

    On long arrays a full partition costs more than the products themselves, so a
    threshold is taken from every 16th score first and only the scores reaching it are
    partitioned. The first threshold is the sample's ``2 * count / 16``-th largest score
    (about twice ``count`` scores reach it); when fewer than ``count`` do, the sample's
    ``count``-th largest is taken instead, which at least ``count`` scores reach. Either
    way at least ``count`` scores reach the threshold, hence the true top ``count`` all do.
    """
    n = scores.shape[0]
    if n <= count:
        return np.arange(n, dtype=np.int64)
    if n >= _SAMPLE_STRIDE * 4 * count:
        sample = np.partition(scores[::_SAMPLE_STRIDE], -count)[-count:]
        size = sample.shape[0]
        tight = min(size, 2 * count // _SAMPLE_STRIDE + _SAMPLE_SLACK)
        pool = np.flatnonzero(scores >= np.partition(sample, size - tight)[size - tight])
        if pool.shape[0] < count:
            pool = np.flatnonzero(scores >= sample.min())
        if pool.shape[0] > count:
            pool = pool[np.argpartition(scores[pool], pool.shape[0] - count)[-count:]]
        return pool.astype(np.int64, copy=False)
    return np.argpartition(scores, n - count)[n - count :].astype(np.int64)


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(_MAX_THREADS - 1, thread_name_prefix="kgsearch-scan")
        return _POOL
