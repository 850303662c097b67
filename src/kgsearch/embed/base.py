"""The Embedder protocol and the helpers every provider shares."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder", "Vector", "batched", "unit_vectors"]

Vector = npt.NDArray[np.float32]

_T = TypeVar("_T")


@runtime_checkable
class Embedder(Protocol):
    """Turns text into unit-length float32 vectors.

    ``model_id`` is ``provider:model`` and is recorded with every embedded row.
    Documents and queries are separate calls so asymmetric models can prefix them.
    Implementations raise :class:`kgsearch.errors.ProviderError` on failure.
    """

    @property
    def model_id(self) -> str:
        """``provider:model``, e.g. ``bundled:all-MiniLM-L6-v2-int8``."""
        ...

    @property
    def dims(self) -> int:
        """Vector length."""
        ...

    @property
    def max_tokens(self) -> int:
        """Input budget in model tokens; longer text is truncated by the model."""
        ...

    def count_tokens(self, text: str) -> int:
        """Number of model tokens ``text`` takes (used to fit enriched text)."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed stored texts, one vector per text, in order."""
        ...

    def embed_query(self, text: str) -> Vector:
        """Embed a search query."""
        ...


def batched(texts: Sequence[_T], size: int) -> Iterator[Sequence[_T]]:
    """Yield consecutive slices of ``texts`` of at most ``size`` items."""
    if size <= 0:
        raise ValueError("batch size must be positive")
    for start in range(0, len(texts), size):
        yield texts[start : start + size]


def unit_vectors(matrix: npt.ArrayLike) -> list[Vector]:
    """Split a 2-D array into float32 rows scaled to unit L2 length.

    An all-zero row stays zero rather than becoming NaN; providers that must not
    return one check for it themselves.

    Args:
        matrix: One row per text.

    Returns:
        One contiguous float32 vector per row, in order.
    """
    rows = np.asarray(matrix, dtype=np.float32)
    if rows.ndim != 2:
        raise ValueError(f"expected a 2-D array of vectors, got shape {rows.shape}")
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    scaled = rows / np.maximum(norms, np.float32(1e-12))
    return [np.ascontiguousarray(row, dtype=np.float32) for row in scaled]
