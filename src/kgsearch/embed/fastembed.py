"""Embeddings from a FastEmbed ONNX model (the ``fastembed`` extra).

The SDK is imported when the embedder is built, so kgsearch imports without it.
FastEmbed downloads the model on first use; documents go through ``passage_embed``
and queries through ``query_embed``, so asymmetric models get their prefixes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kgsearch.embed.base import Vector, unit_vectors
from kgsearch.errors import MissingDependency

__all__ = ["FastEmbedEmbedder"]


class FastEmbedEmbedder:
    """A FastEmbed ``TextEmbedding`` model run in-process.

    Args:
        model_name: A model FastEmbed supports, e.g. ``BAAI/bge-small-en-v1.5``.
        cache_dir: Where FastEmbed keeps downloaded models.
        threads: onnxruntime threads; FastEmbed's default when omitted.
        max_tokens: The model's input budget (FastEmbed truncates at 512 by default).
        batch_size: Texts per model call.

    Raises:
        MissingDependency: fastembed is not installed.
    """

    def __init__(
        self,
        model_name: str,
        *,
        cache_dir: str | None = None,
        threads: int | None = None,
        max_tokens: int = 512,
        batch_size: int = 64,
    ) -> None:
        try:
            from fastembed import TextEmbedding
        except ImportError as exc:
            raise MissingDependency(
                "The FastEmbed embedder needs the fastembed extra:\n"
                "pip install 'kgsearch[fastembed]'",
                details={"extra": "fastembed"},
            ) from exc
        self._name = model_name
        self._max_tokens = max_tokens
        self._batch_size = batch_size
        self._model: Any = TextEmbedding(
            model_name=model_name, cache_dir=cache_dir, threads=threads
        )
        self._dims = self.embed_query("dimension probe").shape[0]

    @property
    def model_id(self) -> str:
        """``fastembed:<model_name>``."""
        return f"fastembed:{self._name}"

    @property
    def dims(self) -> int:
        """The model's output dimension (measured on a probe text at construction)."""
        return int(self._dims)

    @property
    def max_tokens(self) -> int:
        """The input budget given to the constructor (default 512)."""
        return self._max_tokens

    def count_tokens(self, text: str) -> int:
        """Estimate ``text``'s tokens as ``len(text) // 4 + 1``.

        FastEmbed does not expose its tokenizer publicly, so this is the same cheap
        estimate the OpenAI adapter uses.
        """
        return len(text) // 4 + 1

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed ``texts`` through ``passage_embed``; vectors are unit length."""
        if not texts:
            return []
        rows = list(self._model.passage_embed(list(texts), batch_size=self._batch_size))
        return unit_vectors(np.stack(rows))

    def embed_query(self, text: str) -> Vector:
        """Embed a query through ``query_embed``."""
        rows = list(self._model.query_embed(text))
        return unit_vectors(np.stack(rows))[0]
