"""Rerankers: reorder one fused candidate list (MMR, node distance, mentions, cross-encoder).

Every reranker satisfies the small :class:`Reranker` protocol and works on a single
list that fusion already produced; it never sees the individual legs. Anything a
reranker needs from the store (vectors, hop distances, source counts) already rides on
each :class:`Candidate`, read for the whole pool in one batch by
:mod:`kgsearch.search.hydrate`, so rerankers are pure and this module imports no store.
Each reranker returns new :class:`Candidate` values whose ``score`` is the reranker's
own score (higher is better), sorted best first, with ``found_by`` passed through
untouched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from kgsearch.errors import ConfigError, DimensionMismatch, InvalidRequest, ProviderError
from kgsearch.model import LegHit

__all__ = [
    "Candidate",
    "CrossEncoder",
    "CrossEncoderReranker",
    "MMRReranker",
    "MentionCountReranker",
    "NodeDistanceReranker",
    "OnnxCrossEncoder",
    "Reranker",
    "apply_min_score",
]

FloatArray = npt.NDArray[np.floating[Any]]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One fused hit on its way through reranking.

    Attributes:
        key: The opaque hit key, e.g. ``"relationship:abc"``.
        score: The current score; higher is better.
        vector: The hit's embedding, if known (used by MMR). Not part of equality.
        text: The hit's text, if known (used by cross-encoders).
        object_ids: The graph objects this hit touches: an object hit → its own
            id; a relationship → ``(source_id, target_id)``; a chunk → the
            objects it mentions (hydration reads those only for node distance,
            the one reranker that uses them).
        found_by: The legs that found the hit, passed through unchanged.
        hops: The smallest hop count from the node-distance centre to any of
            ``object_ids`` (0 for the centre itself); None when none is reachable
            or no centre was asked for.
        sources: How many distinct live sources mention the hit (used by the
            mentions reranker).
    """

    key: str
    score: float
    vector: FloatArray | None = field(default=None, compare=False, repr=False)
    text: str | None = None
    object_ids: tuple[str, ...] = ()
    found_by: tuple[LegHit, ...] = ()
    hops: int | None = None
    sources: int = 0


@runtime_checkable
class Reranker(Protocol):
    """Reorders one candidate list; returns at most ``limit`` new candidates, best first."""

    def rerank(self, query: str, hits: Sequence[Candidate], *, limit: int) -> list[Candidate]:
        """Rescore and reorder ``hits`` for ``query``.

        Args:
            query: The user's query text.
            hits: Candidates in their incoming (fused) order.
            limit: Maximum number of candidates to return; at least 1.

        Returns:
            New candidates with updated scores, sorted by score descending.
        """
        ...


@runtime_checkable
class CrossEncoder(Protocol):
    """Scores (query, passage) pairs jointly; higher is more relevant."""

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """Return one relevance score per text, in order."""
        ...


def apply_min_score(cands: Sequence[Candidate], min_score: float | None) -> list[Candidate]:
    """Keep candidates whose score is at least ``min_score``, preserving order.

    Args:
        cands: Candidates in any order.
        min_score: The inclusive threshold, or ``None`` to keep everything.

    Returns:
        The kept candidates.

    Raises:
        InvalidRequest: If ``min_score`` is NaN.
    """
    if min_score is None:
        return list(cands)
    if math.isnan(min_score):
        raise InvalidRequest("min_score must be a number, not NaN")
    return [cand for cand in cands if cand.score >= min_score]


class MMRReranker:
    """Greedy maximal marginal relevance over cosine similarity.

    Repeatedly picks the candidate maximising
    ``λ·sim(q, d) - (1 - λ)·max_{s ∈ selected} sim(d, s)``; the first pick is the
    candidate most similar to the query. Because redundancy is measured only
    against already-selected results, of two near duplicates the first is kept
    and only the second is pushed down (Graphiti's non-greedy variant compares
    against every candidate and demotes both). Redundancy is floored at 0, so an
    anti-correlated result earns no bonus over an orthogonal one. A candidate's
    score is its MMR value at the moment it was picked; with the floor that value
    never increases from one pick to the next, so the output is sorted.

    Candidates without a vector use their incoming score as relevance and have no
    redundancy with anything; mixing them with vector candidates mixes scales.

    Args:
        query_vector: The query embedding (normalised internally).
        lambda_: Relevance/diversity trade-off in ``[0, 1]``; 1 is pure relevance.

    Raises:
        InvalidRequest: If ``lambda_`` is outside ``[0, 1]``.
    """

    def __init__(self, query_vector: npt.ArrayLike, *, lambda_: float = 0.5) -> None:
        if not 0.0 <= lambda_ <= 1.0:
            raise InvalidRequest(f"MMR lambda_ must be in [0, 1] (got {lambda_!r})")
        self.query_vector = _unit(np.asarray(query_vector, dtype=np.float64).ravel())
        self.lambda_ = float(lambda_)

    def rerank(self, query: str, hits: Sequence[Candidate], *, limit: int) -> list[Candidate]:
        """Select up to ``limit`` candidates greedily by MMR; see the class docstring."""
        _check_limit(limit)
        if not hits:
            return []
        relevance, matrix, has_vector = self._relevance(hits)
        lam = self.lambda_
        redundancy = np.zeros(len(hits))
        remaining = np.ones(len(hits), dtype=bool)
        picked: list[Candidate] = []
        for _ in range(min(limit, len(hits))):
            mmr = lam * relevance - (1.0 - lam) * redundancy
            # lexsort: last key is primary; ties go to higher relevance, then input order.
            order = np.lexsort((np.arange(len(hits)), -relevance, -mmr))
            best = int(next(i for i in order if remaining[i]))
            remaining[best] = False
            picked.append(replace(hits[best], score=float(mmr[best])))
            if has_vector[best]:
                sims = matrix @ matrix[best]
                redundancy = np.where(has_vector, np.maximum(redundancy, sims), 0.0)
        return picked

    def _relevance(
        self, hits: Sequence[Candidate]
    ) -> tuple[FloatArray, FloatArray, npt.NDArray[np.bool_]]:
        """Query similarity per hit, the unit-vector matrix and the has-vector mask."""
        dims = self.query_vector.shape[0]
        matrix = np.zeros((len(hits), dims))
        has_vector = np.zeros(len(hits), dtype=bool)
        relevance = np.zeros(len(hits))
        for i, hit in enumerate(hits):
            if hit.vector is None:
                relevance[i] = hit.score
                continue
            vector = np.asarray(hit.vector, dtype=np.float64).ravel()
            if vector.shape[0] != dims:
                raise DimensionMismatch(
                    f"candidate {hit.key!r} has a {vector.shape[0]}-dim vector, "
                    f"the query has {dims}; re-embed with the store's embedder",
                    details={"key": hit.key, "dims": vector.shape[0], "expected": dims},
                )
            matrix[i] = _unit(vector)
            has_vector[i] = True
            relevance[i] = float(matrix[i] @ self.query_vector)
        return relevance, matrix, has_vector


class NodeDistanceReranker:
    """Ranks candidates by true shortest-path distance from a centre object.

    ``score = 1 / (1 + h)`` where ``h`` is the candidate's ``hops``: the smallest
    hop count from the centre to any of its ``object_ids`` (the centre itself
    scores 1.0), measured beforehand by a full shortest-path search, not just
    direct neighbours. Candidates that cannot be reached (``hops`` is None) score
    0 and follow all reachable ones in their incoming order. Ties among reachable
    candidates go to the higher incoming score, then incoming order.
    """

    def rerank(self, query: str, hits: Sequence[Candidate], *, limit: int) -> list[Candidate]:
        """Reorder ``hits`` by hop distance from the centre; see the class docstring.

        Raises:
            InvalidRequest: If ``limit`` is below 1 or a hop count is negative.
        """
        _check_limit(limit)
        scored: list[tuple[tuple[float, float, int], Candidate]] = []
        for position, hit in enumerate(hits):
            if hit.hops is not None and hit.hops < 0:
                raise InvalidRequest(f"negative hop count for {hit.key!r}")
            if hit.hops is not None:
                score = 1.0 / (1.0 + hit.hops)
                sort_key = (-score, -hit.score, position)
            else:
                score = 0.0
                sort_key = (1.0, 0.0, position)
            scored.append((sort_key, replace(hit, score=score)))
        scored.sort(key=lambda pair: pair[0])
        return [cand for _, cand in scored[:limit]]


class MentionCountReranker:
    """Ranks candidates by how many sources mention them (``sources``), most first.

    ``score = sources``; ties go to the higher incoming score, then incoming order.
    (Graphiti sorted episode mentions ascending; this sorts descending.)
    """

    def rerank(self, query: str, hits: Sequence[Candidate], *, limit: int) -> list[Candidate]:
        """Reorder ``hits`` by source count; see the class docstring."""
        _check_limit(limit)
        if not hits:
            return []
        order = sorted(range(len(hits)), key=lambda i: (-hits[i].sources, -hits[i].score, i))
        return [replace(hits[i], score=float(hits[i].sources)) for i in order[:limit]]


class CrossEncoderReranker:
    """Scores each candidate's text against the query with a cross-encoder.

    Ties keep the incoming order.

    Args:
        encoder: Any :class:`CrossEncoder`.

    Raises:
        InvalidRequest: From ``rerank`` if a candidate has no text.
        ProviderError: From ``rerank`` if the encoder returns the wrong number of
            scores or a non-finite score.
    """

    def __init__(self, encoder: CrossEncoder) -> None:
        self.encoder = encoder

    def rerank(self, query: str, hits: Sequence[Candidate], *, limit: int) -> list[Candidate]:
        """Rescore ``hits`` with the encoder and return the best ``limit``."""
        _check_limit(limit)
        if not hits:
            return []
        missing = [hit.key for hit in hits if hit.text is None]
        if missing:
            raise InvalidRequest(
                f"cross-encoder reranking needs text for every hit; {len(missing)} have none "
                f"(first: {missing[0]!r})",
                details={"keys": missing[:20]},
            )
        scores = self.encoder.score(query, [hit.text or "" for hit in hits])
        if len(scores) != len(hits):
            raise ProviderError(
                f"cross-encoder returned {len(scores)} scores for {len(hits)} texts"
            )
        if not all(math.isfinite(s) for s in scores):
            raise ProviderError("cross-encoder returned a NaN or infinite score")
        order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))
        return [replace(hits[i], score=float(scores[i])) for i in order[:limit]]


class OnnxCrossEncoder:
    """A cross-encoder run locally with onnxruntime from a user-supplied directory.

    The directory must hold ``model.onnx`` and a Hugging Face ``tokenizer.json``.
    Each (query, passage) pair is encoded as one sequence with segment ids
    (``token_type_ids``), padded to the longest pair in the batch and truncated
    longest-first. The model's first output is reduced to one float per pair:

    * ``[batch]`` or ``[batch, n]`` logits → column 0 (real cross-encoders such as
      ``ms-marco-MiniLM-L-6-v2`` output ``[batch, 1]``);
    * ``[batch, seq, hidden]`` hidden states (a bi-encoder exported without a
      head) → the first feature of the CLS position. That runs but is not a
      relevance score; it exists so the pipeline can be exercised end to end.

    No model is bundled.

    Args:
        model_dir: Directory containing ``model.onnx`` and ``tokenizer.json``.
        max_length: Token budget per pair; ``None`` keeps the tokenizer's own
            truncation setting, or 512 if it has none.
        batch_size: Pairs per onnxruntime call.

    Raises:
        ConfigError: If a file is missing or the model cannot be loaded.
    """

    def __init__(
        self, model_dir: Path, *, max_length: int | None = None, batch_size: int = 32
    ) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        model_dir = Path(model_dir)
        missing = [n for n in ("model.onnx", "tokenizer.json") if not (model_dir / n).is_file()]
        if missing:
            raise ConfigError(
                f"cross-encoder directory {str(model_dir)!r} is missing {', '.join(missing)}; "
                "export the model to ONNX and put model.onnx and tokenizer.json there",
                details={"model_dir": str(model_dir), "missing": missing},
            )
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1 (got {batch_size})")
        try:
            self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
            options = onnxruntime.SessionOptions()
            # no busy-waiting once a run returns: the next request needs the cores
            options.add_session_config_entry("session.force_spinning_stop", "1")
            self._session = onnxruntime.InferenceSession(
                str(model_dir / "model.onnx"),
                sess_options=options,
                providers=["CPUExecutionProvider"],
            )
        except Exception as exc:
            raise ConfigError(f"cannot load cross-encoder from {str(model_dir)!r}: {exc}") from exc
        self._input_names = {inp.name for inp in self._session.get_inputs()}
        self.batch_size = batch_size
        self._configure_tokenizer(max_length)

    def _configure_tokenizer(self, max_length: int | None) -> None:
        """Pad to the longest pair in a batch; truncate longest-first."""
        truncation = self._tokenizer.truncation
        if max_length is None:
            max_length = int(truncation["max_length"]) if truncation else 512
        self._tokenizer.enable_truncation(max_length=max_length, strategy="longest_first")
        padding = self._tokenizer.padding or {}
        pad_token = padding.get("pad_token", "[PAD]")
        pad_id = padding.get("pad_id", self._tokenizer.token_to_id(pad_token) or 0)
        self._tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """Return one score per passage for ``query``.

        Raises:
            ProviderError: If onnxruntime fails or returns an unexpected shape.
        """
        scores: list[float] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [(query, text) for text in texts[start : start + self.batch_size]]
            scores.extend(self._score_batch(batch))
        return scores

    def _score_batch(self, pairs: list[tuple[str, str]]) -> list[float]:
        """Run one batch of pairs through the model."""
        encodings = self._tokenizer.encode_batch(pairs)
        feeds = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        try:
            outputs = self._session.run(
                None, {name: arr for name, arr in feeds.items() if name in self._input_names}
            )
        except Exception as exc:
            raise ProviderError(f"cross-encoder inference failed: {exc}") from exc
        return _reduce_logits(np.asarray(outputs[0]), len(pairs))


def _reduce_logits(output: FloatArray, batch: int) -> list[float]:
    """One float per pair from ``[batch]``, ``[batch, n]`` or ``[batch, seq, hidden]``."""
    if output.ndim == 1:
        values = output
    elif output.ndim == 2:
        values = output[:, 0]
    elif output.ndim == 3:
        values = output[:, 0, 0]
    else:
        raise ProviderError(f"cross-encoder output has unsupported shape {output.shape}")
    if values.shape[0] != batch:
        raise ProviderError(f"cross-encoder returned {values.shape[0]} rows for {batch} pairs")
    return [float(v) for v in values]


def _unit(vector: FloatArray) -> FloatArray:
    """``vector`` scaled to length 1; a zero vector stays zero (similarity 0)."""
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def _check_limit(limit: int) -> None:
    """Reject a limit below 1."""
    if limit < 1:
        raise InvalidRequest(f"limit must be >= 1 (got {limit})", details={"limit": limit})
