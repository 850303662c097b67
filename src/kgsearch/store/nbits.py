"""The int8 scan's faster first pass: 4-bit codes multiplied by onnxruntime's ``MatMulNBits``.

numkong's ``cdist`` pays a fixed cost per row (``ann.py``), which a matrix product over
packed weights does not: the rows become the constant weight of one ``MatMulNBits`` node
(4 bits a value, one float scale per row and block of 128 values) and the query its
activation, quantised to int8 per block (``accuracy_level=4``: VNNI/AMX integer products).
On MetaQA's 129,235 relationships × 384 a query's first pass, best 120 picked and
re-scored in float32, took 1.6-2.4 ms CPU against numkong's 7.9 (load 6.5-10.4), and on
the 42,828 objects 0.73 against 1.16 ms; the re-scored top 30 was the exact float32 top
30 for all of 1,000 real questions on both (``scripts/bench_scan_kernel.py``).

Fewer bytes a row (issue 34): the rows are projected, less their mean, onto their 256
principal axes turned by a random rotation (:func:`width`, :func:`_projection`), so a
row is 128 bytes of codes and 2 scales instead of 192 and 3, and the query is projected
the same way; the best :data:`RESCORE` are re-scored. The product shrinks with the
bytes, not the work around it (running the session, picking the best among 129k
scores): 1.90 -> 1.31 ms CPU a query on the relationships, 0.65 -> 0.45 on the objects
(load 8-10), and the re-scored top 30 stayed exact for all of 1,000 questions on both
(999 of 1,000 others: one held-out question's top 30 reached rank 811 of the first
pass). Narrower was not exact enough: at 224 coordinates (blocks of 32) 5 and 8 of
1,000 questions lost their top 30 at 150 candidates (relationships, objects), and it
was no faster than all 384; in an earlier exploratory run (``--widths 192 128
--rejected`` measures them) 192 lost 5 and 25 at 400 candidates, 128 (0.9 ms) a fifth.

Also measured there and not adopted: 8-bit weights (blocks of 128: 3.5-6.2 ms, blocks
of 32 no faster than numkong on random rows), 2-bit weights (onnxruntime 1.32 takes 2, 4
or 8 bits, not 3: three levels on the principal axes kept the exact top 30 within the
best 200 rows for 7 % of the questions, and ran slower), the principal axes without
the rotation (all 384: 984 of 1,000 exact at 100 candidates), a second intra-op thread
(as much CPU or more) and blocks of 32 or 64 (no more exact, no faster).

A kernel over the 129k relationships holds 36.9 MB (54.3 MB over all 384 coordinates;
the objects' 13.2 against 18.7: resident memory freed when it is dropped, MLAS repacks
the codes), beside the int8 codes it does not replace (the tail and the fallback scan
them).

A build (``scripts/bench_kernel_build.py``, taking turns with 25450f5's at load 13-14)
costs 0.66 s CPU on the relationships and 0.27 on the objects, against 4.7 and 1.6 s:
its products run on one onnxruntime thread (:class:`_Products`), numpy's OpenBLAS is
held to one thread around ``eigh`` (:func:`_one_blas_thread`: its spinning threads made
that one call 1.7-3.2 s of it), the rotation is made once a process, and the codes reach
onnxruntime beside the graph, not serialised into it. It is paid once per set of rows:
the scan saves the kernel beside the store (``ann.py``; :func:`save`, :func:`load`) and
the next process reads it, 0.35-0.43 s CPU from the rows read to both kinds' kernels
ready, against 1.33 built (4.6-9.0 before).

The graph is written with the ``onnx`` package (a dependency; should it be missing,
:func:`build` returns None and the scan keeps numkong's kernel).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from kgsearch.store import saved_files

__all__ = [
    "BLOCK",
    "RESCORE",
    "Codes",
    "Kernel",
    "available",
    "build",
    "graph_bytes",
    "key",
    "load",
    "load_or_build",
    "save",
    "width",
]

BLOCK = 128
"""Values of a row sharing one scale (blocks of 32 and 64 were no more exact on MetaQA
and no faster)."""
RESCORE = 150
"""Candidates of the kernel's first pass re-scored in float32 (at least): the exact top 30
of 1,000 MetaQA questions was within its best 145 relationships and 132 objects."""
_BITS = 4
_TOP = 2 ** (_BITS - 1) - 1
# Rows projected and quantised at a time (bounds the float temporaries).
_QUANTIZE_ROWS = 2_048
# The principal axes are those of at most this many rows, evenly spaced (the products
# over all 129k MetaQA relationships were two thirds of a build's CPU).
_SAMPLE_ROWS = 16_384
# Version of the saved kernel's layout and of the build's recipe: a saved file of
# another version is never read (bump it whenever the codes a build makes change).
_SAVED_FORMAT = 1

Matrix = npt.NDArray[np.float32]
Projection = tuple[Matrix, Matrix]
"""(mean of the rows, dims × width matrix) a row is projected by, less the mean."""


@dataclass(frozen=True)
class Codes:
    """What a kernel is made of, and what is saved of it.

    Attributes:
        packed: 4-bit codes [rows, blocks, BLOCK / 2], two a byte, zero point 8.
        scales: One float per row and block [rows * blocks].
        projection: The rows' (mean, projection), None when they kept every coordinate.
    """

    packed: npt.NDArray[np.uint8]
    scales: Matrix
    projection: Projection | None

    @property
    def rows(self) -> int:
        """Rows the codes hold."""
        return int(self.packed.shape[0])


class Kernel:
    """Approximate inner products of a query with rows [0, rows) of a matrix, less one
    constant for all rows of a query when the rows were projected (ranks only).

    The codes are handed to onnxruntime as external initializers rather than written
    into the serialised graph (writing the graph's 17 MB cost 56-60 ms CPU on MetaQA's
    relationships at load 13, besides its parse). onnxruntime requires such buffers to
    outlive the session, so the kernel keeps them; it holds as much memory as before all
    the same (35.9 against 36.6 MB on the relationships, 12.2 on the objects: MLAS
    repacks the codes either way; ``bench_kernel_build.py --parts memory``).

    Args:
        codes: The rows' codes, scales and projection.
    """

    def __init__(self, codes: Codes) -> None:
        self.codes = codes
        self.rows = codes.rows
        blocks = codes.packed.shape[1]
        self._projection = None if codes.projection is None else codes.projection[1]
        self.width = 0 if self._projection is None else self._projection.shape[1]
        """Coordinates a row keeps (0: all of them)."""
        self._session = _session(
            _model(
                [_scan_node(blocks * BLOCK, self.rows)],
                ("q", [1, blocks * BLOCK]),
                ("y", [1, self.rows]),
                [_external("B", codes.packed), _external("S", codes.scales)],
            ),
            {"B": codes.packed, "S": codes.scales},
            arena=True,
        )
        # per thread: an io_binding and the buffer the product is written into
        self._bound = threading.local()

    def scores(self, query: Matrix) -> Matrix:
        """One float32 score per row, in the calling thread's buffer: valid until the
        thread's next call (sessions may run from several threads, each its own buffer).

        Why a buffer: written into memory bound once rather than a new output each run,
        a leg took 9-13 µs (1-4 %) less CPU on both kinds of MetaQA and of the REST
        sample graph (``scripts/bench_scan_parts.py --part legs`` against 6fd4163, 1,000
        questions each, load 5-6), for a buffer of 4 bytes a row per thread and kind.
        The query's projection stays numpy's: as a ``MatMul`` node in this graph it saved
        nothing (``--part steps``)."""
        if self._projection is not None:
            query = query @ self._projection
        bound = getattr(self._bound, "value", None)
        if bound is None:
            bound = self._bound.value = self._session.bound(self.rows)
        binding, out = bound
        binding.bind_cpu_input("q", np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1))
        self._session.session.run_with_iobinding(binding)
        return out


@functools.cache
def available() -> bool:
    """Whether the graph can be written (the ``onnx`` package is installed)."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        return False
    return True


def build(matrix: npt.NDArray[Any], rows: int) -> Kernel | None:
    """A kernel over rows [0, rows) of ``matrix``; None without ``onnx`` or when the width
    is not a whole number of blocks."""
    dims = matrix.shape[1]
    if not available() or rows == 0 or dims % BLOCK:
        return None
    projection = _projection(matrix, rows, width(dims))
    packed, scales = _quantize(matrix, rows, projection)
    return Kernel(Codes(packed, scales, projection))


def load_or_build(
    matrix: npt.NDArray[Any], rows: int, saved: Path | None, known: str | None = None
) -> tuple[Kernel | None, bool]:
    """(the kernel of rows [0, rows), whether it was loaded): the one saved for these very
    rows when ``saved`` is given (the file used is that path with their :func:`key` added
    to its name), else a new :func:`build`, then saved there when it can be. ``known``
    is their key when the caller has it (saved with the mapped vectors, whose rows it
    would otherwise read all of, 0.17 s for MetaQA's relationships)."""
    if saved is None or not available():
        return build(matrix, rows), False
    started = time.time()
    digest = known or key(matrix, rows)
    path = saved.with_name(f"{saved.stem}-{digest}{saved.suffix}")
    kernel = load(path, digest, rows, matrix.shape[1])
    if kernel is not None:
        return kernel, True
    kernel = build(matrix, rows)
    if kernel is not None:
        built = kernel
        saved_files.keep(path, lambda tmp: save(built, tmp, digest), started, "the scan kernel")
    return kernel, False


def width(dims: int) -> int:
    """Coordinates a row keeps in the first pass: two thirds of ``dims`` in whole blocks
    (256 of the bundled model's 384), or all of them when that leaves less than one
    block. Measured on the bundled model only: at 224 of its 384 the re-scored top 30 of
    5 and 8 of 1,000 MetaQA questions (relationships, objects) was not exact at 150
    candidates, at 192 of 5 and 25 even at 400."""
    kept = dims * 2 // 3 // BLOCK * BLOCK
    return kept if kept else dims


def _projection(matrix: npt.NDArray[Any], rows: int, kept: int) -> Projection | None:
    """(mean, dims × ``kept`` projection) of rows [0, rows), or None to keep every
    coordinate: the top ``kept`` principal axes of the centred rows, turned by a random
    rotation (seeded) so that every coordinate carries about the same variance.

    Why the rotation: one scale serves a block of 128 values, and along the principal
    axes the first values of a row dwarf the later ones, which then round to few levels
    (all 384 axes without it: 984 of 1,000 questions kept their top 30 at 100
    candidates, against 1,000 with it and without any projection). The mean only shifts
    every row's product by the same amount, so it is left out of the kernel's scores.
    """
    dims = matrix.shape[1]
    if kept >= dims:
        return None
    stride = -(-rows // _SAMPLE_ROWS)
    total = np.zeros(dims, dtype=np.float64)
    gram = np.zeros((dims, dims), dtype=np.float64)
    products = _Products(dims)
    for a in range(0, rows, _QUANTIZE_ROWS * stride):
        stop = min(rows, a + _QUANTIZE_ROWS * stride)
        part = np.asarray(matrix[a:stop:stride], dtype=np.float32)
        total += part.sum(axis=0, dtype=np.float64)
        gram += products(part)
    sampled = len(range(0, rows, stride))
    mean = total / sampled
    with _one_blas_thread():
        _, axes = np.linalg.eigh(gram - sampled * np.outer(mean, mean))  # ascending variance
        projection = axes[:, ::-1][:, :kept] @ _rotation(kept)
    return mean.astype(np.float32), np.ascontiguousarray(projection, dtype=np.float32)


_BLAS_LOCK = threading.Lock()


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """numpy's BLAS on one thread within the block. OpenBLAS splits each call over every
    core and its threads spin while they wait for each other: on 2 cores at load 12 the
    build's one ``eigh`` of a 384 x 384 matrix cost 1.7-2.1 s of CPU, against 15 ms on one
    thread, taken from the searches beside the build. The limit is process-wide (BLAS has
    no per-call setting), so blocks take turns: the count each one restores is the one
    before any of them (two overlapping blocks would otherwise leave it at 1). Other
    threads' BLAS calls meanwhile, a search's products of a query with 150 rows, are below
    OpenBLAS's threshold for a second thread anyway. ``serve`` holds BLAS to one thread
    for good (``cli/serve_workers.py``)."""
    from threadpoolctl import threadpool_limits  # a build's first step: imported then

    with _BLAS_LOCK, threadpool_limits(1, user_api="blas"):
        yield


@functools.cache
def _rotation(kept: int) -> npt.NDArray[np.float64]:
    """The seeded random rotation of ``kept`` coordinates, the same for every build: made
    once a process (a QR decomposition: 4 ms on one thread)."""
    turn, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((kept, kept)))
    turn.flags.writeable = False
    return turn


class _Products:
    """Matrix products of the build on one onnxruntime thread: xᵀx of a block of rows
    (the Gram matrix), or given a projection, the rows less the mean, projected.

    Why not numpy: OpenBLAS splits each product over every core and its threads spin
    between calls, so on MetaQA's relationships the same products cost ~1.7× the CPU of
    one thread, taken from the searches that share the cores with a background build.
    """

    def __init__(self, dims: int, projection: Projection | None = None) -> None:
        from onnx import helper

        self._arrays: dict[str, Matrix] = {}
        if projection is None:
            nodes = [
                helper.make_node("Transpose", ["x"], ["xt"]),
                helper.make_node("MatMul", ["xt", "x"], ["y"]),
            ]
            out = [dims, dims]
        else:
            mean, axes = projection
            self._arrays = {"P": axes, "c": (mean @ axes).astype(np.float32)}
            nodes = [
                helper.make_node("MatMul", ["x", "P"], ["xp"]),
                helper.make_node("Sub", ["xp", "c"], ["y"]),
            ]
            out = [-1, axes.shape[1]]
        tensors = [_external(name, array) for name, array in self._arrays.items()]
        graph = _model(nodes, ("x", [-1, dims]), ("y", out), tensors)
        self._session = _session(graph, self._arrays, arena=False)

    def __call__(self, rows: Matrix) -> Matrix:
        return self._session.run({"x": rows})


def _quantize(
    matrix: npt.NDArray[Any], rows: int, projection: Projection | None = None
) -> tuple[npt.NDArray[np.uint8], Matrix]:
    """(codes [rows, blocks, BLOCK / 2], scales [rows * blocks]) of rows [0, rows), less
    the mean and projected first when a ``projection`` is given: symmetric 4-bit codes,
    one scale per block (its largest magnitude / 7), stored with the zero point 8, two a
    byte, the first value in the low nibble."""
    dims = matrix.shape[1]
    kept = dims if projection is None else projection[1].shape[1]
    blocks = kept // BLOCK
    packed = np.empty((rows, blocks, BLOCK // 2), dtype=np.uint8)
    scales = np.empty((rows, blocks), dtype=np.float32)
    project = None if projection is None else _Products(dims, projection)
    for a in range(0, rows, _QUANTIZE_ROWS):
        b = min(rows, a + _QUANTIZE_ROWS)
        values = np.ascontiguousarray(matrix[a:b], dtype=np.float32)
        if project is not None:
            values = project(values)
        part = values.reshape(b - a, blocks, BLOCK)
        scale = np.maximum(part.max(axis=2), -part.min(axis=2))
        scale /= _TOP
        scale[scale == 0] = 1.0
        levels = np.divide(part, scale[:, :, None])
        np.rint(levels, out=levels)
        np.clip(levels, -_TOP, _TOP, out=levels)
        levels += _TOP + 1
        codes = levels.astype(np.uint8)
        packed[a:b] = codes[:, :, 0::2] | (codes[:, :, 1::2] << 4)
        scales[a:b] = scale
    return packed, scales.reshape(-1)


def graph_bytes(
    packed: npt.NDArray[np.uint8],
    scales: Matrix,
    *,
    dims: int,
    rows: int,
    bits: int = _BITS,
    block: int = BLOCK,
) -> bytes:
    """The serialised one-node graph ``y[1, rows] = q[1, dims] × B``, its weights inside:
    B the ``bits``-bit codes ``packed`` (zero point the type's middle, two a byte at 4
    bits), one float ``scales`` entry per row and block of ``block`` values, int8
    activations (the benchmark's variants; :class:`Kernel` passes its codes aside)."""
    from onnx import numpy_helper

    tensors = [
        numpy_helper.from_array(np.ascontiguousarray(packed), "B"),
        numpy_helper.from_array(np.ascontiguousarray(scales), "S"),
    ]
    node = _scan_node(dims, rows, bits=bits, block=block)
    return _model([node], ("q", [1, dims]), ("y", [1, rows]), tensors)


def _scan_node(dims: int, rows: int, *, bits: int = _BITS, block: int = BLOCK) -> Any:
    from onnx import helper

    return helper.make_node(
        "MatMulNBits",
        ["q", "B", "S"],
        ["y"],
        domain="com.microsoft",
        K=dims,
        N=rows,
        bits=bits,
        block_size=block,
        accuracy_level=4,
    )


def _model(
    nodes: list[Any], given: tuple[str, list[int]], out: tuple[str, list[int]], tensors: list[Any]
) -> bytes:
    """A serialised float32 graph of ``nodes`` from one input to one output (-1: any size)."""
    from onnx import TensorProto, helper

    def value(name: str, shape: list[int]) -> Any:
        dims = [None if d < 0 else d for d in shape]
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)

    graph = helper.make_graph(nodes, "kgsearch", [value(*given)], [value(*out)], tensors)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return bytes(helper.make_model(graph, opset_imports=opsets).SerializeToString())


def _external(name: str, array: npt.NDArray[Any]) -> Any:
    """An initializer whose data the session is given apart (:func:`_session`)."""
    from onnx import TensorProto, helper

    tensor = TensorProto(name=name, dims=array.shape)
    tensor.data_type = helper.np_dtype_to_tensor_dtype(array.dtype)
    tensor.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "in-memory"), ("offset", "0"), ("length", str(array.nbytes))):
        tensor.external_data.add(key=k, value=v)
    return tensor


def _session(graph: bytes, arrays: dict[str, npt.NDArray[Any]], *, arena: bool) -> _Session:
    """A one-thread session of ``graph`` whose external initializers are ``arrays``. One
    thread: the scan runs beside other searches, and a second one did not pay (same CPU
    or more, bench_scan_kernel.py). ``arena``: keep onnxruntime's memory arena (the
    kernel's session, run by every search; the build's are dropped after it)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = arena
    values = [ort.OrtValue.ortvalue_from_numpy(a) for a in arrays.values()]
    if values:
        options.add_external_initializers(list(arrays), values)
    session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
    return _Session(session, values)


@dataclass(frozen=True)
class _Session:
    """An onnxruntime session and the values of its external initializers, which
    onnxruntime requires to outlive it."""

    session: Any
    held: list[Any]

    def run(self, feed: dict[str, Matrix]) -> Matrix:
        """The graph's one output for ``feed``."""
        out: Matrix = self.session.run(["y"], feed)[0]
        return out

    def bound(self, size: int) -> tuple[Any, Matrix]:
        """(an io_binding whose output ``y`` is written into the returned buffer of ``size``
        floats, the buffer): the caller binds the input and runs it."""
        out = np.empty(size, dtype=np.float32)
        binding = self.session.io_binding()
        binding.bind_output("y", "cpu", 0, np.float32, [1, size], out.ctypes.data)
        return binding, out


def key(matrix: npt.NDArray[Any], rows: int) -> str:
    """What a saved kernel of rows [0, rows) is filed under: their digest and the build's
    recipe (:func:`saved_files.digest`)."""
    return saved_files.digest(matrix[:rows], f"{_SAVED_FORMAT}:{_BITS}:{BLOCK}:{_SAMPLE_ROWS}")


def save(kernel: Kernel, path: Path, digest: str) -> None:
    """Write ``kernel``'s codes to ``path`` (an uncompressed ``.npz``: each member carries a
    CRC-32 that reading checks) with the ``digest`` of the rows it was built from.

    Raises:
        OSError: The file could not be written.
    """
    codes = kernel.codes
    empty = np.zeros(0, dtype=np.float32)
    mean, axes = codes.projection if codes.projection is not None else (empty, empty)
    with path.open("wb") as out:
        np.savez(
            out,
            digest=np.frombuffer(digest.encode(), dtype=np.uint8),
            packed=codes.packed,
            scales=codes.scales,
            mean=mean,
            axes=axes,
        )
        out.flush()
        os.fsync(out.fileno())


def load(path: Path, digest: str, rows: int, dims: int) -> Kernel | None:
    """The kernel saved at ``path`` for ``rows`` rows of ``dims`` coordinates whose digest
    is ``digest`` (:func:`key`); None when there is none or it does not hold exactly that
    (another digest, a layout of other types or shapes, a failed checksum, a truncated
    file, not an ``.npz``): never trusted, rebuilt."""
    if not path.exists():
        return None
    try:
        with path.open("rb") as file:
            saved = np.load(file, allow_pickle=False)
            if not isinstance(saved, np.lib.npyio.NpzFile):
                return None
            with saved:
                found = {name: saved[name] for name in _SAVED}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    codes = _codes(found, digest, rows, dims)
    return None if codes is None else Kernel(codes)


_SAVED = ("digest", "packed", "scales", "mean", "axes")


def _codes(found: dict[str, npt.NDArray[Any]], digest: str, rows: int, dims: int) -> Codes | None:
    """The saved arrays as :class:`Codes` when they are what a build over ``rows`` rows of
    ``dims`` coordinates and of ``digest`` makes (types and shapes agree), else None."""
    packed, scales, mean, axes = found["packed"], found["scales"], found["mean"], found["axes"]
    kept = width(dims)
    projected = kept < dims
    if (
        found["digest"].tobytes() != digest.encode()
        or packed.dtype != np.uint8
        or packed.shape != (rows, kept // BLOCK, BLOCK // 2)
        or scales.dtype != np.float32
        or scales.shape != (packed.shape[0] * packed.shape[1],)
        or mean.dtype != np.float32
        or axes.dtype != np.float32
        or mean.shape != ((dims,) if projected else (0,))
        or axes.shape != ((dims, kept) if projected else (0,))
    ):
        return None
    return Codes(packed, scales, (mean, axes) if projected else None)
