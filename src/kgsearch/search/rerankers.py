"""Rerankers as declared parts: a name, what hydration must read for it, and a builder.

A reranker is a :class:`RerankerPart` registered in :data:`RERANKERS` (the seam's
registry, :mod:`kgsearch.registry`); the plan reads its ``needs`` so hydration reads
exactly what it uses, and the pipeline builds it with :meth:`RerankerPart.build` once
the query vector is known. This module registers the built-ins; another reranker is a
module of its own that calls ``RERANKERS.register`` (``search/agreement.py`` is one),
declared in :data:`kgsearch.registry.BUILTINS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from kgsearch.errors import InvalidRequest
from kgsearch.registry import Registry
from kgsearch.search.rerank import (
    CrossEncoder,
    CrossEncoderReranker,
    MentionCountReranker,
    MMRReranker,
    NodeDistanceReranker,
    Reranker,
)

__all__ = ["RERANKERS", "Need", "RerankInput", "RerankerPart"]

Need = Literal["vectors", "hops", "sources"]
"""What hydration reads for a reranker beyond rows and text: the stored vectors (MMR),
hop counts from ``center_id`` (node distance), source counts (mentions)."""


@dataclass(frozen=True)
class RerankInput:
    """What building a reranker may use.

    Attributes:
        query_vector: The vector relevance is measured against, if the query was embedded.
        mmr_lambda: The request's MMR trade-off.
        cross_encoder: The engine's cross-encoder, if it has one.
    """

    query_vector: npt.NDArray[np.float32] | None
    mmr_lambda: float
    cross_encoder: CrossEncoder | None


@dataclass(frozen=True)
class RerankerPart:
    """One reranker, as the registry holds it.

    Attributes:
        name: The request's ``reranker`` value.
        build: The reranker for one search, or None to keep the fused order.
        needs: What hydration must read for it.
    """

    name: str
    build: Callable[[RerankInput], Reranker | None]
    needs: frozenset[Need] = frozenset()


RERANKERS: Registry[RerankerPart] = Registry("reranker")
"""The rerankers by name (``none`` keeps the fused order)."""


def _mmr(given: RerankInput) -> Reranker | None:
    vector = given.query_vector  # no query vector (embedder down): fused order
    return None if vector is None else MMRReranker(vector, lambda_=given.mmr_lambda)


def _cross_encoder(given: RerankInput) -> Reranker:
    if given.cross_encoder is None:
        raise InvalidRequest(
            "reranker cross_encoder needs a cross-encoder: pass "
            "Engine(cross_encoder=OnnxCrossEncoder(path))"
        )
    return CrossEncoderReranker(given.cross_encoder)


def _register(name: str, build: Callable[[RerankInput], Reranker | None], *needs: Need) -> None:
    RERANKERS.register(name, RerankerPart(name, build, frozenset(needs)))


_register("none", lambda _: None)
_register("mmr", _mmr, "vectors")
_register("node_distance", lambda _: NodeDistanceReranker(), "hops")
_register("mentions", lambda _: MentionCountReranker(), "sources")
_register("cross_encoder", _cross_encoder)
