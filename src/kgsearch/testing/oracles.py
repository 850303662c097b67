"""Slow-but-obvious oracles the conformance suite compares stores against.

``bfs`` walks a plain edge list; ``cosine_scores`` embeds texts with a fresh fake
embedder and scores them in float64; ``assert_topk`` checks a store's ranked list
against those scores, allowing any order among exactly tied rows (networkx's
``_pagerank_python`` beside the fast path). They need neither pytest nor a store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from kgsearch.embed.fake import FakeEmbedder

__all__ = ["TOLERANCE", "Edge", "assert_topk", "bfs", "cosine_scores"]

Edge = tuple[str, str, str, str]
"""(relationship id, relationship type, source id, target id)."""

TOLERANCE = 1e-5
"""Absolute score tolerance of :func:`assert_topk`: stores keep float32 vectors."""


def bfs(
    edges: Iterable[Edge],
    starts: Sequence[str],
    *,
    depth: int,
    direction: str = "both",
    types: Sequence[str] | None = None,
) -> dict[str, int]:
    """Objects within ``depth`` hops of ``starts`` (start ids excluded), with their hop.

    Args:
        edges: The live relationships, as :data:`Edge` tuples.
        starts: The ids the walk starts from.
        depth: The most hops to take.
        direction: ``"out"`` follows source → target, ``"in"`` the reverse, ``"both"`` either.
        types: Follow only relationships of these types (all when empty or ``None``).

    Returns:
        Each reached id with the fewest hops it took.
    """
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
    """Cosine similarity of ``query`` to each text under ``FakeEmbedder(dims)``, by id.

    Args:
        texts: The embedded text of each row, by id.
        query: The query text.
        dims: The fake embedder's dimensions (the store's).

    Returns:
        The float64 cosine of each id's text to the query.
    """
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
    """Check that ``got`` is the exact top-``limit`` of ``expected`` (ties in any order).

    Scores are compared up to :data:`TOLERANCE`.

    Args:
        got: A store's ranked ``(id, score)`` list.
        expected: The oracle's score of every candidate, by id.
        limit: The ``limit`` the store was asked for.

    Raises:
        AssertionError: ``got`` is not a top-``limit`` of ``expected``.
    """
    want = sorted(expected.values(), reverse=True)[:limit]
    assert len(got) == len(want), (got, want)
    assert len({id_ for id_, _ in got}) == len(got), got
    assert all(_close(s, w) for (_, s), w in zip(got, want, strict=True)), (got, want)
    for id_, score in got:
        assert id_ in expected, id_
        assert _close(score, expected[id_]), (id_, score, expected[id_])


def _close(value: float, expected: float) -> bool:
    """Equal up to float32 rounding (``pytest.approx(expected, abs=TOLERANCE)``)."""
    return abs(value - expected) <= TOLERANCE
