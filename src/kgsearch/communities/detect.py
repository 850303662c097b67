"""Hierarchical community detection with Leiden (leidenalg over igraph), pure.

Input is the graph as weighted edges between object ids (plus any isolated objects);
output is a hierarchy of communities:

- **Level 0** is the coarsest partition, as in GraphRAG: Leiden (modularity) over the
  whole graph.
- A community larger than ``max_cluster_size`` is split again by Leiden over its own
  induced subgraph, giving its children at the next level, until ``max_levels`` or
  until Leiden finds nothing to split (GraphRAG's recursive approach with graspologic;
  leidenalg's own aggregate levels go the other way, from fine to coarse, and do not
  cap community size). Each child's members are a subset of its parent's.
- **Deterministic**: vertices and edges are ordered by id before igraph sees them and
  Leiden runs with a fixed seed, so the same graph gives the same communities whatever
  order its edges came in.
- **Stable ids**: ``c<level>-<hash of the sorted members>``, so a community that did not
  change keeps its id (and its cached report) across runs.
- **Weights**: parallel edges between the same pair are summed; self-loops, zero,
  negative and non-finite weights are dropped and counted (``dropped_edges``), never
  passed to igraph.
- **Rank**: the summed weight of the community's internal edges (how much of the
  graph's connection it holds); singletons rank 0.
- Isolated objects are singleton communities at level 0; an empty graph gives no
  community and says why.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import igraph as ig
import leidenalg

__all__ = ["Community", "Detection", "changed", "detect"]


@dataclass(frozen=True)
class Community:
    """One community of one level.

    Attributes:
        id: ``c<level>-<12 hex digits>``, from the level and the sorted members.
        level: 0 is the coarsest.
        parent: The id of the community one level up (None at level 0).
        members: Object ids, sorted.
        size: Number of members.
        rank: Summed weight of the edges inside it.
    """

    id: str
    level: int
    parent: str | None
    members: tuple[str, ...]
    size: int
    rank: float


@dataclass
class Detection:
    """A hierarchy of communities.

    Attributes:
        communities: Every level's communities, level by level, largest rank first.
        levels: How many levels there are.
        modularity: Modularity of level 0 on the whole graph.
        dropped_edges: Self-loops and edges with a zero, negative or non-finite weight.
        note: Why there is no community, when there is none.
    """

    communities: list[Community] = field(default_factory=list)
    levels: int = 0
    modularity: float = 0.0
    dropped_edges: int = 0
    note: str = ""

    def level(self, n: int) -> list[Community]:
        """The communities of one level."""
        return [c for c in self.communities if c.level == n]


def _community_id(level: int, members: Sequence[str]) -> str:
    digest = hashlib.sha1("\x1f".join(members).encode("utf-8", "surrogatepass"))
    return f"c{level}-{digest.hexdigest()[:12]}"


def _clean(
    edges: Iterable[tuple[str, str, float]],
) -> tuple[dict[tuple[str, str], float], int]:
    weights: dict[tuple[str, str], float] = defaultdict(float)
    dropped = 0
    for source, target, weight in edges:
        w = float(weight)
        if source == target or not math.isfinite(w) or w <= 0:
            dropped += 1
            continue
        pair = (source, target) if source < target else (target, source)
        weights[pair] += w
    return weights, dropped


def _partition(
    names: Sequence[str], pairs: dict[tuple[str, str], float], seed: int, resolution: float
) -> tuple[list[list[str]], float]:
    """Leiden over one (sub)graph: groups of names, and the partition's modularity."""
    index = {n: i for i, n in enumerate(names)}
    ordered = sorted(pairs.items())
    graph = ig.Graph(n=len(names), edges=[(index[a], index[b]) for (a, b), _ in ordered])
    weights = [w for _, w in ordered]
    if not ordered:
        return [[n] for n in names], 0.0
    found = leidenalg.find_partition(
        graph,
        leidenalg.RBConfigurationVertexPartition,
        weights=weights,
        resolution_parameter=resolution,
        seed=seed,
        n_iterations=2,
    )
    groups = [sorted(names[v] for v in group) for group in found]
    modularity = graph.modularity(found.membership, weights=weights)
    return groups, float(modularity)


def detect(
    edges: Iterable[tuple[str, str, float]],
    nodes: Iterable[str] = (),
    *,
    max_cluster_size: int = 10,
    max_levels: int = 4,
    seed: int = 42,
    resolution: float = 1.0,
) -> Detection:
    """Communities of a weighted graph, level by level (see the module docstring).

    Args:
        edges: ``(source id, target id, weight)``; the graph is undirected.
        nodes: Objects to include even without an edge (isolated ones).
        max_cluster_size: A community larger than this is split at the next level.
        max_levels: The most levels.
        seed: Leiden's random seed (the same seed, the same result).
        resolution: Leiden's resolution (higher: smaller communities).

    Raises:
        ValueError: ``max_cluster_size`` or ``max_levels`` below 1.
    """
    if max_cluster_size < 1 or max_levels < 1:
        raise ValueError("max_cluster_size and max_levels must be at least 1")
    pairs, dropped = _clean(edges)
    names = sorted({*nodes, *(n for pair in pairs for n in pair)})
    if not names:
        return Detection(dropped_edges=dropped, note="the graph has no objects")
    groups, modularity = _partition(names, pairs, seed, resolution)
    result = Detection(modularity=modularity, dropped_edges=dropped)
    adjacency: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for (a, b), w in pairs.items():
        adjacency[a].append((b, w))
    todo: list[tuple[int, str | None, list[str]]] = [(0, None, g) for g in groups]
    while todo:
        level, parent, members = todo.pop()
        inside = set(members)
        sub = {(a, b): w for a in members for b, w in adjacency.get(a, ()) if b in inside}
        community = Community(
            id=_community_id(level, members),
            level=level,
            parent=parent,
            members=tuple(members),
            size=len(members),
            rank=round(sum(sub.values()), 6),
        )
        result.communities.append(community)
        result.levels = max(result.levels, level + 1)
        if len(members) > max_cluster_size and level + 1 < max_levels and sub:
            children, _ = _partition(members, sub, seed, resolution)
            if len(children) > 1:
                todo.extend((level + 1, community.id, c) for c in children)
    result.communities.sort(key=lambda c: (c.level, -c.rank, -c.size, c.id))
    return result


def changed(
    previous: Sequence[Community], current: Sequence[Community], *, threshold: float = 0.9
) -> tuple[list[str], list[str]]:
    """Which communities need a new report after the graph changed.

    Returns:
        The ids of current communities with no previous community of the same level
        whose members overlap them by at least ``threshold`` (Jaccard), and the ids of
        previous communities no current one matches that way (their reports are stale).
    """

    def matched(mine: Sequence[Community], theirs: Sequence[Community]) -> set[str]:
        by_member: dict[tuple[int, str], list[Community]] = defaultdict(list)
        for c in theirs:
            for m in c.members:
                by_member[(c.level, m)].append(c)
        found = set()
        for c in mine:
            members = set(c.members)
            near = {o.id: o for m in c.members for o in by_member.get((c.level, m), ())}
            for other in near.values():
                both = len(members & set(other.members))
                if both / len(members | set(other.members)) >= threshold:
                    found.add(c.id)
                    break
        return found

    fresh = matched(current, previous)
    kept = matched(previous, current)
    return (
        [c.id for c in current if c.id not in fresh],
        [c.id for c in previous if c.id not in kept],
    )
