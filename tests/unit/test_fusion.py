"""Table-driven tests for kgsearch.search.fusion with hand-computed scores."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction as F

import pytest

from kgsearch.errors import InvalidRequest
from kgsearch.model import LegHit
from kgsearch.search.fusion import (
    RELEVANCE_FLOOR,
    Fused,
    below_floor,
    relevance_floor,
    rrf,
    scaled,
    weighted,
)

Lists = Mapping[str, Sequence[tuple[str, float]]]


def scores(fused: list[Fused]) -> list[tuple[str, float]]:
    return [(f.key, f.score) for f in fused]


def approx(expected: list[tuple[str, F | float]]) -> list[tuple[str, object]]:
    return [(key, pytest.approx(float(value), abs=1e-15)) for key, value in expected]


RRF_CASES: list[tuple[str, Lists, dict[str, object], list[tuple[str, F | float]]]] = [
    ("empty mapping", {}, {}, []),
    ("only empty legs", {"vector": [], "bm25": []}, {}, []),
    (
        "one list keeps its order",
        {"vector": [("a", 0.9), ("b", 0.8), ("c", 0.1)]},
        {},
        [("a", F(1, 61)), ("b", F(1, 62)), ("c", F(1, 63))],
    ),
    (
        "two lists, k=60",
        {"vector": [("a", 0.9), ("b", 0.8), ("c", 0.7)], "bm25": [("b", 12.0), ("d", 3.0)]},
        {},
        [("b", F(1, 62) + F(1, 61)), ("a", F(1, 61)), ("d", F(1, 62)), ("c", F(1, 63))],
    ),
    (
        "three lists",
        {
            "vector": [("a", 0.9), ("b", 0.5)],
            "bm25": [("b", 7.0), ("c", 2.0)],
            "graph": [("c", 1.0), ("a", 1.0), ("b", 1.0)],
        },
        {},
        [
            ("b", F(1, 62) + F(1, 61) + F(1, 63)),
            ("a", F(1, 61) + F(1, 62)),
            ("c", F(1, 62) + F(1, 61)),
        ],
    ),
    (
        "k=1 as Graphiti used it",
        {"x": [("a", 1.0), ("b", 1.0)], "y": [("b", 1.0)]},
        {"k": 1},
        [("b", F(1, 3) + F(1, 2)), ("a", F(1, 2))],
    ),
    (
        "weights scale each leg",
        {"vector": [("a", 0.9), ("b", 0.8)], "bm25": [("b", 5.0), ("a", 4.0)]},
        {"weights": {"vector": 2.0}},
        [("a", 2 * F(1, 61) + F(1, 62)), ("b", 2 * F(1, 62) + F(1, 61))],
    ),
    (
        "zero weight leg keeps its keys at score 0",
        {"vector": [("a", 0.9)], "bm25": [("b", 5.0)]},
        {"weights": {"bm25": 0.0, "unused": 9.0}},
        [("a", F(1, 61)), ("b", 0.0)],
    ),
    (
        "duplicate key in one list counts once and does not take a rank",
        {"vector": [("a", 0.9), ("a", 0.8), ("b", 0.7)]},
        {},
        [("a", F(1, 61)), ("b", F(1, 62))],
    ),
]


@pytest.mark.parametrize(
    ("lists", "kwargs", "expected"),
    [case[1:] for case in RRF_CASES],
    ids=[case[0] for case in RRF_CASES],
)
def test_rrf_scores(
    lists: Lists, kwargs: dict[str, object], expected: list[tuple[str, F | float]]
) -> None:
    assert scores(rrf(lists, **kwargs)) == approx(expected)  # type: ignore[arg-type]


def test_rrf_records_found_by_per_leg_in_leg_order() -> None:
    fused = rrf({"vector": [("a", 0.9), ("b", 0.8)], "bm25": [("b", 12.0)]})
    assert fused == [
        Fused(
            key="b",
            score=pytest.approx(1 / 62 + 1 / 61),  # type: ignore[arg-type]
            found_by=(
                LegHit(leg="vector", rank=2, score=0.8),
                LegHit(leg="bm25", rank=1, score=12.0),
            ),
        ),
        Fused(key="a", score=1 / 61, found_by=(LegHit(leg="vector", rank=1, score=0.9),)),
    ]


def test_rrf_duplicate_keeps_first_occurrence_score() -> None:
    fused = rrf({"v": [("a", 0.9), ("b", 0.5), ("a", 0.1)]})
    assert [f.found_by for f in fused] == [
        (LegHit(leg="v", rank=1, score=0.9),),
        (LegHit(leg="v", rank=2, score=0.5),),
    ]


def test_rrf_equal_scores_break_by_key() -> None:
    fused = rrf({"x": [("b", 1.0), ("a", 1.0)], "y": [("a", 1.0), ("b", 1.0)]})
    assert [f.key for f in fused] == ["a", "b"]
    assert fused[0].score == fused[1].score


def test_rrf_equal_scores_break_by_best_rank_before_key() -> None:
    # k=1: "z" is rank 1 in y (weight 2/3 → 1/3); "a" is rank 2 in x (→ 1/3).
    fused = rrf({"x": [("m", 1.0), ("a", 1.0)], "y": [("z", 1.0)]}, k=1, weights={"y": 2 / 3})
    assert [(f.key, f.best_rank) for f in fused] == [("m", 1), ("z", 1), ("a", 2)]
    assert fused[1].score == fused[2].score == 1 / 3


def test_rrf_is_independent_of_key_insertion_order() -> None:
    a = rrf({"x": [("p", 1.0)], "y": [("q", 1.0)]})
    b = rrf({"y": [("q", 1.0)], "x": [("p", 1.0)]})
    assert [f.key for f in a] == [f.key for f in b] == ["p", "q"]


@pytest.mark.parametrize("k", [0, -5])
def test_rrf_rejects_k_below_one(k: int) -> None:
    with pytest.raises(InvalidRequest, match="k must be an integer >= 1"):
        rrf({"v": [("a", 1.0)]}, k=k)


@pytest.mark.parametrize("weight", [-1.0, math.nan, math.inf])
def test_rrf_rejects_bad_weights(weight: float) -> None:
    with pytest.raises(InvalidRequest, match="weight for leg 'v'"):
        rrf({"v": [("a", 1.0)]}, weights={"v": weight})


WEIGHTED_CASES: list[tuple[str, Lists, dict[str, object], list[tuple[str, F | float]]]] = [
    ("empty mapping", {}, {}, []),
    ("empty leg", {"vector": []}, {}, []),
    (
        "one list min-max",
        {"vector": [("a", 0.9), ("b", 0.6), ("c", 0.5)]},
        {},
        [("a", 1.0), ("b", F(1, 4)), ("c", 0.0)],
    ),
    (
        "two lists with weights; missing contributes 0",
        {"bm25": [("a", 10.0), ("b", 5.0), ("c", 0.0)], "vector": [("b", 0.9), ("d", 0.5)]},
        {"weights": {"vector": 2.0}},
        # a: 1; b: 0.5 + 2·1; c: 0; d: 2·0. d (rank 2) beats c (rank 3) on the tie.
        [("b", 2.5), ("a", 1.0), ("d", 0.0), ("c", 0.0)],
    ),
    (
        "three lists",
        {
            "vector": [("a", 0.8), ("b", 0.4), ("c", 0.0)],
            "bm25": [("c", 9.0), ("a", 3.0)],
            "graph": [("b", 2.0), ("a", 1.0), ("c", 0.0)],
        },
        {},
        # vector: a 1, b .5, c 0; bm25: c 1, a 0; graph: b 1, a .5, c 0
        # a and b tie at 1.5 and both have a rank 1 somewhere, so the key decides.
        [("a", 1.5), ("b", 1.5), ("c", 1.0)],
    ),
    (
        "all-equal leg maps to 1.0, not NaN",
        {"graph": [("a", 3.0), ("b", 3.0)], "vector": [("b", 0.7)]},
        {},
        [("b", 2.0), ("a", 1.0)],
    ),
    ("single-item leg maps to 1.0", {"graph": [("a", 0.0)]}, {}, [("a", 1.0)]),
    (
        "no normalization sums raw scores",
        {"x": [("a", 0.9), ("b", 0.2)], "y": [("b", 0.8)]},
        {"normalization": "none", "weights": {"y": 0.5}},
        [("a", 0.9), ("b", F(2, 10) + F(4, 10))],
    ),
    (
        "negative raw scores normalise too",
        {"x": [("a", -1.0), ("b", -3.0)]},
        {},
        [("a", 1.0), ("b", 0.0)],
    ),
]


@pytest.mark.parametrize(
    ("lists", "kwargs", "expected"),
    [case[1:] for case in WEIGHTED_CASES],
    ids=[case[0] for case in WEIGHTED_CASES],
)
def test_weighted_scores(
    lists: Lists, kwargs: dict[str, object], expected: list[tuple[str, F | float]]
) -> None:
    assert scores(weighted(lists, **kwargs)) == approx(expected)  # type: ignore[arg-type]


def test_weighted_tie_on_score_and_rank_breaks_by_key() -> None:
    fused = weighted({"x": [("b", 1.0)], "y": [("a", 5.0)]})
    assert fused == [
        Fused(key="a", score=1.0, found_by=(LegHit(leg="y", rank=1, score=5.0),)),
        Fused(key="b", score=1.0, found_by=(LegHit(leg="x", rank=1, score=1.0),)),
    ]


def test_weighted_keeps_raw_scores_in_found_by() -> None:
    fused = weighted({"bm25": [("a", 10.0), ("b", 5.0)]})
    assert [f.found_by for f in fused] == [
        (LegHit(leg="bm25", rank=1, score=10.0),),
        (LegHit(leg="bm25", rank=2, score=5.0),),
    ]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_weighted_rejects_non_finite_scores(bad: float) -> None:
    with pytest.raises(InvalidRequest, match="non-finite score"):
        weighted({"v": [("a", 1.0), ("b", bad)]})


def test_weighted_rejects_unknown_normalization() -> None:
    with pytest.raises(InvalidRequest, match="unknown normalization"):
        weighted({"v": [("a", 1.0)]}, normalization="zscore")  # type: ignore[arg-type]


def test_weighted_never_returns_nan() -> None:
    fused = weighted({"a": [("x", 0.0)], "b": [("x", 2.0), ("y", 2.0)], "c": []})
    assert all(math.isfinite(f.score) for f in fused)
    assert scores(fused) == [("x", 2.0), ("y", 1.0)]


# --- relevance floor over tiny lists ----------------------------------------------------


def test_relevance_floor_drops_similarity_hits_far_below_the_best() -> None:
    lists: Lists = {
        "relationships:vector": [("r1", 0.8), ("r2", 0.5)],
        "chunks:vector": [("c1", 0.05)],  # the only chunk: rank 1 of a near-empty leg
        "chunks:bm25": [],
    }

    kept = relevance_floor(lists)

    assert kept["relationships:vector"] == [("r1", 0.8), ("r2", 0.5)]
    assert kept["chunks:vector"] == []
    assert [f.key for f in rrf(kept)] == ["r1", "r2"]
    # without the floor the unrelated chunk ties for first place
    assert [f.key for f in rrf(lists)][:2] == ["c1", "r1"]


def test_relevance_floor_keeps_lexical_and_graph_legs_and_the_hits_they_corroborate() -> None:
    lists: Lists = {
        "objects:vector:hinted": [("o1", 0.9), ("o2", 0.1), ("o4", 0.05)],
        "objects:bm25": [("o2", 3.2)],
        "graph:ppr": [("o3", 0.001)],
    }

    kept = relevance_floor(lists)

    # o2 is weak by similarity but BM25 found it too: it keeps its similarity credit;
    # o4, found by nothing else, goes
    assert kept["objects:vector:hinted"] == [("o1", 0.9), ("o2", 0.1)]
    assert kept["objects:bm25"] == [("o2", 3.2)]
    assert kept["graph:ppr"] == [("o3", 0.001)]
    fused = rrf(kept)
    assert {f.key for f in fused} == {"o1", "o2", "o3"}
    assert [h.leg for h in next(f for f in fused if f.key == "o2").found_by] == [
        "objects:vector:hinted",
        "objects:bm25",
    ]


@pytest.mark.parametrize(
    ("ratio", "kept"),
    [(0.0, ["a", "b", "c"]), (RELEVANCE_FLOOR, ["a", "b"]), (0.9, ["a"])],
)
def test_relevance_floor_is_a_share_of_the_best_similarity(ratio: float, kept: list[str]) -> None:
    lists: Lists = {"chunks:vector": [("a", 0.6), ("b", 0.3), ("c", 0.1)]}

    assert [k for k, _ in relevance_floor(lists, ratio=ratio)["chunks:vector"]] == kept


def test_relevance_floor_with_no_positive_similarity_keeps_everything() -> None:
    lists: Lists = {"chunks:vector": [("a", 0.0), ("b", -0.2)], "chunks:bm25": [("a", 1.0)]}

    assert relevance_floor(lists) == lists


def test_weak_hits_are_left_out_of_rrf_without_moving_the_others_up() -> None:
    lists: Lists = {
        "chunks:vector": [("a", 0.8), ("w", 0.1), ("b", 0.7)],
        "chunks:bm25": [("b", 5.0)],
    }

    weak = below_floor(lists)
    fused = {f.key: f for f in rrf(lists, left_out=weak)}

    assert weak == {"chunks:vector": frozenset({"w"})}
    assert "w" not in fused
    # b keeps rank 3 in the vector leg (not 2, as dropping w from the list would give)
    assert [(h.leg, h.rank) for h in fused["b"].found_by] == [
        ("chunks:vector", 3),
        ("chunks:bm25", 1),
    ]
    assert fused["b"].score == pytest.approx(1 / 63 + 1 / 61)


def test_scaled_multiplies_a_legs_weight_for_one_query() -> None:
    weights = {"a": 4.0, "b": 1.0}
    assert scaled(weights, {"a": 8.0}) == {"a": 32.0, "b": 1.0}
    assert scaled(weights, {"c": 2.0}) == {"a": 4.0, "b": 1.0, "c": 2.0}  # default weight 1.0
    assert scaled(weights, {}) == weights
    assert weights == {"a": 4.0, "b": 1.0}  # the defaults are left alone
    lists = {"a": [("x", 1.0), ("z", 0.5)], "b": [("y", 1.0)], "c": [("y", 1.0)]}
    # rank 1 in two legs beats rank 1 in one leg, until that leg is sure of itself
    assert [f.key for f in rrf(lists)] == ["y", "x", "z"]
    assert [f.key for f in rrf(lists, weights=scaled({}, {"a": 8.0}))] == ["x", "z", "y"]


@pytest.mark.parametrize("multiplier", [-1.0, math.nan, math.inf])
def test_scaled_rejects_bad_multipliers(multiplier: float) -> None:
    with pytest.raises(InvalidRequest, match="multiplier for leg 'a'"):
        scaled({"a": 1.0}, {"a": multiplier})


def test_rrf_scores_are_the_correctly_rounded_sums_and_ties_go_by_rank_then_key() -> None:
    """Random lists (repeats, left-out keys, up to five legs): each score is the exact
    sum of its terms rounded once (math.fsum, whatever the number of terms), the order
    is score, then best rank, then key, and each key's places are in leg order."""
    import random

    rng = random.Random(7)
    for _ in range(200):
        legs = [f"leg{i}" for i in range(rng.randint(1, 5))]
        lists = {
            leg: [(f"k{rng.randint(0, 30)}", rng.random()) for _ in range(rng.randint(0, 40))]
            for leg in legs
        }
        weights = {leg: rng.choice([0.0, 0.5, 1.0, 1.7, 3.0]) for leg in legs}
        left_out = {leg: {f"k{rng.randint(0, 30)}"} for leg in legs if rng.random() < 0.5}
        k = rng.choice([1, 10, 60])
        places: dict[str, list[tuple[str, int, float]]] = {}
        for leg, ranked in lists.items():
            first = list(dict.fromkeys(key for key, _ in ranked))
            raw: dict[str, float] = {}
            for key, score in ranked:
                raw.setdefault(key, score)
            for rank, key in enumerate(first, 1):
                if key not in left_out.get(leg, ()):
                    places.setdefault(key, []).append((leg, rank, raw[key]))
        expected = sorted(
            (
                -math.fsum(weights[leg] / (k + rank) for leg, rank, _ in found),
                min(rank for _, rank, _ in found),
                key,
            )
            for key, found in places.items()
        )
        fused = rrf(lists, k=k, weights=weights, left_out=left_out)
        assert [(f.key, f.score) for f in fused] == [(key, -s) for s, _, key in expected]
        for f in fused:
            assert [(h.leg, h.rank, h.score) for h in f.found_by] == places[f.key]
