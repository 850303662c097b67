"""The int8 scan's faster first pass: 4-bit codes multiplied by onnxruntime's ``MatMulNBits``.

numkong's ``cdist`` pays a fixed cost per row (``ann.py``), which a matrix product over
packed weights does not: the rows become the constant weight of one ``MatMulNBits`` node
(4 bits a value, one float scale per row and block of 128 values) and the query its
activation, quantised to int8 per block (``accuracy_level=4``: VNNI/AMX integer products).
On MetaQA's 129,235 relationships × 384 a query's first pass, best 120 picked and
re-scored in float32, took 1.6-2.4 ms CPU against numkong's 7.9 (load 6.5-10.4), and on
the 42,828 objects 0.73 against 1.16 ms; the re-scored top 30 was the exact float32 top
30 for all of 1,000 real questions on both (``scripts/bench_scan_kernel.py``).

Also measured there and not adopted: 8-bit weights (blocks of 128: 3.5-6.2 ms, blocks
of 32 no faster than numkong on random rows), a second intra-op thread (as much CPU or
more) and blocks of 32 or 64 (no more exact, no faster). No variant lost a question's
top 30 at 100 candidates; the 4-bit code ranks the exact top 30 within its best 55 rows
for 99.5 % of the questions (71 at worst; numkong's int8 codes 34 and 35). The session
holds ~37 MB for the 129k rows (MLAS repacks the 25 MB of codes), beside the int8 codes
it does not replace (the tail and the fallback scan them); a build took 1.6-1.8 s CPU,
~180 MB at its peak (float temporaries, the serialised graph).

The graph is written with the ``onnx`` package (a dependency; should it be missing,
:func:`build` returns None and the scan keeps numkong's kernel).
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt

__all__ = ["BLOCK", "Kernel", "available", "build", "graph_bytes"]

BLOCK = 128
"""Values of a row sharing one scale (blocks of 32 and 64 were no more exact on MetaQA
and no faster)."""
_BITS = 4
_TOP = 2 ** (_BITS - 1) - 1
# Rows quantised at a time (bounds the float temporaries).
_QUANTIZE_ROWS = 32_768


class Kernel:
    """Approximate inner products of a query with rows [0, rows) of a matrix.

    Args:
        session: The onnxruntime session of the one-node graph.
        rows: Rows its weight holds.
    """

    def __init__(self, session: object, rows: int) -> None:
        self._session = session
        self.rows = rows

    def scores(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """One float32 score per row (onnxruntime sessions may run from several threads)."""
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

    packed, scales = _quantize(matrix, rows)
    blob = graph_bytes(packed, scales, dims=dims, rows=rows)
    options = ort.SessionOptions()
    # one thread: the scan runs beside other searches, and a second one did not pay
    # (same CPU or more, bench_scan_kernel.py)
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(blob, options, providers=["CPUExecutionProvider"])
    return Kernel(session, rows)


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
    matrix: npt.NDArray[np.float32], rows: int
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32]]:
    """(codes [rows, blocks, BLOCK / 2], scales [rows * blocks]) of rows [0, rows):
    symmetric 4-bit codes, one scale per block (its largest magnitude / 7), stored with
    the zero point 8, two a byte, the first value in the low nibble."""
    blocks = matrix.shape[1] // BLOCK
    packed = np.empty((rows, blocks, BLOCK // 2), dtype=np.uint8)
    scales = np.empty((rows, blocks), dtype=np.float32)
    for a in range(0, rows, _QUANTIZE_ROWS):
        b = min(rows, a + _QUANTIZE_ROWS)
        part = np.asarray(matrix[a:b], dtype=np.float32).reshape(b - a, blocks, BLOCK)
        scale = np.abs(part).max(axis=2) / _TOP
        scale[scale == 0] = 1.0
        codes = (np.rint(part / scale[:, :, None]).clip(-_TOP, _TOP) + (_TOP + 1)).astype(np.uint8)
        packed[a:b] = codes[:, :, 0::2] | (codes[:, :, 1::2] << 4)
        scales[a:b] = scale
    return packed, scales.reshape(-1)
