"""Which communities need a new report after an edit: matching by member overlap."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kgsearch.communities import (
    Community,
    community_id,
    compare_communities,
    detect_communities,
    redetect_communities,
)
from kgsearch.errors import InvalidRequest

Planted = Callable[..., tuple[list[tuple[str, str, float]], dict[str, int]]]


def _community(level: int, members: list[str], parent: str | None = None) -> Community:
    ordered = tuple(sorted(members))
    return Community(
        id=community_id(level, ordered),
        level=level,
        parent=parent,
        members=ordered,
        size=len(ordered),
        rank=float(len(ordered)),
    )


def _names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i:02d}" for i in range(n)]


def test_the_same_communities_are_all_kept_under_their_own_ids(planted: Planted) -> None:
    edges, _ = planted(5, 20, 0.3, 0.02, seed=1)
    found = detect_communities(edges, max_cluster_size=6)
    changes = compare_communities(found.communities, found.communities)
    assert changes.kept == {c.id: c.id for c in found.communities}
    assert changes.changed == ()
    assert changes.removed == ()
    assert set(changes.similarity.values()) == {1.0}


def test_a_small_membership_change_keeps_the_previous_report() -> None:
    big = _names("a", 30)
    before = [_community(0, big), _community(0, _names("b", 10))]
    after = [_community(0, [*big, "new"]), _community(0, _names("b", 10))]
    changes = compare_communities(before, after)
    assert changes.kept == {after[0].id: before[0].id, after[1].id: before[1].id}
    assert after[0].id != before[0].id
    assert changes.similarity[after[0].id] == pytest.approx(30 / 31)
    assert changes.changed == ()


def test_a_change_past_the_threshold_needs_a_new_report() -> None:
    before = [_community(0, _names("a", 10))]
    after = [_community(0, [*_names("a", 10), "x", "y"])]
    changes = compare_communities(before, after)
    assert changes.changed == (after[0].id,)
    assert changes.kept == {}
    assert changes.removed == (before[0].id,)
    assert changes.similarity[after[0].id] == pytest.approx(10 / 12)
    looser = compare_communities(before, after, min_jaccard=0.8)
    assert looser.kept == {after[0].id: before[0].id}


def test_a_split_community_keeps_at_most_one_report() -> None:
    members = _names("a", 20)
    before = [_community(0, members)]
    after = [_community(0, members[:19]), _community(0, members[19:])]
    changes = compare_communities(before, after)
    assert changes.kept == {after[0].id: before[0].id}
    assert changes.changed == (after[1].id,)
    assert changes.removed == ()


def test_communities_are_matched_only_within_their_level() -> None:
    members = _names("a", 12)
    before = [_community(1, members)]
    after = [_community(0, members)]
    changes = compare_communities(before, after)
    assert changes.kept == {}
    assert changes.changed == (after[0].id,)
    assert changes.removed == (before[0].id,)
    assert changes.similarity == {after[0].id: 0.0}


@pytest.mark.parametrize("value", [0.5, 0.0, 1.01, True, "0.9"])
def test_the_threshold_must_make_matches_one_to_one(value: object) -> None:
    with pytest.raises(InvalidRequest, match=r"min_jaccard must be"):
        compare_communities([], [], min_jaccard=value)  # type: ignore[arg-type]


def test_redetection_after_an_edit_flags_only_the_touched_community(planted: Planted) -> None:
    edges, _ = planted(4, 30, 0.35, 0.005, seed=8)
    previous = detect_communities(edges, max_cluster_size=1000, seed=5)
    assert len(previous.at_level(0)) == 4
    target = previous.at_level(0)[0]
    grown = [*edges, *((f"extra{i}", target.members[i], 3.0) for i in range(2))]
    current, changes = redetect_communities(previous, grown)
    assert current.seed == 5 and current.max_cluster_size == 1000
    untouched = {c.id for c in previous.at_level(0)} - {target.id}
    grown_target = next(c for c in current.at_level(0) if "extra0" in c.members)
    assert changes.kept[grown_target.id] == target.id
    assert {c.id for c in current.at_level(0)} - {grown_target.id} == untouched
    assert changes.changed == ()

    rewired = [e for e in grown if e[0] not in target.members and e[1] not in target.members]
    rewired += [(target.members[0], target.members[1], 1.0)]
    _, after_removal = redetect_communities(current, rewired, min_jaccard=0.95)
    assert grown_target.id in after_removal.removed
    assert len(after_removal.changed) == 1
