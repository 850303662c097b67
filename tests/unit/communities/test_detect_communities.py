"""Hierarchical Leiden: planted communities are recovered, levels nest, ids are stable,
and every awkward graph gets an answer, never a traceback."""

from __future__ import annotations

import random

import igraph as ig
import pytest

from kgsearch.communities.detect import Community, changed, detect


def planted(
    groups: int = 5, size: int = 30, p_in: float = 0.3, p_out: float = 0.01, seed: int = 7
) -> tuple[list[tuple[str, str, float]], dict[str, int]]:
    rng = random.Random(seed)
    truth = {f"n{g}-{i}": g for g in range(groups) for i in range(size)}
    names = sorted(truth)
    edges = [
        (a, b, 1.0)
        for i, a in enumerate(names)
        for b in names[i + 1 :]
        if rng.random() < (p_in if truth[a] == truth[b] else p_out)
    ]
    return edges, truth


def ari(truth: dict[str, int], found: list[Community]) -> float:
    label = {m: i for i, c in enumerate(found) for m in c.members}
    names = sorted(truth)
    return float(
        ig.compare_communities(
            [truth[n] for n in names], [label[n] for n in names], method="adjusted_rand"
        )
    )


def test_a_planted_partition_is_recovered() -> None:
    edges, truth = planted()

    found = detect(edges, max_cluster_size=1000)

    assert ari(truth, found.level(0)) >= 0.9
    assert found.modularity > 0.5 and found.levels == 1


def test_levels_nest_and_big_communities_split() -> None:
    edges, _ = planted(groups=4, size=40)

    found = detect(edges, max_cluster_size=12, max_levels=3)

    assert found.levels >= 2
    by_id = {c.id: c for c in found.communities}
    for c in found.communities:
        if c.parent is not None:
            parent = by_id[c.parent]
            assert parent.level == c.level - 1 and set(c.members) <= set(parent.members)
    for level in range(found.levels):
        members = [m for c in found.level(level) for m in c.members]
        assert len(members) == len(set(members))  # a partition of what it covers


def test_ids_are_stable_across_runs_and_edge_orders() -> None:
    edges, _ = planted()
    shuffled = list(edges)
    random.Random(3).shuffle(shuffled)
    flipped = [(b, a, w) for a, b, w in shuffled]

    first, second = detect(edges), detect(flipped)

    assert [c.id for c in first.communities] == [c.id for c in second.communities]
    assert first.communities == second.communities


def test_edge_cases_answer_without_errors() -> None:
    empty = detect([])
    assert empty.communities == [] and "no objects" in empty.note
    single = detect([], nodes=["a"])
    assert [c.members for c in single.communities] == [("a",)]
    isolated = detect([], nodes=["a", "b", "c"])
    assert sorted(c.members for c in isolated.level(0)) == [("a",), ("b",), ("c",)]
    two = detect([("a", "b", 1.0), ("c", "d", 1.0)])
    assert sorted(c.members for c in two.level(0)) == [("a", "b"), ("c", "d")]
    odd = detect(
        [
            ("a", "b", 0.0),
            ("a", "c", -2.0),
            ("a", "a", 1.0),
            ("b", "c", float("nan")),
            ("b", "c", float("inf")),
            ("c", "d", 2.0),
            ("d", "c", 1.0),
        ],
        nodes=["a", "b"],
    )
    assert odd.dropped_edges == 5
    (cd,) = [c for c in odd.level(0) if "c" in c.members]
    assert cd.members == ("c", "d") and cd.rank == 3.0  # parallel edges summed
    with pytest.raises(ValueError, match="at least 1"):
        detect([], max_cluster_size=0)


def test_changed_names_only_the_communities_that_moved() -> None:
    edges, _ = planted()
    before = detect(edges, max_cluster_size=1000).communities
    # one more node joins one community; the others do not change
    target = before[0].members[0]
    after = detect([*edges, (target, "newcomer", 1.0)], max_cluster_size=1000).communities

    assert changed(before, after) == ([], [])  # 30 of 31 members: under the threshold
    fresh, stale = changed(before, after, threshold=0.99)

    assert len(fresh) == 1 and len(stale) == 1
    (new,) = [c for c in after if c.id in fresh]
    assert "newcomer" in new.members
    assert changed(before, before) == ([], [])
