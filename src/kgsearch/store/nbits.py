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
them). A build took 2.9 s CPU against 0.8 without the projection, in the background.

The graph is written with the ``onnx`` package (a dependency; should it be missing,
:func:`build` returns None and the scan keeps numkong's kernel).
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt

__all__ = ["BLOCK", "RESCORE", "Kernel", "available", "build", "graph_bytes", "width"]

BLOCK = 128
"""Values of a row sharing one scale (blocks of 32 and 64 were no more exact on MetaQA
and no faster)."""
RESCORE = 150
"""Candidates of the kernel's first pass re-scored in float32 (at least): the exact top 30
of 1,000 MetaQA questions was within its best 145 relationships and 132 objects."""
_BITS = 4
_TOP = 2 ** (_BITS - 1) - 1
# Rows projected and quantised at a time. Small: besides bounding the float temporaries,
# OpenBLAS keeps memory for the rest of the process in proportion to the largest matrix
# product it ran (4 MB after 129k rows by 1,024 at a time, 52 MB by 32,768).
_QUANTIZE_ROWS = 2_048
# The principal axes are those of at most this many rows, evenly spaced (the products
# over all 129k MetaQA relationships were two thirds of a build's CPU).
_SAMPLE_ROWS = 16_384


class Kernel:
    """Approximate inner products of a query with rows [0, rows) of a matrix, less one
    constant for all rows of a query when the rows were projected (ranks only).

    Args:
        session: The onnxruntime session of the one-node graph.
        rows: Rows its weight holds.
        projection: The dims × width matrix the rows were projected by (less their
            mean) and a query is projected by; None when the rows kept every coordinate.
    """

    def __init__(
        self, session: object, rows: int, projection: npt.NDArray[np.float32] | None = None
    ) -> None:
        self._session = session
        self._projection = projection
        self.rows = rows
        self.width = 0 if projection is None else projection.shape[1]
        """Coordinates a row keeps (0: all of them)."""

    def scores(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """One float32 score per row (onnxruntime sessions may run from several threads)."""
        if self._projection is not None:
            query = query @ self._projection
        out = self._session.run(["y"], {"q": query.reshape(1, -1)})[0]  # type: ignore[attr-defined]
        result: npt.NDArray[np.float32] = np.asarray(out).reshape(-1)
        return result


@functools.cache
def available() -> bool:
    """Whether the graph can be written (the ``onnx`` package is installed)."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        return False
    return True


def build(matrix: npt.NDArray[np.float32], rows: int) -> Kernel | None:
    """A kernel over rows [0, rows) of ``matrix``; None without ``onnx`` or when the width
    is not a whole number of blocks."""
    dims = matrix.shape[1]
    if not available() or rows == 0 or dims % BLOCK:
        return None
    import onnxruntime as ort

    projection = _projection(matrix, rows, width(dims))
    packed, scales = _quantize(matrix, rows, projection)
    blob = graph_bytes(packed, scales, dims=packed.shape[1] * BLOCK, rows=rows)
    options = ort.SessionOptions()
    # one thread: the scan runs beside other searches, and a second one did not pay
    # (same CPU or more, bench_scan_kernel.py)
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(blob, options, providers=["CPUExecutionProvider"])
    return Kernel(session, rows, None if projection is None else projection[1])


def width(dims: int) -> int:
    """Coordinates a row keeps in the first pass: two thirds of ``dims`` in whole blocks
    (256 of the bundled model's 384), or all of them when that leaves less than one
    block. Measured on the bundled model only: at 224 of its 384 the re-scored top 30 of
    5 and 8 of 1,000 MetaQA questions (relationships, objects) was not exact at 150
    candidates, at 192 of 5 and 25 even at 400."""
    kept = dims * 2 // 3 // BLOCK * BLOCK
    return kept if kept else dims


def _projection(
    matrix: npt.NDArray[np.float32], rows: int, kept: int
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]] | None:
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
    for a in range(0, rows, _QUANTIZE_ROWS * stride):
        stop = min(rows, a + _QUANTIZE_ROWS * stride)
        part = np.asarray(matrix[a:stop:stride], dtype=np.float32)
        total += part.sum(axis=0, dtype=np.float64)
        gram += part.T @ part
    sampled = len(range(0, rows, stride))
    mean = total / sampled
    _, axes = np.linalg.eigh(gram - sampled * np.outer(mean, mean))  # ascending variance
    turn, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((kept, kept)))
    projection = axes[:, ::-1][:, :kept] @ turn
    return mean.astype(np.float32), np.ascontiguousarray(projection, dtype=np.float32)


def graph_bytes(
    packed: npt.NDArray[np.uint8],
    scales: npt.NDArray[np.float32],
    *,
    dims: int,
    rows: int,
    bits: int = _BITS,
    block: int = BLOCK,
) -> bytes:
    """The serialised one-node graph ``y[1, rows] = q[1, dims] × B``: B the ``bits``-bit
    codes ``packed`` (zero point the type's middle, two a byte at 4 bits), one float
    ``scales`` entry per row and block of ``block`` values, int8 activations."""
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node(
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
    graph = helper.make_graph(
        [node],
        "scan",
        [helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, dims])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, rows])],
        [
            numpy_helper.from_array(np.ascontiguousarray(packed), "B"),
            numpy_helper.from_array(np.ascontiguousarray(scales), "S"),
        ],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return bytes(helper.make_model(graph, opset_imports=opsets).SerializeToString())


def _quantize(
    matrix: npt.NDArray[np.float32],
    rows: int,
    projection: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]] | None = None,
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32]]:
    """(codes [rows, blocks, BLOCK / 2], scales [rows * blocks]) of rows [0, rows), less
    the mean and projected first when a ``projection`` is given: symmetric 4-bit codes,
    one scale per block (its largest magnitude / 7), stored with the zero point 8, two a
    byte, the first value in the low nibble."""
    kept = matrix.shape[1] if projection is None else projection[1].shape[1]
    blocks = kept // BLOCK
    packed = np.empty((rows, blocks, BLOCK // 2), dtype=np.uint8)
    scales = np.empty((rows, blocks), dtype=np.float32)
    for a in range(0, rows, _QUANTIZE_ROWS):
        b = min(rows, a + _QUANTIZE_ROWS)
        values = np.asarray(matrix[a:b], dtype=np.float32)
        if projection is not None:
            values = np.subtract(values, projection[0]) @ projection[1]
        part = values.reshape(b - a, blocks, BLOCK)
        scale = np.abs(part).max(axis=2) / _TOP
        scale[scale == 0] = 1.0
        codes = (np.rint(part / scale[:, :, None]).clip(-_TOP, _TOP) + (_TOP + 1)).astype(np.uint8)
        packed[a:b] = codes[:, :, 0::2] | (codes[:, :, 1::2] << 4)
        scales[a:b] = scale
    return packed, scales.reshape(-1)
