"""Hierarchical Leiden detection: recovery, nesting, stable ids, weights and edge cases."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Mapping
from math import comb

import igraph
import pytest

from kgsearch.communities import (
    Community,
    Detection,
    community_id,
    detect_communities,
)
from kgsearch.errors import InvalidRequest, KgsearchError

Planted = Callable[..., tuple[list[tuple[str, str, float]], dict[str, int]]]


def adjusted_rand_index(truth: Mapping[str, object], found: Mapping[str, object]) -> float:
    """Hubert and Arabie's adjusted Rand index of two labellings of the same nodes."""
    assert truth.keys() == found.keys()
    n = len(truth)
    pairs = Counter((truth[node], found[node]) for node in truth)
    index = sum(comb(k, 2) for k in pairs.values())
    rows = sum(comb(k, 2) for k in Counter(truth.values()).values())
    cols = sum(comb(k, 2) for k in Counter(found.values()).values())
    expected = rows * cols / comb(n, 2)
    best = (rows + cols) / 2
    if best == expected:
        return 1.0
    return (index - expected) / (best - expected)


def _level0_labels(found: Detection) -> dict[str, str]:
    return {m: c.id for c in found.at_level(0) for m in c.members}


def _two_triangles() -> list[tuple[str, str, float]]:
    return [
        ("a", "b", 1.0),
        ("b", "c", 1.0),
        ("a", "c", 2.0),
        ("d", "e", 1.0),
        ("e", "f", 1.0),
        ("d", "f", 1.0),
        ("c", "d", 0.1),
    ]


def test_the_adjusted_rand_index_helper_agrees_with_igraph() -> None:
    rng = random.Random(3)
    truth = {f"n{i}": rng.randrange(4) for i in range(200)}
    noisy = {n: (b if rng.random() < 0.8 else rng.randrange(4)) for n, b in truth.items()}
    ours = adjusted_rand_index(truth, noisy)
    names = sorted(truth)
    theirs = igraph.compare_communities(
        [truth[n] for n in names], [noisy[n] for n in names], method="adjusted_rand"
    )
    assert ours == pytest.approx(theirs)
    assert 0.3 < ours < 0.9
    assert adjusted_rand_index(truth, truth) == 1.0


def test_a_planted_partition_is_recovered_at_level_0(planted: Planted) -> None:
    edges, truth = planted(8, 30, 0.3, 0.01, seed=7)
    found = detect_communities(edges, max_cluster_size=100)
    labels = _level0_labels(found)
    assert labels.keys() == truth.keys()
    assert adjusted_rand_index(truth, labels) >= 0.9
    assert found.levels == 1
    assert found.modularity > 0.5


def test_structure_carried_only_by_weights_is_recovered() -> None:
    names = [f"n{b}-{i}" for b in range(4) for i in range(12)]
    truth = {name: name.split("-")[0] for name in names}
    edges = [
        (a, b, 10.0 if truth[a] == truth[b] else 0.5)
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    ]
    found = detect_communities(edges, max_cluster_size=100)
    assert adjusted_rand_index(truth, _level0_labels(found)) == 1.0
    unweighted = detect_communities([(a, b, 1.0) for a, b, _ in edges], max_cluster_size=100)
    assert len(unweighted.at_level(0)) == 1


def test_levels_nest_and_split_communities_are_covered_by_their_children(planted: Planted) -> None:
    edges, truth = planted(6, 40, 0.25, 0.01, seed=11)
    found = detect_communities(edges, max_cluster_size=8)
    assert found.levels >= 2
    level0 = found.at_level(0)
    assert sorted(m for c in level0 for m in c.members) == sorted(truth)
    children: dict[str, list[Community]] = {}
    for community in found.communities:
        if community.parent is None:
            assert community.level == 0
            continue
        parent = found.get(community.parent)
        assert parent is not None
        assert community.level == parent.level + 1
        assert set(community.members) < set(parent.members)
        children.setdefault(parent.id, []).append(community)
    for parent_id, parts in children.items():
        parent = found.get(parent_id)
        assert parent is not None and parent.size > 8
        members = [m for part in parts for m in part.members]
        assert sorted(members) == list(parent.members)
    for level in range(found.levels):
        assert found.partition(level).keys() == truth.keys()


def test_members_are_sorted_and_size_and_id_follow_from_them(planted: Planted) -> None:
    edges, _ = planted(4, 20, 0.3, 0.02, seed=5)
    found = detect_communities(edges, max_cluster_size=6)
    for community in found.communities:
        assert list(community.members) == sorted(community.members)
        assert community.size == len(community.members)
        assert community.id == community_id(community.level, community.members)
        assert community.id.startswith(f"c{community.level}-")
    ranks = [c.rank for c in found.at_level(0)]
    assert ranks == sorted(ranks, reverse=True)


def test_ids_are_stable_across_runs_edge_order_and_direction(planted: Planted) -> None:
    edges, _ = planted(6, 25, 0.3, 0.02, seed=2)
    first = detect_communities(edges, max_cluster_size=7)
    again = detect_communities(edges, max_cluster_size=7)
    shuffled = edges[:]
    random.Random(9).shuffle(shuffled)
    flipped = [(b, a, w) for a, b, w in shuffled]
    reordered = detect_communities(iter(flipped), max_cluster_size=7)
    assert first.communities == again.communities == reordered.communities
    assert first.modularity == reordered.modularity


def test_rank_is_the_summed_weight_inside_the_community() -> None:
    found = detect_communities(_two_triangles())
    ranks = {c.members: c.rank for c in found.at_level(0)}
    assert ranks == {("a", "b", "c"): 4.0, ("d", "e", "f"): 3.0}


def test_multi_edges_in_either_direction_are_summed() -> None:
    found = detect_communities([*_two_triangles(), ("b", "a", 2.5), ("a", "b", 0.5)])
    ranks = {c.members: c.rank for c in found.at_level(0)}
    assert ranks[("a", "b", "c")] == 7.0
    assert found.edges == 7


def test_self_loops_are_dropped_and_counted() -> None:
    found = detect_communities([*_two_triangles(), ("a", "a", 5.0), ("z", "z", 1.0)])
    assert found.dropped == {"self_loop": 2}
    assert found.warnings == (
        "2 self-loop edge(s) dropped: a node's edge to itself says nothing about communities",
    )
    assert found.isolated == ("z",)
    assert {c.members for c in found.at_level(0)} == {("a", "b", "c"), ("d", "e", "f")}


@pytest.mark.parametrize("weight", [0, 0.0, -1.0, -0.5])
def test_zero_or_negative_weights_are_dropped_with_a_warning(weight: float) -> None:
    found = detect_communities([*_two_triangles(), ("a", "f", weight), ("x", "y", weight)])
    assert found.dropped == {"non_positive_weight": 2}
    assert "2 edge(s) with a zero or negative weight dropped" in found.warnings[0]
    assert found.isolated == ("x", "y")
    assert found.edges == 7


@pytest.mark.parametrize("weight", [math.nan, math.inf, -math.inf])
def test_non_finite_weights_are_dropped_with_a_warning(weight: float) -> None:
    found = detect_communities([*_two_triangles(), ("a", "f", weight)])
    assert found.dropped == {"non_finite_weight": 1}
    assert found.warnings == ("1 edge(s) with a NaN or infinite weight dropped",)


def test_an_empty_graph_gives_no_community_and_says_why() -> None:
    found = detect_communities([])
    assert found.communities == ()
    assert found.levels == 0
    assert found.modularity == 0.0
    assert found.reason == "the graph is empty: no edges and no nodes"
    assert found.partition(0) == {}


def test_a_single_node_is_isolated() -> None:
    found = detect_communities([], nodes=["only"])
    assert found.communities == ()
    assert found.isolated == ("only",)
    assert found.reason is not None and "1 node(s) and no edges" in found.reason


def test_only_isolated_nodes_give_no_community() -> None:
    found = detect_communities([], nodes=["c", "a", "b", "a"])
    assert found.communities == ()
    assert found.isolated == ("a", "b", "c")
    assert found.reason is not None and "every node is isolated" in found.reason


def test_edges_that_are_all_dropped_say_so() -> None:
    found = detect_communities([("a", "a", 1.0), ("a", "b", -2.0)])
    assert found.communities == ()
    assert found.isolated == ("a", "b")
    assert found.reason is not None
    assert "none of the 2 edge(s)" in found.reason
    assert "self-loop" in found.reason and "zero or negative" in found.reason


def test_a_disconnected_graph_never_joins_its_components() -> None:
    clique = [(f"{p}{i}", f"{p}{j}", 1.0) for p in "xy" for i in range(5) for j in range(i + 1, 5)]
    found = detect_communities([*clique, ("lone1", "lone2", 1.0)], nodes=["hermit", "x0"])
    level0 = {c.members for c in found.at_level(0)}
    assert level0 == {
        tuple(f"x{i}" for i in range(5)),
        tuple(f"y{i}" for i in range(5)),
        ("lone1", "lone2"),
    }
    assert found.isolated == ("hermit",)
    assert found.nodes == 12


def test_a_higher_resolution_gives_smaller_communities(planted: Planted) -> None:
    edges, _ = planted(4, 30, 0.3, 0.02, seed=4)
    coarse = detect_communities(edges, max_cluster_size=1000)
    fine = detect_communities(edges, max_cluster_size=1000, resolution=8.0)
    assert len(fine.at_level(0)) > len(coarse.at_level(0))
    assert fine.resolution == 8.0


def test_a_community_leiden_cannot_split_stays_a_leaf() -> None:
    clique = [(f"k{i}", f"k{j}", 1.0) for i in range(12) for j in range(i + 1, 12)]
    found = detect_communities(clique, max_cluster_size=3)
    assert [c.size for c in found.communities] == [12]
    assert found.levels == 1


@pytest.mark.parametrize(
    ("edges", "message"),
    [
        ([("a", "b")], "edge 0: expected a (source_id, target_id, weight) triple"),
        (["abc"], "edge 0: expected a (source_id, target_id, weight) triple"),
        ([("a", "b", 1.0), ("a", "c", "heavy")], "edge 1: the weight must be a number"),
        ([("a", "b", None)], "edge 0: the weight must be a number"),
        ([("a", "b", True)], "edge 0: the weight must be a number"),
        ([(None, "b", 1.0)], "edge 0: node ids must be non-empty strings"),
        ([("a", "", 1.0)], "edge 0: node ids must be non-empty strings"),
        ([(1, 2, 1.0)], "edge 0: node ids must be non-empty strings"),
    ],
)
def test_malformed_edges_raise_a_clear_error(edges: list[object], message: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        detect_communities(edges)  # type: ignore[arg-type]
    assert message in caught.value.message


def test_a_malformed_node_raises_a_clear_error() -> None:
    with pytest.raises(InvalidRequest, match="node 1: node ids must be non-empty strings"):
        detect_communities([], nodes=["a", 3])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_cluster_size": 0}, "max_cluster_size must be at least 1"),
        ({"max_cluster_size": 2.5}, "max_cluster_size must be an integer"),
        ({"seed": -1}, "seed must be an integer from 0 to 2**32 - 1"),
        ({"seed": 2**32}, "seed must be an integer from 0 to 2**32 - 1"),
        ({"resolution": 0}, "resolution must be a positive number"),
        ({"resolution": math.nan}, "resolution must be a positive number"),
    ],
)
def test_out_of_range_parameters_raise_a_clear_error(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(KgsearchError) as caught:
        detect_communities(_two_triangles(), **options)  # type: ignore[arg-type]
    assert isinstance(caught.value, InvalidRequest)
    assert message in caught.value.message


def test_the_largest_seed_is_accepted() -> None:
    found = detect_communities(_two_triangles(), seed=2**32 - 1)
    assert found.seed == 2**32 - 1
    assert len(found.at_level(0)) == 2
