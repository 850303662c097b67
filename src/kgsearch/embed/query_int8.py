"""The bundled model's graph for queries: the same int8 weights, multiplied in int8.

A lone query's cost with the bundled model is mostly a fixed part: onnxruntime turns the
file's int8 weights into float32 once, at load, so every call streams ~42 MB of float32
weights through 36 matrix products whatever the query's length (those products alone take
~2.6 ms of CPU for one token, ~4.4 ms for ten, on one core; the whole model ~5.3 ms).

This recipe rewrites each of those MatMuls (weight = ``Cast(int8) × per-column scale``)
as onnxruntime's ``MatMulNBits`` with 8-bit weights, blocks of 32 along the inner
dimension and ``accuracy_level=4``: the weights stay int8 in memory and are exactly the
bundled file's (each block's scale is its column's scale, zero point 128), and each
row of activations is quantised to int8 per block of 32 before the product. What changes
is only that rounding of the activations: on 1,000 MetaQA questions the vectors keep a
cosine of at least 0.9996 to the bundled model's (largest component difference ~5e-3),
where ``bundled:fast`` (per-tensor activations) keeps 0.99. A row is quantised on its own,
so a text's vector does not depend on the texts batched with it.

Each layer's self-attention, exported as ~35 small nodes (reshapes, transposes, shape
look-ups, the mask built from the attention mask, softmax, a NaN guard), becomes one
onnxruntime ``MultiHeadAttention`` node (12 heads, the attention mask as key padding
mask): 145 nodes instead of 315 before onnxruntime's own fusions. On its own, in the
float32 graph, that fusion moves vectors by 1.3e-7 at most and saves ~8 % of a lone
query's CPU; here, ~11 %.

Built on the first query from the bundled file with the ``onnx`` package (a
dependency), checked on :data:`kgsearch.embed.requant.PROBES` and cached with a
manifest, the way ``bundled:fast`` is (:func:`kgsearch.embed.requant.ensure_model` with
:data:`RECIPE`). It is the bundled model's default for queries
(:class:`kgsearch.embed.bundled.BundledEmbedder`'s ``fast_queries``); a build that
cannot happen leaves queries to the document model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgsearch.embed.requant import Recipe

__all__ = ["BLOCK", "NAME", "RECIPE", "REFERENCE_SHA256"]

NAME = "all-MiniLM-L6-v2-int8q"
"""The cached file's stem."""
BLOCK = 32
"""Inner-dimension block: one activation scale per 32 values of a row (16 was 10 %
slower for a cosine of 0.99979 instead of 0.99965; 128 was 10 % faster at 0.9987)."""

REFERENCE_SHA256 = "36bf431dd1dcbfeec6aacca465f6779acd8fe71c50db2ff792200317e7285c86"
"""The build's sha256 from the pinned source with onnxruntime 1.32.0 and onnx 1.23.2
(built twice, identical). Its probes' cosines to the bundled model: lowest 0.99880 (the
empty string), mean 0.99972."""


def _rewrite(source: Path, built: Path) -> None:
    """Write ``source`` with each int8-weight MatMul replaced by ``MatMulNBits``."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    constants = {tensor.name: tensor for tensor in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    readers: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1
    replaced: dict[int, Any] = {}
    dropped: set[int] = set()
    added = []
    for node in graph.node:
        found = _int8_weight(node, producer, constants, readers)
        if found is None:
            continue
        cast, scale_node, weights, scales = found
        inner, outer = weights.shape
        blocks = inner // BLOCK
        stem = node.input[1] + "_q8"
        # uint8 = int8 + 128 with zero point 128: the same values, laid out [N, blocks, 32]
        packed = (weights.astype(np.int16) + 128).astype(np.uint8).T.reshape(outer, blocks, BLOCK)
        added += [
            numpy_helper.from_array(np.ascontiguousarray(packed), stem + "_w"),
            numpy_helper.from_array(np.repeat(scales.reshape(outer), blocks), stem + "_s"),
            numpy_helper.from_array(np.full(outer * blocks, 128, np.uint8), stem + "_z"),
        ]
        replaced[id(node)] = helper.make_node(
            "MatMulNBits",
            [node.input[0], stem + "_w", stem + "_s", stem + "_z"],
            list(node.output),
            name=(node.name or stem) + "_q8",
            domain="com.microsoft",
            K=inner,
            N=outer,
            bits=8,
            block_size=BLOCK,
            accuracy_level=4,
        )
        dropped |= {id(cast), id(scale_node)}
    if not replaced:
        raise ValueError(f"{source}: no MatMul with int8 weights to rewrite")
    nodes = [replaced.get(id(n), n) for n in graph.node if id(n) not in dropped]
    if "attention_mask" in {value.name for value in graph.input}:
        nodes = _fused_attention(nodes, {out.name for out in graph.output})
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for node in graph.node for name in node.input}
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept + added)
    if not any(opset.domain == "com.microsoft" for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, str(built))


def _fused_attention(nodes: list[Any], outputs: set[str]) -> list[Any]:
    """``nodes`` with each layer's self-attention (the export's ~35 reshapes, transposes,
    shape look-ups, two MatMuls, mask, softmax and NaN guard) as one ``MultiHeadAttention``
    of 12 heads over the Q, K and V projections, with the attention mask as its key
    padding mask; nodes nothing reads any more are dropped. A layer whose nodes do not
    have the expected shape is left as it is."""
    from onnx import TensorProto, helper

    producer = {out: node for node in nodes for out in node.output}
    readers: dict[str, list[Any]] = {}
    for node in nodes:
        for name in node.input:
            readers.setdefault(name, []).append(node)

    def source(name: str, op: str, hops: int = 6) -> Any:
        """The nearest ``op`` node up the first-input chain from ``name``, or None."""
        node = producer.get(name)
        while node is not None and hops > 0 and node.op_type != op:
            node, hops = producer.get(node.input[0]) if node.input else None, hops - 1
        return node if node is not None and node.op_type == op else None

    def only(name: str, op: str) -> Any:
        found = [node for node in readers.get(name, []) if node.op_type == op]
        return found[0] if len(found) == 1 else None

    mask = "attention_mask_int32"
    fused: dict[int, Any] = {}
    for softmax in [node for node in nodes if node.op_type == "Softmax"]:
        guard = only(softmax.output[0], "Where")
        weighted = guard and only(guard.output[0], "MatMul")
        heads = weighted and only(weighted.output[0], "Transpose")
        merged = heads and only(heads.output[0], "Reshape")
        scores = producer.get(softmax.input[0])
        product = scores and producer.get(scores.input[0])
        if not (merged and product and product.op_type == "MatMul"):
            continue
        query = source(product.input[0], "Add")
        key = source(product.input[1], "Add", hops=10)
        value = source(weighted.input[1], "Add")
        if not (query and key and value):
            continue
        fused[id(merged)] = helper.make_node(
            "MultiHeadAttention",
            [query.output[0], key.output[0], value.output[0], "", mask],
            list(merged.output),
            name=f"{merged.name or merged.output[0]}_attention",
            domain="com.microsoft",
            num_heads=12,
        )
    if not fused:
        return nodes
    cast = helper.make_node("Cast", ["attention_mask"], [mask], to=TensorProto.INT32)
    rewritten = [cast] + [fused.get(id(node), node) for node in nodes]
    needed, kept = set(outputs), []
    for node in reversed(rewritten):
        if any(out in needed for out in node.output):
            kept.append(node)
            needed |= {name for name in node.input if name}
    return kept[::-1]


def _int8_weight(
    node: Any, producer: dict[str, Any], constants: dict[str, Any], readers: dict[str, int]
) -> tuple[Any, Any, Any, Any] | None:
    """(Cast node, Mul node, int8 weights, per-column scales) when ``node`` is a MatMul
    whose weight is ``Cast(int8 constant) × constant of shape (1, N)``, read by it alone."""
    from onnx import numpy_helper

    if node.op_type != "MatMul" or readers.get(node.input[1]) != 1:
        return None
    scale_node = producer.get(node.input[1])
    if scale_node is None or scale_node.op_type != "Mul":
        return None
    cast = producer.get(scale_node.input[0])
    if cast is None or cast.op_type != "Cast" or cast.input[0] not in constants:
        return None
    if scale_node.input[1] not in constants or readers.get(cast.output[0]) != 1:
        return None
    weights = numpy_helper.to_array(constants[cast.input[0]])
    scales = numpy_helper.to_array(constants[scale_node.input[1]])
    if weights.dtype.name != "int8" or weights.ndim != 2 or weights.shape[0] % BLOCK:
        return None
    if scales.shape != (1, weights.shape[1]) or scales.dtype.name != "float32":
        return None
    return cast, scale_node, weights, scales


RECIPE = Recipe(
    name=f"minilm-int8-matmulnbits8-b{BLOCK}-mha/1",
    build=_rewrite,
    reference_sha256=REFERENCE_SHA256,
    min_cosine=0.998,
    min_mean_cosine=0.9995,
    label="bundled model's query graph",
)
"""The build, with the probe cosines it must keep to the bundled model."""
