"""Which communities need a new report after the graph changed: pure, no store.

A community's id is a hash of its exact members, so adding one relationship can give a
large community a new id although it is, for a reader, the same community. After
re-running :func:`~kgsearch.communities.detect.detect_communities` on the changed
edges, :func:`compare_communities` matches each new community with the previous
community of the same level that it overlaps most; when their Jaccard index
(``|A ∩ B| / |A ∪ B|``) is at least ``min_jaccard`` (0.9 by default) the previous
report still describes it and is ``kept``, otherwise the community is ``changed`` and
needs a new report. Previous communities that no new one matched are ``removed``.

With ``min_jaccard`` above 0.5 the matching is one-to-one: two disjoint parts of a
level cannot both share more than half of their union with the same set. Only
membership is compared; a change of the members' own descriptions is the report
layer's to notice (a digest of what the report was written from).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kgsearch.communities.detect import Community, Detection, detect_communities
from kgsearch.errors import InvalidRequest

__all__ = ["CommunityChanges", "compare_communities", "redetect_communities"]


@dataclass(frozen=True, slots=True)
class CommunityChanges:
    """How a new detection relates to the previous one.

    Attributes:
        kept: New community id → the previous community id whose report still fits
            (same level, Jaccard ≥ ``min_jaccard``). Equal ids when nothing changed.
        changed: New community ids that need a new report, sorted.
        removed: Previous community ids that no new community matched, sorted.
        similarity: New community id → Jaccard index with its best previous match
            (0.0 when it shares no member with any previous community of its level).
    """

    kept: dict[str, str]
    changed: tuple[str, ...]
    removed: tuple[str, ...]
    similarity: dict[str, float]


def compare_communities(
    previous: Iterable[Community],
    current: Iterable[Community],
    *,
    min_jaccard: float = 0.9,
) -> CommunityChanges:
    """Match new communities to previous ones level by level, by member overlap.

    Args:
        previous: The communities the current reports were written for.
        current: The communities of the new detection.
        min_jaccard: A match at least this similar keeps the previous report; in (0.5, 1].

    Returns:
        Which new communities keep a previous report, which need a new one, and which
        previous communities are gone.

    Raises:
        InvalidRequest: ``min_jaccard`` is not in (0.5, 1].
    """
    if isinstance(min_jaccard, bool) or not isinstance(min_jaccard, int | float):
        raise InvalidRequest(f"min_jaccard must be a number in (0.5, 1], got {min_jaccard!r}")
    if not 0.5 < min_jaccard <= 1.0:
        raise InvalidRequest(
            f"min_jaccard must be in (0.5, 1] so that a match is one-to-one, got {min_jaccard}"
        )
    before = list(previous)
    where: dict[tuple[int, str], int] = {}
    for position, community in enumerate(before):
        for member in community.members:
            where[(community.level, member)] = position
    kept: dict[str, str] = {}
    changed: list[str] = []
    similarity: dict[str, float] = {}
    for community in current:
        overlaps: dict[int, int] = {}
        for member in community.members:
            found = where.get((community.level, member))
            if found is not None:
                overlaps[found] = overlaps.get(found, 0) + 1
        best, score = _best_match(community, before, overlaps)
        similarity[community.id] = score
        if best is not None and score >= min_jaccard:
            kept[community.id] = best.id
        else:
            changed.append(community.id)
    matched = set(kept.values())
    removed = sorted(c.id for c in before if c.id not in matched)
    return CommunityChanges(
        kept=kept, changed=tuple(sorted(changed)), removed=tuple(removed), similarity=similarity
    )


def _best_match(
    community: Community, before: list[Community], overlaps: dict[int, int]
) -> tuple[Community | None, float]:
    best: Community | None = None
    score = 0.0
    for position, shared in sorted(overlaps.items()):
        other = before[position]
        jaccard = shared / (community.size + other.size - shared)
        if jaccard > score:
            best, score = other, jaccard
    return best, score


def redetect_communities(
    previous: Detection,
    edges: Iterable[tuple[str, str, float]],
    *,
    nodes: Iterable[str] | None = None,
    min_jaccard: float = 0.9,
) -> tuple[Detection, CommunityChanges]:
    """Detect again on the changed edges with the previous parameters, and compare.

    Args:
        previous: The detection the current reports were written for.
        edges: The whole changed edge set, as for ``detect_communities``.
        nodes: Every node id, as for ``detect_communities``.
        min_jaccard: A match at least this similar keeps the previous report.

    Returns:
        The new detection and how its communities relate to the previous ones.

    Raises:
        InvalidRequest: Bad edges or nodes, or ``min_jaccard`` out of range.
    """
    current = detect_communities(
        edges,
        nodes=nodes,
        max_cluster_size=previous.max_cluster_size,
        seed=previous.seed,
        resolution=previous.resolution,
    )
    changes = compare_communities(
        previous.communities, current.communities, min_jaccard=min_jaccard
    )
    return current, changes
