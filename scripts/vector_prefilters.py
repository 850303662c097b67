"""Cheaper first passes over a vector matrix, measured (``bench_latency.py --part prefilter``).

A prefilter scores every row with a cheaper code, keeps the best N rows and re-scores
only those exactly. It pays when its pass costs less than the int8 scan it replaces and
N stays small. Two things are measured here: the CPU time of each kind of pass (random
data, the kernels kgsearch can call: numkong, BLAS through numpy) and, on real vectors
and questions, how many rows N each code must keep so that the exact top ``k`` is among
them (the depth: rows the code scores at least as high as the lowest of the exact top k).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]


def _one_blas_thread() -> AbstractContextManager[Any]:
    """numpy's BLAS held to one thread (as ``kgsearch serve`` does), when threadpoolctl is
    installed; otherwise the BLAS default."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return nullcontext()
    limits: AbstractContextManager[Any] = threadpool_limits(1, user_api="blas")
    return limits


def kernel_times(rows: int, dims: int = 384, rounds: int = 15) -> dict[str, float]:
    """Median CPU ms of one pass of each kind over ``rows`` random rows, the kinds taking
    turns round by round so the machine's noise falls on all of them."""
    import numkong as nk

    rng = np.random.default_rng(0)
    codes = rng.integers(-127, 128, (rows, dims), dtype=np.int8)
    code = rng.integers(-127, 128, (1, dims), dtype=np.int8)
    narrow = np.ascontiguousarray(codes[:, :32])
    bits = np.packbits(codes > 0, axis=1)
    query_bits = np.packbits(code > 0, axis=1)
    low32 = rng.standard_normal((rows, 32)).astype(np.float32)
    low64 = rng.standard_normal((rows, 64)).astype(np.float32)
    q32, q64 = low32[0].copy(), low64[0].copy()

    def cdist(a: Any, b: Any, dtype: Any, metric: Any = "dot") -> Any:
        return nk.cdist(a, b, metric=metric, dtype=dtype, out_dtype="float32")

    passes: dict[str, Callable[[], object]] = {
        f"int8 products, {dims} dims (numkong cdist: today's scan)": lambda: cdist(
            code, codes, "int8"
        ),
        "int8 products, 32 dims (numkong cdist)": lambda: cdist(code[:, :32], narrow, "int8"),
        f"1-bit codes, Hamming distance over {dims} bits (numkong cdist)": lambda: cdist(
            query_bits, bits, "u1", "hamming"
        ),
        f"int8 products, {dims} dims, packed query (numkong dots_packed)": lambda: nk.dots_packed(
            codes, nk.dots_pack(code)
        ),
        "float32 products, 32 dims (BLAS, one thread)": lambda: low32 @ q32,
        "float32 products, 64 dims (BLAS, one thread)": lambda: low64 @ q64,
    }
    times: dict[str, list[float]] = {name: [] for name in passes}
    with _one_blas_thread():
        for _ in range(rounds):
            for name, run in passes.items():
                started = time.thread_time()
                run()
                times[name].append((time.thread_time() - started) * 1000)
    return {name: statistics.median(t) for name, t in times.items()}


def _depths(approx: Matrix, exact_top: npt.NDArray[np.int64]) -> list[int]:
    """Per query: how many rows ``approx`` scores at least as high as the lowest-scored
    row of the exact top (the N a prefilter by ``approx`` must keep)."""
    lowest = np.take_along_axis(approx, exact_top, axis=1).min(axis=1)
    return [int(n) for n in (approx >= lowest[:, None]).sum(axis=1)]


def prefilter_depths(
    matrix: Matrix, queries: Matrix, k: int = 30, chunk: int = 50, seed: int = 0
) -> dict[str, list[int]]:
    """The depth N (see :func:`_depths`) each code needs per query for the exact top ``k``.

    Codes: the first 32 or 64 principal axes (from a 20,000-row sample), the signs of
    the coordinates against the query's signs (Hamming), and the signs of the centred
    rows against the float query (the asymmetric form, which needs a kernel numkong's
    Python API does not offer).
    """
    rng = np.random.default_rng(seed)
    sample = matrix[rng.choice(matrix.shape[0], min(matrix.shape[0], 20_000), replace=False)]
    mean = sample.mean(axis=0)
    _, axes = np.linalg.eigh(np.cov((sample - mean).T))
    axes = np.ascontiguousarray(axes[:, ::-1][:, :64]).astype(np.float32)
    projected = ((matrix - mean) @ axes).astype(np.float32)
    signs = np.where(matrix > 0, 1.0, -1.0).astype(np.float32)
    centred_signs = np.where(matrix > mean, 1.0, -1.0).astype(np.float32)
    out: dict[str, list[int]] = {
        "32 principal axes": [],
        "64 principal axes": [],
        "1-bit signs, Hamming distance": [],
        "1-bit signs of centred rows, float query": [],
    }
    for start in range(0, queries.shape[0], chunk):
        q = queries[start : start + chunk]
        exact = q @ matrix.T
        top = np.argpartition(-exact, k - 1, axis=1)[:, :k]
        qp = q @ axes
        out["32 principal axes"] += _depths(qp[:, :32] @ projected[:, :32].T, top)
        out["64 principal axes"] += _depths(qp @ projected.T, top)
        out["1-bit signs, Hamming distance"] += _depths(
            np.where(q > 0, 1.0, -1.0).astype(np.float32) @ signs.T, top
        )
        out["1-bit signs of centred rows, float query"] += _depths(q @ centred_signs.T, top)
    return out
