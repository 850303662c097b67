"""Fusion of any number of ranked lists into one list, remembering who found what.

Each retrieval leg hands over a ranked ``list[(key, raw score)]``, best first. The
functions here are pure: they never see a store, work for one, two or twenty legs,
and record for every fused key the 1-based rank and raw score each leg gave it.

Output order is total and deterministic: fused score descending, then the best rank
any leg gave the key, then the key itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Literal

from kgsearch.errors import InvalidRequest
from kgsearch.model import LegHit
from kgsearch.store.rows import built

__all__ = [
    "DEFAULT_RRF_K",
    "RELEVANCE_FLOOR",
    "Fused",
    "RankedLists",
    "below_floor",
    "relevance_floor",
    "rrf",
    "scaled",
    "weighted",
]

DEFAULT_RRF_K = 60
"""The constant from Cormack et al. (2009); Graphiti's k=1 over-rewards rank 1."""

RankedLists = Mapping[str, Sequence[tuple[str, float]]]
"""Leg name → ranked ``(key, raw score)`` pairs, best first."""

RELEVANCE_FLOOR = 0.3
"""A similarity leg's hit counts in fusion only when its similarity is at least this
share of the best similarity any similarity leg found for the query."""


def _is_similarity_leg(leg: str) -> bool:
    """Vector legs (``objects:vector``, ``chunks:vector:hinted``…) score by cosine."""
    parts = leg.split(":")
    return len(parts) > 1 and parts[1] == "vector"


def below_floor(
    lists: RankedLists,
    *,
    ratio: float = RELEVANCE_FLOOR,
    similarity_leg: Callable[[str], bool] = _is_similarity_leg,
) -> dict[str, frozenset[str]]:
    """Per similarity leg, the hits too weak to count as relevant.

    Rank fusion credits rank 1 of every list the same, so a leg that searched a
    near-empty collection (one chunk in the store) puts its only, unrelated hit at
    the top of the fused list. Similarity scores (cosine) are comparable across legs,
    so a hit of a similarity leg scoring below ``ratio`` × the best similarity of any
    such leg is weak, unless a lexical or graph leg also found it (on SciFact's
    abstracts relevant ones often score far below the best cosine and rank high by
    BM25). :func:`rrf` leaves weak hits out without moving the others up: a hit keeps
    the rank its leg gave it.

    Args:
        lists: Leg name → ranked ``(key, raw score)`` pairs, best first.
        ratio: The floor as a share of the best similarity (0 keeps everything).
        similarity_leg: Which legs score by similarity.

    Returns:
        Leg → the keys below the floor (legs with none are left out).
    """
    similar = [leg for leg in lists if similarity_leg(leg)]
    best = max((score for leg in similar for _, score in lists[leg][:1]), default=0.0)
    if ratio <= 0 or best <= 0:
        return {}
    floor = ratio * best
    found = {k for leg, ranked in lists.items() if leg not in similar for k, _ in ranked}
    weak = {
        leg: frozenset(k for k, score in lists[leg] if score < floor and k not in found)
        for leg in similar
    }
    return {leg: keys for leg, keys in weak.items() if keys}


def relevance_floor(
    lists: RankedLists,
    *,
    ratio: float = RELEVANCE_FLOOR,
    similarity_leg: Callable[[str], bool] = _is_similarity_leg,
) -> dict[str, Sequence[tuple[str, float]]]:
    """The lists without the hits :func:`below_floor` finds too weak (order kept)."""
    weak = below_floor(lists, ratio=ratio, similarity_leg=similarity_leg)
    return {
        leg: [hit for hit in ranked if hit[0] not in weak.get(leg, ())]
        for leg, ranked in lists.items()
    }


_Place = tuple[str, int, float]
"""Where one leg placed a key: (leg, 1-based rank, raw score)."""


class Fused:
    """One fused key with its combined score and the legs that found it.

    Attributes:
        key: The opaque hit key, e.g. ``"relationship:abc"``.
        score: The fused score; higher is better.
        found_by: One entry per leg that returned the key, in the order the legs
            were given; ``rank`` is 1-based within that leg and ``score`` is the
            leg's raw score. Fusion keeps them as plain tuples and makes the
            :class:`~kgsearch.model.LegHit` models on first access: a search fuses
            a hundred keys or more and reads ``found_by`` only for the few it keeps.
    """

    __slots__ = ("_found_by", "_places", "key", "score")

    def __init__(
        self,
        key: str,
        score: float,
        found_by: Sequence[LegHit] = (),
        *,
        places: Sequence[_Place] | None = None,
    ) -> None:
        self.key = key
        self.score = score
        self._found_by: tuple[LegHit, ...] | None = None
        if places is None:
            self._found_by = tuple(found_by)
            places = [(h.leg, h.rank, h.score) for h in self._found_by]
        self._places: Sequence[_Place] = tuple(places)

    @classmethod
    def placed(cls, key: str, score: float, places: list[_Place]) -> Fused:
        """A fused key from where the legs placed it (kept as given: fusion makes a
        hundred of these a search and never changes a list once it is built)."""
        made = cls.__new__(cls)
        made.key, made.score, made._found_by, made._places = key, score, None, places
        return made

    @property
    def found_by(self) -> tuple[LegHit, ...]:
        """The legs that found the key (see the class docstring)."""
        if self._found_by is None:
            # built without validation: leg, rank and score are already a str, int and float
            self._found_by = tuple(
                built(LegHit, {"leg": leg, "rank": rank, "score": score})
                for leg, rank, score in self._places
            )
        return self._found_by

    @property
    def best_rank(self) -> int:
        """The best (lowest) rank any leg gave this key."""
        return min(rank for _, rank, _ in self._places)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fused):
            return NotImplemented
        return (self.key, self.score, tuple(self._places)) == (
            other.key,
            other.score,
            tuple(other._places),
        )

    def __hash__(self) -> int:
        return hash((self.key, self.score, tuple(self._places)))

    def __repr__(self) -> str:
        return f"Fused(key={self.key!r}, score={self.score!r}, found_by={self.found_by!r})"


def rrf(
    lists: RankedLists,
    *,
    k: int = DEFAULT_RRF_K,
    weights: Mapping[str, float] | None = None,
    left_out: Mapping[str, Collection[str]] | None = None,
) -> list[Fused]:
    """Reciprocal rank fusion: ``score = Σ weight_leg / (k + rank_leg)``.

    Raw scores are ignored for the fused score (they are kept in ``found_by``), so
    legs with incomparable scales fuse fairly. Ranks are positions in each list
    after dropping repeated keys (the first occurrence wins).

    Args:
        lists: Leg name → ranked ``(key, raw score)`` pairs, best first.
        k: Rank damping constant, at least 1. Larger values flatten the
            difference between rank 1 and rank 10.
        weights: Optional per-leg weights (default 1.0 each, must be finite and
            non-negative). Weights for legs absent from ``lists`` are ignored.
        left_out: Per leg, keys it does not credit (:func:`below_floor`); the hits
            after them keep their ranks.

    Returns:
        Fused hits, best first.

    Raises:
        InvalidRequest: If ``k`` is below 1 or a weight is negative or not finite.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidRequest(
            f"RRF k must be an integer >= 1 (got {k!r}); the usual value is 60",
            details={"k": k},
        )
    leg_weights = _check_weights(lists, weights)
    hits = _collect(lists, left_out or {})
    # (-score, best rank, key) of each key, as _finish orders them; one or two terms:
    # their plain sum is already the correctly rounded one (and what sum() gives)
    order: list[tuple[float, int, str]] = []
    for key, places in hits.items():
        if len(places) == 1:
            leg, rank, _ = places[0]
            order.append((-(leg_weights[leg] / (k + rank)), rank, key))
        elif len(places) == 2:
            (leg, rank, _), (other, rank2, _) = places
            score = leg_weights[leg] / (k + rank) + leg_weights[other] / (k + rank2)
            order.append((-score, min(rank, rank2), key))
        else:
            score = math.fsum(leg_weights[leg] / (k + rank) for leg, rank, _ in places)
            order.append((-score, min(p[1] for p in places), key))
    order.sort()
    return [Fused.placed(key, -negated, hits[key]) for negated, _, key in order]


def weighted(
    lists: RankedLists,
    *,
    weights: Mapping[str, float] | None = None,
    normalization: Literal["minmax", "none"] = "minmax",
) -> list[Fused]:
    """Weighted score fusion: ``score = Σ weight_leg · norm_leg(raw score)``.

    With ``"minmax"`` each leg's raw scores are mapped onto ``[0, 1]`` by
    ``(s - min) / (max - min)``; a leg whose scores are all equal (including a
    one-item leg) maps every key to 1.0 instead of dividing by zero. A key missing
    from a leg contributes 0 for that leg. With ``"none"`` raw scores are summed as
    given, which only makes sense when every leg uses the same scale.

    Args:
        lists: Leg name → ranked ``(key, raw score)`` pairs, best first.
        weights: Optional per-leg weights (default 1.0 each, must be finite and
            non-negative). Weights for legs absent from ``lists`` are ignored.
        normalization: ``"minmax"`` (default) or ``"none"``.

    Returns:
        Fused hits, best first.

    Raises:
        InvalidRequest: If ``normalization`` is unknown, a weight is negative or
            not finite, or a leg reports a NaN or infinite raw score.
    """
    if normalization not in ("minmax", "none"):
        raise InvalidRequest(
            f"unknown normalization {normalization!r}; use 'minmax' or 'none'",
            details={"normalization": normalization},
        )
    leg_weights = _check_weights(lists, weights)
    hits = _collect(lists)
    bounds = {leg: _bounds(leg, ranked) for leg, ranked in lists.items()}
    scores: dict[str, float] = {}
    for key, leg_hits in hits.items():
        parts = []
        for leg, _, value in leg_hits:
            if normalization == "minmax":
                low, high = bounds[leg]
                value = 1.0 if high == low else (value - low) / (high - low)
            parts.append(leg_weights[leg] * value)
        scores[key] = math.fsum(parts)
    return _finish(scores, hits)


def scaled(weights: Mapping[str, float], multipliers: Mapping[str, float]) -> dict[str, float]:
    """Per-leg weights with each leg's per-query multiplier applied (legs without one
    keep their weight; a leg with a multiplier and no weight weighs 1.0 times it).

    A leg that can tell how sure it is of one query's ranking (the anchored leg, when
    the query names one relation clearly) records a multiplier beside its list, and
    the fused weight is its weight times that.

    Raises:
        InvalidRequest: If a multiplier is negative or not finite.
    """
    out = dict(weights)
    for leg, multiplier in multipliers.items():
        if not math.isfinite(multiplier) or multiplier < 0:
            raise InvalidRequest(
                f"weight multiplier for leg {leg!r} must be a finite number >= 0 "
                f"(got {multiplier!r})",
                details={"leg": leg, "multiplier": multiplier},
            )
        out[leg] = float(out.get(leg, 1.0)) * multiplier
    return out


def _check_weights(lists: RankedLists, weights: Mapping[str, float] | None) -> dict[str, float]:
    """Per-leg weights for every leg in ``lists``, defaulting to 1.0, validated."""
    given = weights or {}
    result: dict[str, float] = {}
    for leg in lists:
        weight = float(given.get(leg, 1.0))
        if not math.isfinite(weight) or weight < 0:
            raise InvalidRequest(
                f"weight for leg {leg!r} must be a finite number >= 0 (got {weight!r})",
                details={"leg": leg, "weight": weight},
            )
        result[leg] = weight
    return result


def _collect(
    lists: RankedLists, left_out: Mapping[str, Collection[str]] | None = None
) -> dict[str, list[_Place]]:
    """Key → where each leg that found it placed it, legs in input order, duplicates
    dropped (and the ``left_out`` ones, whose ranks stay taken)."""
    hits: dict[str, list[_Place]] = {}
    for leg, ranked in lists.items():
        seen: set[str] = set()
        skip = (left_out or {}).get(leg, ())
        rank = 0
        for key, score in ranked:
            if key in seen:
                continue
            seen.add(key)
            rank += 1
            if key in skip:
                continue
            place = (leg, rank, float(score))
            found = hits.get(key)
            if found is None:
                hits[key] = [place]
            else:
                found.append(place)
    return hits


def _bounds(leg: str, ranked: Sequence[tuple[str, float]]) -> tuple[float, float]:
    """(min, max) raw score of one leg; rejects NaN and infinities."""
    values = [float(score) for _, score in ranked]
    for (key, _), value in zip(ranked, values, strict=True):
        if not math.isfinite(value):
            raise InvalidRequest(
                f"leg {leg!r} returned a non-finite score {value!r} for {key!r}",
                details={"leg": leg, "key": key},
            )
    if not values:
        return (0.0, 0.0)
    return (min(values), max(values))


def _finish(scores: Mapping[str, float], hits: Mapping[str, list[_Place]]) -> list[Fused]:
    """Build Fused values and sort them: score desc, best rank asc, key asc."""
    order = sorted(
        (-scores[key], places[0][1] if len(places) == 1 else min(p[1] for p in places), key)
        for key, places in hits.items()
    )
    return [Fused.placed(key, -negated, hits[key]) for negated, _, key in order]
