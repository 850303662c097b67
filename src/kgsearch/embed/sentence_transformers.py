"""Embeddings from a local sentence-transformers model (the ``sentence-transformers`` extra).

The SDK (and torch behind it) is imported when the embedder is built, so kgsearch
imports without it. Models that define ``query`` / ``document`` prompts (e5, bge,
nomic...) get them applied to queries and documents respectively.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgsearch.embed.base import Vector, unit_vectors
from kgsearch.errors import MissingDependency

__all__ = ["SentenceTransformersEmbedder"]

_DOCUMENT_PROMPTS = ("document", "passage", "corpus")


class SentenceTransformersEmbedder:
    """A sentence-transformers model run in-process.

    Args:
        model_name_or_path: A local model directory, or a hub name (downloaded by the
            SDK on first use).
        device: ``"cpu"``, ``"cuda"``...; the SDK picks one when omitted.
        batch_size: Texts per forward pass.

    Raises:
        MissingDependency: sentence-transformers is not installed.
    """

    def __init__(
        self, model_name_or_path: str, *, device: str | None = None, batch_size: int = 64
    ) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingDependency(
                "The sentence-transformers embedder needs the sentence-transformers "
                "extra:\npip install 'kgsearch[sentence-transformers]'",
                details={"extra": "sentence-transformers"},
            ) from exc
        self._name = model_name_or_path
        self._batch_size = batch_size
        self._model: Any = SentenceTransformer(model_name_or_path, device=device)
        prompts: dict[str, str] = dict(getattr(self._model, "prompts", None) or {})
        self._query_prompt = "query" if "query" in prompts else None
        self._document_prompt = next((p for p in _DOCUMENT_PROMPTS if p in prompts), None)
        self._dims = int(self._model.get_sentence_embedding_dimension())

    @property
    def model_id(self) -> str:
        """``sentence-transformers:<model_name_or_path>``."""
        return f"sentence-transformers:{self._name}"

    @property
    def dims(self) -> int:
        """The model's output dimension."""
        return self._dims

    @property
    def max_tokens(self) -> int:
        """The model's ``max_seq_length``."""
        return int(self._model.max_seq_length)

    def count_tokens(self, text: str) -> int:
        """Count ``text``'s tokens with the model's tokenizer, special tokens included."""
        return len(self._model.tokenizer(text)["input_ids"])

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed ``texts`` with the model's document prompt, if it has one."""
        return self._encode(texts, self._document_prompt)

    def embed_query(self, text: str) -> Vector:
        """Embed a query with the model's ``query`` prompt, if it has one."""
        return self._encode([text], self._query_prompt)[0]

    def _encode(self, texts: Sequence[str], prompt_name: str | None) -> list[Vector]:
        if not texts:
            return []
        matrix = self._model.encode(
            list(texts),
            prompt_name=prompt_name,
            batch_size=self._batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return unit_vectors(matrix)
