"""The vector scan's first pass: 4-bit ``MatMulNBits`` over all 384 coordinates or over a
projection to fewer, against numkong's int8 scan. The gate of ``store/nbits.py``.

Usage: python scripts/bench_scan_kernel.py [--questions 1000] [--rounds 3]
       [--widths 256] [--rejected] [--write]

The rows of the full MetaQA store (bundled model) become the constant weight of one
``MatMulNBits`` node, the query its activation, quantised to int8 per block
(``accuracy_level=4``). The variants: numkong's int8 ``cdist``; 4-bit codes of all 384
coordinates (the kernel before issue 34's projection); 4-bit codes of each ``--widths``
coordinates (``nbits._projection``: principal axes of the centred rows, turned by a
random rotation; 256 is what ``nbits.build`` keeps of 384). ``--rejected`` adds the
variants measured and not adopted: principal axes without the rotation, and 2-bit codes
(onnxruntime 1.32 takes 2, 4 or 8 bits, not 3).

Printed, per collection and variant: bytes a row, the session's memory, the first pass's
recall (the share of questions whose exact top 30 lies within its best 30/55/100/200
rows, and the depth that needs at worst), the gate (questions whose re-scored top 30 is
the exact float32 top 30, by its scores, at several candidate counts, on the questions
and on as many others held out), and the CPU time of one query end to end (first pass,
the best C picked, re-scored in float32) with the variants taking turns round by round,
each over every question, the load average printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
from bench_quality import ensure_full_db, metaqa_questions

from kgsearch import Engine, Kind, connect
from kgsearch.store import nbits
from kgsearch.store.ann import Int8Scan, _largest, _native
from kgsearch.store.sqlite import SQLiteStore

Matrix = npt.NDArray[np.float32]
Scorer = Callable[[Matrix], Matrix]
TOP = 30
COUNTS = (100, 150, 200, 400)
DEPTHS = (30, 55, 100, 200)


def rss_mb() -> float:
    """This process's resident memory in MB (from /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def block_of(dims: int) -> int:
    """``nbits.BLOCK``, or the largest power of two under it that divides ``dims``."""
    block = nbits.BLOCK
    while dims % block:
        block //= 2
    return block


def quantise(values: Matrix, bits: int) -> tuple[npt.NDArray[np.uint8], Matrix]:
    """Symmetric ``bits``-bit codes of ``values`` (one scale per row and block of
    :func:`block_of` values, zero point the type's middle), packed as ``MatMulNBits``
    reads them."""
    rows, dims = values.shape
    block = block_of(dims)
    blocks = values.reshape(rows, dims // block, block)
    top = 2 ** (bits - 1) - 1
    scales = np.abs(blocks).max(axis=2) / top
    scales[scales == 0] = 1.0
    codes = (np.rint(blocks / scales[:, :, None]).clip(-top, top) + top + 1).astype(np.uint8)
    per_byte = 8 // bits
    packed = np.zeros((*codes.shape[:2], block // per_byte), dtype=np.uint8)
    for i in range(per_byte):  # the first value in the lowest bits
        packed |= codes[:, :, i::per_byte] << (bits * i)
    return packed, scales.reshape(-1).astype(np.float32)


def projected(matrix: Matrix, kept: int, *, turn: bool) -> tuple[Matrix, Matrix]:
    """(rows less their mean, projected; the projection): ``nbits._projection``, or with
    ``turn=False`` the bare principal axes (no random rotation)."""
    if turn:
        projection = nbits._projection(matrix, matrix.shape[0], kept)
        assert projection is not None
        mean, axes = projection
    else:
        mean = matrix.mean(axis=0)
        _, vectors = np.linalg.eigh(((matrix - mean).T @ (matrix - mean)).astype(np.float64))
        axes = np.ascontiguousarray(vectors[:, ::-1][:, :kept], dtype=np.float32)
    return np.ascontiguousarray((matrix - mean) @ axes), axes


def nbits_scorer(matrix: Matrix, kept: int, bits: int, *, turn: bool) -> tuple[Scorer, str]:
    """(query → first-pass scores, a note of bytes a row and memory) for one variant;
    ``kept`` = 384 keeps every coordinate (no projection)."""
    import onnxruntime as ort

    before = rss_mb()
    dims = matrix.shape[1]
    values, axes = (matrix, None) if kept == dims and turn else projected(matrix, kept, turn=turn)
    packed, scales = quantise(values, bits)
    width = values.shape[1]
    blob = nbits.graph_bytes(
        packed, scales, dims=width, rows=matrix.shape[0], bits=bits, block=block_of(width)
    )
    bytes_a_row = (packed.nbytes + scales.nbytes) / matrix.shape[0]
    del values, packed, scales
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(blob, options, providers=["CPUExecutionProvider"])
    del blob
    note = f"{bytes_a_row:.0f} B a row, session +{rss_mb() - before:.0f} MB RSS"

    def score(query: Matrix) -> Matrix:
        q = query if axes is None else query @ axes
        out: Matrix = session.run(["y"], {"q": q[None, :]})[0]
        return out.reshape(-1)

    return score, note


def kernel_scorer(matrix: Matrix) -> tuple[Scorer, str]:
    """What ``nbits.build`` makes of the rows today (the projection it chooses)."""
    before = rss_mb()
    kernel = nbits.build(matrix, matrix.shape[0])
    assert kernel is not None
    return (
        kernel.scores,
        f"width {kernel.width or matrix.shape[1]}, +{rss_mb() - before:.0f} MB RSS",
    )


def int8_scorer(matrix: Matrix) -> Scorer:
    """numkong's int8 products over Int8Scan's codes (the scan without a kernel)."""
    scan = Int8Scan(matrix, kernel_min_rows=None)
    cdist = _native().cdist

    def score(query: Matrix) -> Matrix:
        code = scan._code(query)
        out = cdist(code[None, :], scan._codes, metric="dot", dtype="int8", out_dtype="float32")
        return np.asarray(out).reshape(-1)

    return score


def top_after_rescore(matrix: Matrix, scores: Matrix, query: Matrix, count: int) -> Matrix:
    """The float32 scores of the top 30 after re-scoring the ``count`` best by ``scores``
    (what a search returns, as Int8Scan.search does it)."""
    candidates = _largest(scores, count)
    candidates.sort()
    exact = np.take(matrix, candidates, axis=0) @ query
    order = np.argsort(-exact, kind="stable")[:TOP]
    return exact[order]


def exact_top(matrix: Matrix, queries: Matrix) -> list[tuple[npt.NDArray[np.int64], Matrix]]:
    """(positions, float32 scores) of each query's exact top 30."""
    tops = []
    for q in queries:
        exact = matrix @ q
        best = np.argsort(-exact, kind="stable")[:TOP]
        tops.append((best, exact[best]))
    return tops


def quality(
    matrix: Matrix,
    scorer: Scorer,
    queries: Matrix,
    tops: list[tuple[npt.NDArray[np.int64], Matrix]],
) -> tuple[list[int], list[int], int]:
    """(questions whose exact top 30 lies within the first pass's best d rows, for each
    d of DEPTHS; questions whose re-scored top 30 is exact, for each C of COUNTS; the
    deepest first-pass rank an exact top-30 row had)."""
    within, held, deepest = [0] * len(DEPTHS), [0] * len(COUNTS), 0
    for q, (best, want) in zip(queries, tops, strict=True):
        scores = scorer(q)
        depth = int((scores >= scores[best].min()).sum())
        deepest = max(deepest, depth)
        within = [n + (depth <= d) for n, d in zip(within, DEPTHS, strict=True)]
        for i, c in enumerate(COUNTS):
            got = top_after_rescore(matrix, scores, q, c)
            held[i] += bool(np.allclose(got, want, rtol=0, atol=1e-6))
    return within, held, deepest


def measure(matrix: Matrix, queries: Matrix, others: Matrix, args: argparse.Namespace) -> list[str]:
    """Quality and CPU of each variant on one collection (lines of a report)."""
    dims = matrix.shape[1]
    lines: list[str] = []
    variants: dict[str, tuple[Scorer, int]] = {
        "int8 scan (numkong cdist)": (int8_scorer(matrix), 100)
    }
    scorer, note = nbits_scorer(matrix, dims, 4, turn=True)
    variants[f"4-bit, all {dims} (before)"] = (scorer, 100)
    lines.append(f"  4-bit, all {dims}: {note}")
    scorer, note = kernel_scorer(matrix)
    variants["nbits.build (now)"] = (scorer, nbits.RESCORE)
    lines.append(f"  nbits.build: {note}")
    for kept in args.widths:
        scorer, note = nbits_scorer(matrix, kept, 4, turn=True)
        variants[f"4-bit, {kept} turned axes"] = (scorer, nbits.RESCORE)
        lines.append(f"  4-bit, {kept} turned axes: {note}")
    if args.rejected:
        for kept, bits, turn in (
            (dims, 4, False),
            (256, 4, False),
            (dims, 2, True),
            (dims, 2, False),
        ):
            scorer, note = nbits_scorer(matrix, kept, bits, turn=turn)
            axes = "turned axes" if turn else "principal axes"
            name = (
                f"{bits}-bit, all {dims}" if kept == dims and turn else f"{bits}-bit, {kept} {axes}"
            )
            variants[name] = (scorer, nbits.RESCORE)
            lines.append(f"  {name}: {note}")
    tops, tops_out = exact_top(matrix, queries), exact_top(matrix, others)
    for name, (scorer, _) in variants.items():
        within, held, deepest = quality(matrix, scorer, queries, tops)
        _, held_out, deepest_out = quality(matrix, scorer, others, tops_out)
        n = len(queries)
        recall = ", ".join(f"{d}: {w / n:.3f}" for d, w in zip(DEPTHS, within, strict=True))
        gate = ", ".join(f"C={c}: {h}" for c, h in zip(COUNTS, held, strict=True))
        out = ", ".join(f"C={c}: {h}" for c, h in zip(COUNTS, held_out, strict=True))
        lines.append(
            f"  {name}: exact top 30 within the first pass's best {recall} (deepest "
            f"{deepest}, held out {deepest_out}); re-scored top 30 exact for {gate} of {n}"
            + (f" (held out: {out} of {len(others)})" if len(others) else "")
        )
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    loads: list[float] = []
    for _ in range(args.rounds):
        for name, (scorer, count) in variants.items():
            top_after_rescore(matrix, scorer(queries[0]), queries[0], count)
            started = time.process_time()
            for q in queries:
                top_after_rescore(matrix, scorer(q), q, count)
            cpu[name].append((time.process_time() - started) / len(queries) * 1000)
            loads.append(os.getloadavg()[0])
    base = statistics.median(cpu[f"4-bit, all {dims} (before)"])
    lines.append(
        f"  CPU ms a query, first pass + best C re-scored (median of {args.rounds} rounds of "
        f"{len(queries)}, interleaved; load {min(loads):.1f}-{max(loads):.1f}):"
    )
    for name, times in cpu.items():
        median = statistics.median(times)
        lines.append(
            f"    {name} (C={variants[name][1]}): {median:.2f} ({median / base - 1:+.0%}; "
            f"rounds {' '.join(f'{t:.2f}' for t in times)})"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--held-out", type=int, default=1000, help="more questions, quality only")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--widths", type=int, nargs="*", default=[192, 224])
    parser.add_argument("--rejected", action="store_true", help="also the rejected variants")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md's section")
    args = parser.parse_args()
    engine = Engine(connect(str(ensure_full_db())))
    store = engine.store
    assert isinstance(store, SQLiteStore)
    asked = [q for q, _ in metaqa_questions(args.questions + args.held_out)]
    embedded = np.asarray([engine.embedder.embed_query(q) for q in asked], dtype=np.float32)
    queries, others = embedded[: args.questions], embedded[args.questions :]
    report: list[str] = []
    for kind in (Kind.RELATIONSHIP, Kind.OBJECT):
        matrix = np.ascontiguousarray(store.vectors_cache.entry(store.db, "default", kind).matrix)
        head = f"{kind.value}s ({matrix.shape[0]:,} × {matrix.shape[1]}), {len(queries)} questions"
        print(head, flush=True)
        report.append(head)
        for line in measure(matrix, queries, others, args):
            print(line, flush=True)
            report.append(line)
    engine.close()
    if args.write:
        from benchdoc import write_section

        command = "python scripts/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])
        body = "```\n" + "\n".join(report) + "\n```"
        write_section("scan-kernel", "The vector scan's first pass (nbits.py)", command, body)


if __name__ == "__main__":
    main()
