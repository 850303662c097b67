"""``fast_queries`` (the bundled model's default): queries through the bundled weights
multiplied in int8 (:mod:`kgsearch.embed.query_int8`), documents as before; a query
graph that cannot be built leaves queries to the document model, never fails them.

The rewrite is checked on a small synthetic graph (fast); the real build (about 3 s on
2 shared cores) happens once per test run, into the run's cache (conftest
``model_cache``), and the tests that need it are marked slow.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import logging
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from kgsearch.embed import create_embedder, query_int8, requant
from kgsearch.embed.bundled import FAST_MODEL, MODEL_SHA256, BundledEmbedder
from kgsearch.errors import ConfigError

SUBJECTS = ["Ada", "The committee", "A small startup", "My neighbour", "The river authority"]
VERBS = ["approved", "rejected", "discussed", "funded"]
OBJECTS = ["the new bridge", "a report on graph databases", "plans for a solar farm"]
QUESTIONS = [
    "who directed the movie Jesse James",
    "what films did Henry Fonda star in",
    "which language is Seven Samurai in",
    "when was The Grapes of Wrath released",
]


def _texts() -> list[str]:
    """60 distinct sentences and 4 questions, none of them a build probe."""
    combos = itertools.product(SUBJECTS, VERBS, OBJECTS)
    return [f"{s} {v} {o} in {1990 + i}." for i, (s, v, o) in enumerate(combos)] + QUESTIONS


def _tiny_graph(path: Path, inner: int = 64, outer: int = 8) -> np.ndarray:
    """A graph computing ``x @ (Cast(q) * scale) @ w2`` (int8 weights, then a float
    MatMul); returns the dequantised int8 weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    q = rng.integers(-127, 128, size=(inner, outer), dtype=np.int8)
    scale = rng.uniform(0.001, 0.01, size=(1, outer)).astype(np.float32)
    w2 = rng.standard_normal((outer, 3)).astype(np.float32)
    nodes = [
        helper.make_node("Cast", ["q"], ["qf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["qf", "scale"], ["w"]),
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("MatMul", ["h", "w2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, inner])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])],
        [numpy_helper.from_array(a, n) for a, n in ((q, "q"), (scale, "scale"), (w2, "w2"))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return q.astype(np.float32) * scale


def _run(path: Path, x: np.ndarray) -> np.ndarray:
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(["y"], {"x": x})[0])


def test_the_rewrite_replaces_int8_weight_matmuls_only_and_keeps_their_weights(
    tmp_path: Path,
) -> None:
    import onnx

    source, built = tmp_path / "tiny.onnx", tmp_path / "built.onnx"
    _tiny_graph(source)
    query_int8.RECIPE.build(source, built)
    ops = [node.op_type for node in onnx.load(str(built)).graph.node]
    assert ops == ["MatMulNBits", "MatMul"]  # Cast and Mul gone, the float MatMul kept
    x = np.random.default_rng(1).standard_normal((5, 64)).astype(np.float32)
    before, after = _run(source, x), _run(built, x)
    # only the activations are rounded (to int8, per block of 32): close, not equal
    assert np.abs(after - before).max() < 0.02 * np.abs(before).max()
    assert not np.array_equal(after, before)
    # each row on its own: the same rows alone or together
    assert np.array_equal(_run(built, x[2:3]), after[2:3])


def test_a_graph_without_int8_weights_is_refused(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((32, 3), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "float",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])],
        [w],
    )
    source = tmp_path / "float.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(source))
    with pytest.raises(ValueError, match="no MatMul with int8 weights"):
        query_int8.RECIPE.build(source, tmp_path / "out.onnx")


def test_fast_queries_is_for_the_default_model_only() -> None:
    with pytest.raises(ConfigError, match="fast_queries"):
        BundledEmbedder(model=FAST_MODEL, fast_queries=True)


def test_without_fast_queries_embed_queries_equals_embed_documents() -> None:
    embedder = BundledEmbedder(fast_queries=False)
    texts = _texts()[:20]
    queries = embedder.embed_queries(texts)
    documents = embedder.embed_documents(texts)
    assert all(np.array_equal(q, d) for q, d in zip(queries, documents, strict=True))
    assert np.array_equal(embedder.embed_query(texts[3]), documents[3])
    assert embedder.embed_queries([]) == []


def test_the_default_model_embeds_queries_through_the_query_graph_by_default() -> None:
    assert BundledEmbedder().queries == "query graph (not loaded yet)"
    assert BundledEmbedder(fast_queries=False).queries == "document model (fast_queries is off)"
    assert BundledEmbedder(model=FAST_MODEL).queries == (
        "document model (the fast model multiplies in int8 itself)"
    )


def _falls_back(embedder: BundledEmbedder, caplog: pytest.LogCaptureFixture) -> str:
    """Embed queries with ``embedder`` whose query graph cannot be had; check they are
    the document model's vectors with one warning; return what it says of its queries."""
    texts = QUESTIONS[:2]
    with caplog.at_level(logging.WARNING, logger="kgsearch.embed.bundled"):
        first = embedder.embed_query(texts[0])
        again = embedder.embed_queries(texts)
    documents = embedder.embed_documents(texts)
    assert np.array_equal(first, documents[0])
    assert all(np.array_equal(q, d) for q, d in zip(again, documents, strict=True))
    assert embedder.sessions == ("documents",)
    warned = [r.getMessage() for r in caplog.records if "query graph" in r.getMessage()]
    assert len(warned) == 1, warned  # once, not once a query
    assert warned[0].startswith("queries are embedded with the document model")
    return embedder.queries


def test_without_onnx_queries_go_through_the_document_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)
    said = _falls_back(BundledEmbedder(cache_dir=tmp_path / "empty"), caplog)
    assert said.startswith("document model (query graph unavailable: MissingDependency: ")


def test_an_unwritable_cache_leaves_queries_to_the_document_model(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    said = _falls_back(BundledEmbedder(cache_dir=blocked / "models"), caplog)
    assert said.startswith("document model (query graph unavailable: ProviderError: ")


def test_a_query_graph_that_misses_its_probes_leaves_queries_to_the_document_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def far(self: BundledEmbedder, candidate: Path, texts: Sequence[str]) -> list[float]:
        return [0.5] * len(texts)

    def copy(source: Path, built: Path) -> None:  # no 3 s build: the probes fail anyway
        shutil.copyfile(source, built)

    monkeypatch.setattr(query_int8, "RECIPE", dataclasses.replace(query_int8.RECIPE, build=copy))
    monkeypatch.setattr(BundledEmbedder, "_probe_cosines", far)
    said = _falls_back(BundledEmbedder(cache_dir=tmp_path / "models"), caplog)
    assert "drifted from the bundled model's" in said
    assert not list((tmp_path / "models").glob("*.onnx"))  # nothing kept


@pytest.fixture(scope="module")
def cache() -> Path:
    """The run's cache directory (conftest ``model_cache``), holding the query graph."""
    BundledEmbedder().embed_query("build it")
    return requant.cache_dir()


def _built(cache: Path) -> Path:
    return cache / f"{query_int8.NAME}-{MODEL_SHA256[:12]}.onnx"


@pytest.mark.slow
def test_the_build_is_cached_with_a_manifest_that_matches_its_bytes(cache: Path) -> None:
    model = _built(cache)
    manifest = requant.read_manifest(model)
    assert manifest is not None
    assert (manifest.recipe, manifest.source_sha256) == (query_int8.RECIPE.name, MODEL_SHA256)
    assert hashlib.sha256(model.read_bytes()).hexdigest() == manifest.sha256
    assert manifest.reproduced == (manifest.sha256 == query_int8.REFERENCE_SHA256)
    assert manifest.min_cosine >= query_int8.RECIPE.min_cosine


@pytest.mark.slow
def test_the_build_has_one_attention_node_a_layer_and_no_float_weight_matmul(
    cache: Path,
) -> None:
    import onnx

    ops = [node.op_type for node in onnx.load(str(_built(cache))).graph.node]
    assert ops.count("MultiHeadAttention") == 6
    assert ops.count("MatMulNBits") == 36
    assert "MatMul" not in ops and "Softmax" not in ops and "Transpose" not in ops


@pytest.mark.slow
def test_with_the_pinned_tools_the_build_is_the_reference_bytes(cache: Path) -> None:
    import onnx
    import onnxruntime

    if (onnxruntime.__version__, onnx.__version__) != ("1.32.0", "1.23.2"):
        pytest.skip("REFERENCE_SHA256 was built with onnxruntime 1.32.0 and onnx 1.23.2")
    manifest = requant.read_manifest(_built(cache))
    assert manifest is not None and manifest.reproduced


@pytest.mark.slow
def test_query_vectors_stay_within_float_rounding_of_activations_and_documents_do_not_move(
    cache: Path,
) -> None:
    base = BundledEmbedder(fast_queries=False)
    fast = create_embedder("bundled", cache_dir=cache)
    assert isinstance(fast, BundledEmbedder)
    assert fast.model_id == base.model_id  # they search the default model's vectors
    texts = _texts()
    reference = np.array(base.embed_documents(texts))
    alone = np.array([fast.embed_query(t) for t in texts])
    cosines = (alone * reference).sum(axis=1)
    assert cosines.min() > 0.999
    assert not np.array_equal(alone, reference)
    # a query's vector does not depend on the queries batched with it
    assert np.array_equal(np.array(fast.embed_queries(texts)), alone)
    # documents go through the model as before, bit for bit
    assert np.array_equal(np.array(fast.embed_documents(texts)), reference)
    # and each question's nearest sentence is the same
    assert (alone @ reference.T).argsort(axis=1)[:, -2].tolist() == (
        reference @ reference.T
    ).argsort(axis=1)[:, -2].tolist()


@pytest.mark.slow
def test_an_embedder_that_has_only_embedded_queries_counts_as_loaded(cache: Path) -> None:
    fast = BundledEmbedder(cache_dir=cache)
    assert not fast.loaded
    fast.embed_query("who directed the movie Jesse James")
    assert fast.loaded


@pytest.mark.slow
def test_a_search_embeds_its_relation_texts_as_queries(cache: Path) -> None:
    from kgsearch import Engine, ObjectIn, RelationshipIn
    from kgsearch.store.sqlite import SQLiteStore

    fast = BundledEmbedder(cache_dir=cache)
    engine = Engine(SQLiteStore(":memory:"), embedder=fast)
    a, b = engine.add_objects(
        [ObjectIn(type="Movie", key="Jesse James"), ObjectIn(type="Person", key="Henry King")]
    )
    engine.add_relationships([RelationshipIn(source=a.id, target=b.id, type="directed_by")])
    engine.embed_pending()
    documents: list[str] = []
    real = fast.embed_documents

    def noted(texts: Sequence[str]) -> list[np.ndarray]:
        documents.extend(texts)
        return real(texts)

    fast.embed_documents = noted  # type: ignore[method-assign]
    found = engine.search("who directed the movie Jesse James", include_debug=True)
    assert found.results and found.debug is not None
    assert "relationships:anchored" in found.debug["fusion_details"]["legs"]
    assert documents == []  # the question, its rest and "directed by" went to the query graph
