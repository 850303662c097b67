"""Deterministic fake embedders: the ``fake:<dims>`` provider and the fakes tests use.

``FakeEmbedder`` is a hashed bag of words: no model, no network, identical output on
every machine. Texts that share words score higher than texts that do not, so ranking
tests still mean something. ``FlakyEmbedder`` and ``FailingEmbedder`` raise
:class:`kgsearch.errors.ProviderError` to exercise the embedding lifecycle's failure
paths. Every fake counts its embedding calls in ``calls``.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections.abc import Sequence

import numpy as np

from kgsearch.embed.base import Embedder, Vector
from kgsearch.errors import ProviderError

__all__ = ["FailingEmbedder", "FakeEmbedder", "FlakyEmbedder"]

_WORD = re.compile(r"\w+")


class FakeEmbedder:
    """A hashed bag-of-words embedder with ``model_id`` ``fake:<dims>``.

    Each lowercased word token is hashed (blake2b) to a bucket and a sign, the counts
    are summed and the vector is L2-normalised. A text with no words embeds to the
    fixed unit vector ``[1/sqrt(dims)] * dims``. Only the first ``max_tokens`` words
    count, the way a real model truncates.

    Args:
        dims: Vector length.
        fail: Raise ProviderError on every embedding call (after counting it).
        max_tokens: Words kept per text.

    Attributes:
        calls: Number of ``embed_documents`` / ``embed_query`` calls so far.
        embedded_texts: Every text embedded so far, in call order.
    """

    def __init__(self, dims: int = 64, *, fail: bool = False, max_tokens: int = 256) -> None:
        if dims <= 0:
            raise ValueError("dims must be positive")
        self._dims = dims
        self._fail = fail
        self._max_tokens = max_tokens
        self._lock = threading.Lock()
        self.calls = 0
        self.embedded_texts: list[str] = []

    @property
    def model_id(self) -> str:
        """``fake:<dims>``."""
        return f"fake:{self._dims}"

    @property
    def dims(self) -> int:
        """Vector length."""
        return self._dims

    @property
    def max_tokens(self) -> int:
        """Words kept per text."""
        return self._max_tokens

    def count_tokens(self, text: str) -> int:
        """Number of word tokens in ``text`` (there are no special tokens)."""
        return len(_WORD.findall(text))

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed ``texts``, one unit vector per text.

        Raises:
            ProviderError: The embedder was built with ``fail=True``.
        """
        with self._lock:
            self.calls += 1
            if self._fail:
                raise ProviderError(f"{self.model_id} was built with fail=True")
            self.embedded_texts.extend(texts)
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> Vector:
        """Embed a query exactly like a document."""
        return self.embed_documents([text])[0]

    def _vector(self, text: str) -> Vector:
        vector = np.zeros(self._dims, dtype=np.float32)
        for word in _WORD.findall(text.lower())[: self._max_tokens]:
            digest = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest())
            vector[digest % self._dims] += 1.0 if (digest >> 63) & 1 else -1.0
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            return np.full(self._dims, 1.0 / math.sqrt(self._dims), dtype=np.float32)
        return vector / np.float32(norm)


class FlakyEmbedder:
    """Wraps an embedder and fails every ``fail_every``-th embedding call.

    With the default ``fail_every=2``, calls 2, 4, 6... raise ProviderError and the
    others return ``inner``'s vectors. ``model_id``, ``dims`` and token counting are
    ``inner``'s.

    Args:
        inner: The embedder that answers the calls that do not fail.
        fail_every: Period of the failures.

    Attributes:
        calls: Number of embedding calls so far, failed ones included.
    """

    def __init__(self, inner: Embedder, fail_every: int = 2) -> None:
        if fail_every <= 0:
            raise ValueError("fail_every must be positive")
        self._inner = inner
        self._fail_every = fail_every
        self._lock = threading.Lock()
        self.calls = 0

    @property
    def model_id(self) -> str:
        """The inner embedder's id."""
        return self._inner.model_id

    @property
    def dims(self) -> int:
        """The inner embedder's dims."""
        return self._inner.dims

    @property
    def max_tokens(self) -> int:
        """The inner embedder's token budget."""
        return self._inner.max_tokens

    def count_tokens(self, text: str) -> int:
        """The inner embedder's token count."""
        return self._inner.count_tokens(text)

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed through ``inner`` unless this call is one that fails.

        Raises:
            ProviderError: On every ``fail_every``-th call.
        """
        self._count()
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vector:
        """Embed a query through ``inner`` unless this call is one that fails."""
        self._count()
        return self._inner.embed_query(text)

    def _count(self) -> None:
        with self._lock:
            self.calls += 1
            call = self.calls
        if call % self._fail_every == 0:
            raise ProviderError(
                f"flaky embedder: call {call} fails (fail_every={self._fail_every})"
            )


class FailingEmbedder:
    """An embedder whose every embedding call raises ProviderError.

    Its ``model_id`` is ``fake:<dims>``, the same as ``FakeEmbedder(dims)``, so it can
    stand in for one on a store that was built with the fake.

    Args:
        dims: Vector length it claims.

    Attributes:
        calls: Number of embedding calls so far.
    """

    def __init__(self, dims: int = 64) -> None:
        self._dims = dims
        self._lock = threading.Lock()
        self.calls = 0

    @property
    def model_id(self) -> str:
        """``fake:<dims>``."""
        return f"fake:{self._dims}"

    @property
    def dims(self) -> int:
        """Vector length it claims."""
        return self._dims

    @property
    def max_tokens(self) -> int:
        """256, like the fake."""
        return 256

    def count_tokens(self, text: str) -> int:
        """Number of word tokens in ``text``."""
        return len(_WORD.findall(text))

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Always raise.

        Raises:
            ProviderError: Always.
        """
        with self._lock:
            self.calls += 1
        raise ProviderError("failing embedder: every call fails")

    def embed_query(self, text: str) -> Vector:
        """Always raise.

        Raises:
            ProviderError: Always.
        """
        return self.embed_documents([text])[0]
