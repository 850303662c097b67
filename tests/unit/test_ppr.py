"""Tests for kgsearch.search.ppr against hand-solved graphs and networkx's oracle."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable

import networkx as nx
import pytest
from networkx.algorithms.link_analysis.pagerank_alg import _pagerank_python

from kgsearch.errors import InvalidRequest
from kgsearch.search.ppr import personalized_pagerank

Edge = tuple[str, str, float]


def converged(
    edges: Iterable[Edge], seeds: dict[str, float], alpha: float = 0.85
) -> dict[str, float]:
    return personalized_pagerank(edges, seeds, alpha=alpha, max_iter=1000, tol=1e-14)


def approx_dict(expected: dict[str, float], abs_: float = 1e-9) -> object:
    return pytest.approx(expected, abs=abs_)


def oracle(edges: list[Edge], seeds: dict[str, float], alpha: float = 0.85) -> dict[str, float]:
    graph = nx.Graph()
    for u, v, w in edges:
        previous = graph[u][v]["weight"] if graph.has_edge(u, v) else 0.0
        graph.add_edge(u, v, weight=previous + w)
    ranks: dict[str, float] = _pagerank_python(
        graph, alpha=alpha, personalization=seeds, max_iter=1000, tol=1e-14
    )
    return {node: score for node, score in ranks.items() if score > 1e-12}


def test_two_nodes_hand_solved() -> None:
    # x_a = (1-alpha) + alpha·x_b, x_b = alpha·x_a  →  x_a = 1/(1+alpha), x_b = alpha/(1+alpha)
    result = converged([("a", "b", 1.0)], {"a": 1.0}, alpha=0.85)
    assert result == approx_dict({"a": 1 / 1.85, "b": 0.85 / 1.85})


def test_path_hand_solved() -> None:
    # a—b—c, seed a, alpha=1/2: x_a = 7/12, x_b = 1/3, x_c = 1/12
    edges = [("a", "b", 1.0), ("b", "c", 1.0)]
    result = converged(edges, {"a": 1.0}, alpha=0.5)
    assert result == approx_dict({"a": 7 / 12, "b": 1 / 3, "c": 1 / 12})


def test_mass_reaches_three_hops_and_decays() -> None:
    edges = [("s", "a", 1.0), ("a", "b", 1.0), ("b", "c", 1.0)]
    result = personalized_pagerank(edges, {"s": 1.0})
    assert list(result) == ["s", "a", "b", "c"]
    assert result["a"] > result["b"] > result["c"] > 0


def test_node_linking_two_seeds_beats_node_near_one() -> None:
    edges = [("s1", "bridge", 1.0), ("s2", "bridge", 1.0), ("s1", "side", 1.0)]
    result = personalized_pagerank(edges, {"s1": 1.0, "s2": 1.0})
    assert result["bridge"] > result["side"]


def test_matches_networkx_oracle_on_weighted_graph() -> None:
    graph = nx.gnm_random_graph(60, 150, seed=3)
    edges: list[Edge] = [(f"n{u}", f"n{v}", 0.5 + (u * 7 + v * 3) % 5) for u, v in graph.edges()]
    edges += [("n1", "n1", 2.0), ("n2", "lonely", 0.0)]  # self-loop; dangling via weight 0
    seeds = {"n0": 3.0, "n5": 1.0, "lonely": 1.0, "not-in-graph": 4.0}
    expected = oracle(edges, {k: v for k, v in seeds.items() if k != "not-in-graph"})
    result = converged(edges, seeds)
    assert result == approx_dict(expected)
    assert math.fsum(result.values()) == pytest.approx(1.0)


def test_default_iteration_is_close_to_converged() -> None:
    edges: list[Edge] = [(f"n{u}", f"n{v}", 1.0) for u, v in nx.cycle_graph(30).edges()]
    result = personalized_pagerank(edges, {"n0": 1.0})
    assert result == approx_dict(oracle(edges, {"n0": 1.0}), abs_=1e-4)


def test_parallel_edges_add_weights_and_direction_is_ignored() -> None:
    parallel = converged([("a", "b", 1.0), ("b", "a", 2.0), ("b", "c", 1.0)], {"a": 1.0})
    merged = converged([("a", "b", 3.0), ("c", "b", 1.0)], {"a": 1.0})
    assert parallel == approx_dict(merged)


def test_components_without_a_seed_are_omitted() -> None:
    result = personalized_pagerank([("a", "b", 1.0), ("x", "y", 1.0)], {"a": 1.0})
    assert set(result) == {"a", "b"}


@pytest.mark.parametrize(
    ("edges", "seeds"),
    [
        ([("a", "b", 1.0)], {}),
        ([("a", "b", 1.0)], {"zzz": 1.0}),
        ([("a", "b", 1.0)], {"a": 0.0}),
        ([], {"a": 1.0}),
    ],
    ids=["no_seeds", "seeds_not_in_graph", "zero_seed_weight", "no_edges"],
)
def test_returns_empty_without_usable_seeds(edges: list[Edge], seeds: dict[str, float]) -> None:
    assert personalized_pagerank(edges, seeds) == {}


def test_accepts_a_generator_of_edges() -> None:
    result = converged((e for e in [("a", "b", 1.0)]), {"a": 1.0})
    assert result == approx_dict({"a": 1 / 1.85, "b": 0.85 / 1.85})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha": 1.0}, "alpha must be in"),
        ({"alpha": -0.1}, "alpha must be in"),
        ({"max_iter": 0}, "max_iter must be"),
        ({"tol": 0.0}, "tol must be"),
    ],
)
def test_rejects_bad_parameters(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        personalized_pagerank([("a", "b", 1.0)], {"a": 1.0}, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("weight", [-1.0, math.nan, math.inf])
def test_rejects_bad_edge_weights(weight: float) -> None:
    with pytest.raises(InvalidRequest, match="edge \\('a', 'b'\\) has weight"):
        personalized_pagerank([("a", "b", weight)], {"a": 1.0})


@pytest.mark.parametrize("weight", [-1.0, math.nan])
def test_rejects_bad_seed_weights(weight: float) -> None:
    with pytest.raises(InvalidRequest, match="seed 'a' has weight"):
        personalized_pagerank([("a", "b", 1.0)], {"a": weight})


def test_ten_thousand_edges_is_fast() -> None:
    graph = nx.gnm_random_graph(3000, 10_000, seed=1)
    edges: list[Edge] = [(str(u), str(v), 1.0) for u, v in graph.edges()]
    start = time.perf_counter()
    result = personalized_pagerank(edges, {"0": 1.0, "1": 1.0})
    assert time.perf_counter() - start < 1.0  # ~20 ms locally; generous for slow CI
    assert math.fsum(result.values()) == pytest.approx(1.0)
