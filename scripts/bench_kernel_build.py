"""The int8 scan's 4-bit kernel (``store/nbits.py``): what its build costs, step by step,
against another version's, and how long a fresh process takes from opening the store to
its kernels being ready, without a saved kernel (cold) and with one (warm).

Usage: python scripts/bench_kernel_build.py --base-src /work/wt-head/src [--rounds 3]
       [--db /tmp/copy/metaqa-full.db] [--opens 2] [--parts steps,memory,open] [--write]

Part ``steps``: the rows of the full MetaQA store's relationships and objects (bundled
model), built by both versions' ``nbits`` in one process, taking turns round by round.
Per step the process CPU (every thread's: OpenBLAS's threads included, which spin
between calls on a loaded machine) and the wall time: the principal axes
(``_projection``: the sampled rows' Gram matrix, ``eigh``, the rotation; "LAPACK" is the
``eigh`` and ``qr`` inside it), the projection and quantisation of every row
(``_quantize``), the graph's bytes (the base writes the codes into it) and the
onnxruntime session. Printed with the load average, and how many of the rows' codes
the two versions agree on.

Part ``memory``: the resident memory a kernel over each kind keeps once built (and
after it is dropped), a fresh process a side (the shared store read only, never written).

Part ``open``: fresh processes (one version's ``src`` each, taking turns) open a private
copy of the store (never the shared file: the kernel is saved beside it) and wait for
both kinds' kernels (``Int8Scan.wait``): process CPU and wall time of the opening and the
vectors' read, then of the kernels, cold (the saved files removed first) then ``--opens``
times warm.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from kgsearch.model import Kind
from kgsearch.store import nbits
from kgsearch.store.sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT / "bench-data" / "metaqa-full.db"
KINDS = (Kind.RELATIONSHIP, Kind.OBJECT)


def load_module(src: Path) -> ModuleType:
    """The ``nbits`` module of another version's sources, under a name of its own (it
    imports nothing of kgsearch)."""
    spec = importlib.util.spec_from_file_location("base_nbits", src / "kgsearch/store/nbits.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Clock:
    """Process CPU and wall time of named steps, and of the LAPACK calls inside them."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self.wall: dict[str, float] = {}
        self.lapack = 0.0

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        cpu, wall = time.process_time(), time.perf_counter()
        yield
        self.cpu[name] = self.cpu.get(name, 0.0) + time.process_time() - cpu
        self.wall[name] = self.wall.get(name, 0.0) + time.perf_counter() - wall


@contextmanager
def lapack_timed(clock: Clock) -> Iterator[None]:
    """Count the CPU of ``np.linalg.eigh`` and ``qr`` (looked up at each call) in ``clock``."""
    saved = np.linalg.eigh, np.linalg.qr

    def timed(function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                clock.lapack += time.process_time() - started

        return call

    np.linalg.eigh, np.linalg.qr = timed(saved[0]), timed(saved[1])
    try:
        yield
    finally:
        np.linalg.eigh, np.linalg.qr = saved


def build_base(module: ModuleType, matrix: Any, clock: Clock) -> Any:
    """The base version's ``build``, step by step (its own functions, in its order)."""
    import onnxruntime as ort

    rows = matrix.shape[0]
    with clock.step("axes"), lapack_timed(clock):
        projection = module._projection(matrix, rows, module.width(matrix.shape[1]))
    with clock.step("project + quantise"):
        packed, scales = module._quantize(matrix, rows, projection)
    with clock.step("graph bytes"):
        blob = module.graph_bytes(packed, scales, dims=packed.shape[1] * module.BLOCK, rows=rows)
    with clock.step("session"):
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        ort.InferenceSession(blob, options, providers=["CPUExecutionProvider"])
    return packed


def build_now(matrix: Any, clock: Clock) -> Any:
    """This version's ``nbits.build``, step by step."""
    rows = matrix.shape[0]
    with clock.step("axes"), lapack_timed(clock):
        projection = nbits._projection(matrix, rows, nbits.width(matrix.shape[1]))
    with clock.step("project + quantise"):
        packed, scales = nbits._quantize(matrix, rows, projection)
    with clock.step("graph bytes"):
        pass  # the codes go to onnxruntime beside the graph (nbits.Kernel)
    with clock.step("session"):
        nbits.Kernel(nbits.Codes(packed, scales, projection))
    return packed


def steps(args: argparse.Namespace, base: ModuleType) -> list[str]:
    """Part ``steps``: lines of the report."""
    store = SQLiteStore(str(SHARED), migrate=False, ann_min_rows=None)
    lines = []
    for kind in KINDS:
        matrix = np.ascontiguousarray(store.vectors_cache.entry(store.db, "default", kind).matrix)
        # the first build of a process imports onnx and warms onnxruntime: not measured
        build_base(base, matrix[:8192], Clock())
        build_now(matrix[:8192], Clock())
        clocks: dict[str, list[Clock]] = {"base": [], "now": []}
        loads: list[float] = []
        codes: dict[str, Any] = {}
        for _ in range(args.rounds):
            for side in ("base", "now"):
                clock = Clock()
                loads.append(os.getloadavg()[0])
                codes[side] = (
                    build_base(base, matrix, clock) if side == "base" else build_now(matrix, clock)
                )
                clocks[side].append(clock)
        same = float(np.mean(codes["base"] == codes["now"]))
        lines.append(
            f"{kind.value}s ({matrix.shape[0]:,} × {matrix.shape[1]}): process CPU (wall) ms, "
            f"median of {args.rounds} builds a side, interleaved; load "
            f"{min(loads):.1f}-{max(loads):.1f}; code bytes identical: {same:.4%}"
        )
        names = [*clocks["base"][0].cpu, "of which LAPACK (eigh, qr)", "total"]
        for name in names:
            cells = []
            for side in ("base", "now"):
                cpu = [_cpu(c, name) for c in clocks[side]]
                wall = [_wall(c, name) for c in clocks[side]]
                cells.append(
                    f"{statistics.median(cpu) * 1000:6.0f} ({statistics.median(wall) * 1000:4.0f})"
                )
            lines.append(f"  {name:<28} base {cells[0]}   now {cells[1]}")
    store.close()
    return lines


def _cpu(clock: Clock, name: str) -> float:
    if name == "total":
        return sum(clock.cpu.values())
    return clock.lapack if name.startswith("of which") else clock.cpu[name]


def _wall(clock: Clock, name: str) -> float:
    if name == "total":
        return sum(clock.wall.values())
    return float("nan") if name.startswith("of which") else clock.wall[name]


OPEN = """
import json, os, sys, time
from kgsearch.model import Kind
from kgsearch.store.sqlite import SQLiteStore
clock = lambda: (time.process_time(), time.perf_counter())
opened = clock()
store = SQLiteStore(sys.argv[1])
scans = [store.vectors_cache.entry(store.db, "default", kind).scan
         for kind in (Kind.RELATIONSHIP, Kind.OBJECT)]
read = clock()
ready = [scan.wait(600) for scan in scans]
done = clock()
print(json.dumps({"read": [b - a for a, b in zip(opened, read)],
                  "kernels": [b - a for a, b in zip(read, done)], "ready": ready,
                  "loaded": [getattr(s, "kernel_loaded", False) for s in scans]}))
"""


MEMORY = """
import ctypes, gc, json, sys
import numpy as np
from kgsearch.model import Kind
from kgsearch.store import nbits
from kgsearch.store.sqlite import SQLiteStore

def rss():  # after giving the freed heap back (the rows' read left ~200 MB free in it)
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

store = SQLiteStore(sys.argv[1], migrate=False, ann_min_rows=None)
out = {}
for kind in (Kind.RELATIONSHIP, Kind.OBJECT):
    matrix = np.ascontiguousarray(store.vectors_cache.entry(store.db, "default", kind).matrix)
    nbits.build(matrix[:6000], 6000)  # libraries loaded, onnxruntime warmed
    gc.collect()
    before = rss()
    kernel = nbits.build(matrix, matrix.shape[0])
    gc.collect()
    held = rss() - before
    del kernel
    gc.collect()
    out[kind.value] = [held, rss() - before]
print(json.dumps(out))
"""


def child(script: str, src: Path, *args: str) -> Any:
    """What ``script`` prints last (a line of JSON), run with ``args`` in a fresh process
    importing ``src`` (bench_vecmap.py runs its children the same way)."""
    out = subprocess.run(
        [sys.executable, "-c", script, *args],
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def memory(args: argparse.Namespace) -> list[str]:
    """Part ``memory``: resident memory a kernel keeps, a fresh process a side."""
    lines = ["resident MB a built kernel keeps (and after it is dropped), a fresh process a side:"]
    for side, src in {"base": Path(args.base_src), "now": ROOT / "src"}.items():
        found = child(MEMORY, src, str(SHARED))
        cells = ", ".join(f"{k}s {v[0]:.1f} ({v[1]:.1f})" for k, v in found.items())
        lines.append(f"  {side}: {cells}")
    return lines


def private_copy(folder: Path) -> Path:
    """A copy of the shared store (SQLite's backup: consistent while others read it)."""
    target = folder / SHARED.name
    with (
        sqlite3.connect(f"file:{SHARED}?mode=ro", uri=True) as src,
        sqlite3.connect(target) as dst,
    ):
        src.backup(dst)
    return target


def opens(args: argparse.Namespace) -> list[str]:
    """Part ``open``: lines of the report."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(args.db) if args.db else private_copy(Path(tmp))
        assert db.resolve() != SHARED.resolve(), "the kernel is saved beside the store: a copy"
        sides = {"base": Path(args.base_src), "now": ROOT / "src"}
        results: dict[tuple[str, str], list[dict[str, Any]]] = {}
        loads = []
        for round_ in range(1 + args.opens):
            for side, src in sides.items():
                label = "cold" if round_ == 0 else "warm"
                if round_ == 0:  # the base saves no kernel: its warm opens build again
                    shutil.rmtree(Path(f"{db}.ann"), ignore_errors=True)
                loads.append(os.getloadavg()[0])
                results.setdefault((side, label), []).append(child(OPEN, src, str(db)))
    lines = [
        f"fresh processes taking turns (load {min(loads):.1f}-{max(loads):.1f}), process CPU / "
        "wall s: the store opened and both kinds' vectors read (int8 codes made), then both "
        "kernels ready (Int8Scan.wait)"
    ]
    for (side, label), runs in results.items():
        cells = ", ".join(
            f"read {r['read'][0]:.2f} / {r['read'][1]:.2f}, kernels {r['kernels'][0]:.2f} / "
            f"{r['kernels'][1]:.2f}"
            + (" (loaded)" if all(r["loaded"]) else " (built)")
            + ("" if all(r["ready"]) else " NOT READY")
            for r in runs
        )
        lines.append(f"  {side} {label}: {cells}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-src", required=True, help="the other version's src/ folder")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--opens", type=int, default=2, help="warm opens after the cold one")
    parser.add_argument("--db", help="a private copy of metaqa-full.db (default: made here)")
    parser.add_argument("--parts", default="steps,memory,open")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md's section")
    args = parser.parse_args()
    report: list[str] = []
    parts = args.parts.split(",")
    if "steps" in parts:
        report += steps(args, load_module(Path(args.base_src)))
        print("\n".join(report), flush=True)
    if "memory" in parts:
        lines = memory(args)
        print("\n".join(lines), flush=True)
        report += lines
    if "open" in parts:
        lines = opens(args)
        print("\n".join(lines), flush=True)
        report += lines
    if args.write:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from benchdoc import write_section

        command = "python scripts/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])
        body = "```\n" + "\n".join(report) + "\n```"
        write_section("kernel-build", "The scan kernel's build (nbits.py)", command, body)


if __name__ == "__main__":
    main()
