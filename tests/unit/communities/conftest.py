"""The ``planted`` fixture: seeded planted-partition graphs for the community tests."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

Edges = list[tuple[str, str, float]]
Planted = Callable[..., tuple[Edges, dict[str, int]]]


def _planted_partition(
    blocks: int, size: int, p_in: float, p_out: float, *, seed: int
) -> tuple[list[tuple[str, str, float]], dict[str, int]]:
    """A stochastic block model: edges and each node's true block."""
    rng = random.Random(seed)
    truth = {f"n{b:02d}-{i:03d}": b for b in range(blocks) for i in range(size)}
    names = sorted(truth)
    edges: list[tuple[str, str, float]] = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            p = p_in if truth[a] == truth[b] else p_out
            if rng.random() < p:
                edges.append((a, b, 1.0))
    return edges, truth


@pytest.fixture
def planted() -> Planted:
    """``planted(blocks, size, p_in, p_out, seed=...)`` → (edges, true block of each node)."""
    return _planted_partition
