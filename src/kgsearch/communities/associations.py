"""Associations: which objects the same passages mention, as weighted pairs.

Co-occurrence is association data, not facts (docs/extraction.md). The offline
extractor no longer writes a ``co_occurs`` relationship for every pair of names in a
sentence; what it leaves is each chunk's mentions of the objects it names. From those,
:func:`co_mentions` weighs each pair of objects by the passages they share, each
passage counting ``1 / (k - 1)`` for a passage that names ``k`` objects (a passage
naming two things links them more than one naming twenty), and leaves out passages
naming more than ``max_per_chunk`` objects (lists, tables: they link nothing).

The pairs feed what needs a connected graph but must not show a fact: community
detection (:mod:`kgsearch.lifecycle.communities`) and the graph view when asked for
associations (:func:`kgsearch.explore.subgraph`). The ``graph:passages`` walk reads the
mentions themselves (:mod:`kgsearch.search.passages`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

__all__ = ["ASSOCIATION", "MAX_PER_CHUNK", "co_mentions"]

ASSOCIATION = "co_mentioned"
"""The edge type under which associations are shown (never a stored relationship)."""

MAX_PER_CHUNK = 30
"""A passage naming more objects than this links none of them."""


def co_mentions(
    mentions: Iterable[tuple[str, str]], *, max_per_chunk: int = MAX_PER_CHUNK
) -> dict[tuple[str, str], float]:
    """Weighted object pairs from ``(chunk id, object id)`` mentions.

    Args:
        mentions: Chunk–object mention pairs (repeats are counted once).
        max_per_chunk: Passages naming more objects than this are left out.

    Returns:
        ``{(a, b): weight}`` with ``a < b``: the sum over the passages naming both of
        ``1 / (k - 1)``, ``k`` being how many objects the passage names.
    """
    by_chunk: dict[str, set[str]] = defaultdict(set)
    for chunk, obj in mentions:
        if chunk and obj:
            by_chunk[chunk].add(obj)
    pairs: dict[tuple[str, str], float] = defaultdict(float)
    for named in by_chunk.values():
        k = len(named)
        if k < 2 or k > max_per_chunk:
            continue
        share = 1.0 / (k - 1)
        ordered = sorted(named)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                pairs[(a, b)] += share
    return dict(pairs)
