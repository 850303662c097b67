"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint, over httpx.

One adapter covers OpenAI, Ollama, vLLM, LM Studio and Hugging Face TEI: they all
accept ``{"model", "input": [...]}`` and answer ``{"data": [{"index", "embedding"}]}``.
Rate limits, server errors and dropped connections are retried by
:func:`kgsearch.http.post_json`; any other failure becomes
:class:`kgsearch.errors.ProviderError`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from kgsearch.cancel import cancellable_transport
from kgsearch.embed.base import Vector, batched, unit_vectors
from kgsearch.errors import MissingCredentials, ProviderError
from kgsearch.http import OPENAI_HOST, RetryPolicy, json_body, post_json, status_error

__all__ = ["OpenAIEmbedder", "UnexpectedDimensions"]

_PROBE_TEXT = "dimension probe"


_ONCE = RetryPolicy(max_retries=0)


class UnexpectedDimensions(ProviderError):
    """The server answered vectors of another length than the embedder declared: the
    provider misbehaves (or ``dims`` is misconfigured). Like any provider failure it
    fails the rows' attempt and degrades search, with this message."""

    code = "unexpected_dimensions"


class OpenAIEmbedder:
    """An embedder that calls an OpenAI-compatible ``POST {base_url}/embeddings``.

    Args:
        model: The server's model name, e.g. ``text-embedding-3-small`` or
            ``nomic-embed-text``.
        base_url: The API root including the version, e.g. ``https://api.openai.com/v1``
            or ``http://localhost:11434/v1``.
        api_key: Sent as a bearer token; required for ``api.openai.com``.
        dims: The vector length the server returns. If omitted, it is discovered from
            the first response (reading ``dims`` before any embedding call sends a
            one-text probe request).
        max_tokens: The model's input budget, used only to size enriched text.
        batch_size: Texts per request.
        timeout: Seconds per request.
        max_retries: Retries after the first attempt on 408, 429, 500, 502, 503, 504
            and connection errors or timeouts.
        backoff: Seconds before the first retry; doubled for each further retry.
            A ``Retry-After`` header of at most 60 s (seconds or an HTTP date) takes
            precedence.

    Raises:
        MissingCredentials: ``base_url`` is api.openai.com and no ``api_key`` is given.

    An empty text is sent as a single space, because OpenAI rejects empty inputs.
    The HTTP client is thread-safe; call :meth:`close` (or use ``with``) when done.
    """

    remote = True
    """Calls leave the process (so searches guard them with a deadline)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        dims: int | None = None,
        max_tokens: int = 512,
        batch_size: int = 64,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
    ) -> None:
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        if dims is not None and dims <= 0:
            raise ValueError("dims must be positive")
        if api_key is None and urlsplit(base_url).hostname == OPENAI_HOST:
            raise MissingCredentials(
                f"No API key for {base_url}: set KGSEARCH_EMBED__API_KEY (or pass api_key=...).",
                details={"provider": "openai", "base_url": base_url},
            )
        self._model = model
        self._url = base_url.rstrip("/") + "/embeddings"
        self._dims = dims
        self._max_tokens = max_tokens
        self._batch_size = batch_size
        self._retry = RetryPolicy(max_retries=max_retries, backoff=backoff)
        self._has_key = api_key is not None
        import httpx  # imported when a client is made: the engine loads faster without it

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # a query embedding past its search's deadline is dropped, not left running
        self._client = httpx.Client(
            headers=headers, timeout=timeout, transport=cancellable_transport()
        )
        self._dims_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """``openai:<model>``."""
        return f"openai:{self._model}"

    @property
    def dims(self) -> int:
        """The vector length; sends a probe request if it is not known yet."""
        if self._dims is None:
            self.embed_query(_PROBE_TEXT)
        assert self._dims is not None  # set by the first successful response
        return self._dims

    @property
    def max_tokens(self) -> int:
        """The input budget given to the constructor (default 512)."""
        return self._max_tokens

    def count_tokens(self, text: str) -> int:
        """Estimate ``text``'s tokens as ``len(text) // 4 + 1``, with no request.

        Four characters per token is OpenAI's rule of thumb for English. The estimate
        is cheap and never zero, but it is not the server's tokenizer.
        """
        return len(text) // 4 + 1

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed ``texts`` in requests of ``batch_size``; vectors are unit length.

        Raises:
            ProviderError: The server failed after all retries, or answered with
                something that is not an embeddings response.
            MissingCredentials: The server answered 401 and no key was configured.
            UnexpectedDimensions: The vectors' length differs from ``dims``.
        """
        vectors: list[Vector] = []
        for batch in batched(texts, self._batch_size):
            vectors.extend(self._embed_batch(batch))
        return vectors

    def embed_query(self, text: str) -> Vector:
        """Embed one search query (sent the same way as a document, but tried once: a
        search waiting on it has a deadline, and a retry would only outlive it)."""
        return self._embed_batch([text], retry=_ONCE)[0]

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _embed_batch(
        self, texts: Sequence[str], *, retry: RetryPolicy | None = None
    ) -> list[Vector]:
        # OpenAI rejects an empty string in `input` with a 400; a single space
        # embeds as "no content" on every server we target.
        inputs = [text or " " for text in texts]
        payload = self._post({"model": self._model, "input": inputs}, retry or self._retry)
        matrix = self._parse(payload, len(inputs))
        self._check_dims(matrix.shape[1])
        if not np.isfinite(matrix).all() or not np.linalg.norm(matrix, axis=1).all():
            raise ProviderError(
                f"{self.model_id} returned a zero or non-finite vector.",
                details={"url": self._url},
            )
        return unit_vectors(matrix)

    def _post(self, body: dict[str, Any], retry: RetryPolicy) -> Any:
        """POST ``body``, retrying transient failures; return the decoded JSON."""
        response, attempts = post_json(self._client, self._url, body, retry)
        if response.is_success:
            return json_body(response)
        if response.status_code == 401 and not self._has_key:
            raise MissingCredentials(
                f"{self._url} answered 401 Unauthorized and no API key is configured: "
                "set KGSEARCH_EMBED__API_KEY.",
                details=status_error(response, attempts).details,
            )
        raise status_error(response, attempts)

    def _parse(self, payload: Any, expected: int) -> np.ndarray[Any, np.dtype[np.float32]]:
        """Return the response's vectors as a (texts, dims) array in input order."""
        try:
            items = sorted(payload["data"], key=lambda item: item["index"])
            rows = [item["embedding"] for item in items]
            matrix = np.asarray(rows, dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise ProviderError(
                f"{self._url} did not return an embeddings response: {exc!r}",
                details={"url": self._url},
            ) from exc
        if matrix.ndim != 2 or matrix.shape[0] != expected or matrix.shape[1] == 0:
            raise ProviderError(
                f"{self._url} returned vectors of shape {matrix.shape} for {expected} texts.",
                details={"url": self._url, "shape": list(matrix.shape)},
            )
        return matrix

    def _check_dims(self, got: int) -> None:
        if self._dims is None:
            with self._dims_lock:
                if self._dims is None:
                    self._dims = got
        if got != self._dims:
            raise UnexpectedDimensions(
                f"{self.model_id} returned {got}-d vectors but dims={self._dims} was "
                "declared; fix the configured dims or the model name.",
                details={"model_id": self.model_id, "expected": self._dims, "got": got},
            )
