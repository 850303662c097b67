"""Slow-but-obvious oracles the conformance suite compares stores against.

``bfs`` walks a plain edge list; ``cosine_scores`` embeds texts with a fresh fake
embedder and scores them in float64; ``assert_topk`` checks a store's ranked list
against those scores, allowing any order among exactly tied rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pytest

from kgsearch.testing import FakeEmbedder

Edge = tuple[str, str, str, str]
"""(relationship id, relationship type, source id, target id)."""


def bfs(
    edges: Iterable[Edge],
    starts: Sequence[str],
    *,
    depth: int,
    direction: str = "both",
    types: Sequence[str] | None = None,
) -> dict[str, int]:
    """Objects within ``depth`` hops of ``starts`` (start ids excluded), with their hop."""
    adjacency: dict[str, set[str]] = {}
    for _, type_, source, target in edges:
        if types and type_ not in types:
            continue
        if direction in ("out", "both"):
            adjacency.setdefault(source, set()).add(target)
        if direction in ("in", "both"):
            adjacency.setdefault(target, set()).add(source)
    seen = set(starts)
    found: dict[str, int] = {}
    frontier = list(dict.fromkeys(starts))
    for hop in range(1, depth + 1):
        nxt = []
        for node in frontier:
            for other in sorted(adjacency.get(node, ())):
                if other not in seen:
                    seen.add(other)
                    found[other] = hop
                    nxt.append(other)
        frontier = nxt
    return found


def cosine_scores(texts: Mapping[str, str], query: str, dims: int) -> dict[str, float]:
    """Cosine similarity of ``query`` to each text under ``FakeEmbedder(dims)``, by id."""
    embedder = FakeEmbedder(dims)
    q = np.asarray(embedder.embed_query(query), dtype=np.float64)
    scores = {}
    for id_, text in texts.items():
        v = np.asarray(embedder.embed_documents([text])[0], dtype=np.float64)
        scores[id_] = float(v @ q / (np.linalg.norm(v) * np.linalg.norm(q)))
    return scores


def assert_topk(
    got: Sequence[tuple[str, float]], expected: Mapping[str, float], limit: int
) -> None:
    """``got`` is the exact top-``limit`` of ``expected`` (ties may come in any order)."""
    want = sorted(expected.values(), reverse=True)[:limit]
    assert len(got) == len(want), (got, want)
    assert len({id_ for id_, _ in got}) == len(got), got
    assert [s for _, s in got] == [approx(s) for s in want]
    for id_, score in got:
        assert id_ in expected, id_
        assert score == approx(expected[id_]), (id_, score, expected[id_])


def approx(value: float) -> object:
    """Float equality up to float32 rounding."""
    return pytest.approx(value, abs=1e-5)
