"""onnxruntime's ``MatMulNBits`` as the vector scan's kernel, against today's int8 scan.

Usage: python scripts/bench_scan_kernel.py [--questions 1000] [--rounds 3]

The rows of the full MetaQA store (bundled model) become the constant weight of one
``MatMulNBits`` node (N = rows, K = 384, 4 or 8 bits, one scale per block of K), the
query its 1×384 activation, quantised to int8 per block (``accuracy_level=4``). Printed,
per collection: the session's build time and memory, the CPU time of one query end to end
(kernel, the best C picked, re-scored in float32; the variants take turns round by round,
each over every question) and the share of real questions whose exact float32 top 30
(its scores: ties are not told apart) is what the re-scored C candidates give.
"""

from __future__ import annotations

import argparse
import os
import statistics
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


def rss_mb() -> float:
    """This process's resident memory in MB (from /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def nbits_model(matrix: Matrix, bits: int, block: int) -> bytes:
    """A one-node graph: ``y[1, N] = q[1, K] × B`` with B the rows quantised to ``bits``
    (symmetric, one float scale per row and block of K, zero point the type's middle)."""
    rows, dims = matrix.shape
    blocks = matrix.reshape(rows, dims // block, block)
    top = 2 ** (bits - 1) - 1
    scales = np.abs(blocks).max(axis=2) / top
    scales[scales == 0] = 1.0
    codes = np.rint(blocks / scales[:, :, None]).clip(-top, top).astype(np.int16)
    packed = (codes + 2 ** (bits - 1)).astype(np.uint8)
    if bits == 4:  # two values a byte, the first in the low nibble
        packed = packed[:, :, 0::2] | (packed[:, :, 1::2] << 4)
    return nbits.graph_bytes(
        packed, scales.reshape(-1).astype(np.float32), dims=dims, rows=rows, bits=bits, block=block
    )


def nbits_scorer(matrix: Matrix, bits: int, block: int, threads: int) -> tuple[Scorer, str]:
    """(query → kernel scores, a note of build time and memory) for one variant."""
    import onnxruntime as ort

    before, started = rss_mb(), time.perf_counter()
    blob = nbits_model(matrix, bits, block)
    quantised = time.perf_counter() - started
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(blob, options, providers=["CPUExecutionProvider"])
    del blob
    built = time.perf_counter() - started
    grown = rss_mb() - before
    note = f"quantise {quantised:.2f} s, session {built - quantised:.2f} s, +{grown:.0f} MB"

    def score(query: Matrix) -> Matrix:
        out: Matrix = session.run(["y"], {"q": query[None, :]})[0]
        return out.reshape(-1)

    return score, note


def int8_scorer(matrix: Matrix) -> Scorer:
    """Today's first pass: numkong's int8 products over Int8Scan's codes."""
    scan = Int8Scan(matrix)
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


def measure(matrix: Matrix, queries: Matrix, rounds: int) -> list[str]:
    """Quality and CPU of each variant on one collection (lines of a report)."""
    exact = np.sort(queries @ matrix.T, axis=1)[:, ::-1][:, :TOP]
    lines: list[str] = []
    variants: dict[str, Scorer] = {"int8 scan (numkong cdist, today)": int8_scorer(matrix)}
    for bits, block in ((8, 128), (4, 32), (4, 64), (4, 128)):
        for threads in (1, 2):
            scorer, note = nbits_scorer(matrix, bits, block, threads)
            name = f"MatMulNBits {bits}-bit, block {block}, {threads} thread(s)"
            variants[name] = scorer
            if threads == 1:
                lines.append(f"  build {bits}-bit block {block}: {note}")
    for name, scorer in variants.items():
        if "2 thread" in name:
            continue
        held = {c: 0 for c in (100, 120, 200, 400)}
        for q, want in zip(queries, exact, strict=True):
            scores = scorer(q)
            for c in held:
                got = top_after_rescore(matrix, scores, q, c)
                held[c] += bool(np.allclose(got, want, rtol=0, atol=1e-6))
        shares = ", ".join(f"C={c}: {n / len(queries):.3f}" for c, n in held.items())
        lines.append(f"  quality {name}: exact top 30 after re-scoring {shares}")
    cpu: dict[str, dict[int, list[float]]] = {n: {c: [] for c in (120, 200, 400)} for n in variants}
    loads: list[float] = []
    for _ in range(rounds):
        for name, scorer in variants.items():
            for count in (120, 200, 400):
                scorer(queries[0])
                started = time.process_time()
                for q in queries:
                    top_after_rescore(matrix, scorer(q), q, count)
                cpu[name][count].append((time.process_time() - started) / len(queries) * 1000)
            loads.append(os.getloadavg()[0])
    base = statistics.median(cpu["int8 scan (numkong cdist, today)"][120])
    lines.append(
        f"  CPU ms a query, end to end (median of {rounds} rounds of {len(queries)}; "
        f"load {min(loads):.1f}-{max(loads):.1f}):"
    )
    for name, by_count in cpu.items():
        cells = ", ".join(
            f"C={c}: {statistics.median(t):.2f} ({statistics.median(t) / base - 1:+.0%})"
            for c, t in by_count.items()
        )
        lines.append(f"    {name}: {cells}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    engine = Engine(connect(str(ensure_full_db())))
    store = engine.store
    assert isinstance(store, SQLiteStore)
    questions = [q for q, _ in metaqa_questions(args.questions)]
    queries = np.asarray([engine.embedder.embed_query(q) for q in questions], dtype=np.float32)
    for kind in (Kind.RELATIONSHIP, Kind.OBJECT):
        matrix = np.ascontiguousarray(store.vectors_cache.entry(store.db, "default", kind).matrix)
        print(f"{kind.value}s ({matrix.shape[0]:,} × {matrix.shape[1]}), {len(queries)} questions")
        for line in measure(matrix, queries, args.rounds):
            print(line, flush=True)
    engine.close()


if __name__ == "__main__":
    main()
