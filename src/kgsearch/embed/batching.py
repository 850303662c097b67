"""Micro-batching of query embeddings: concurrent searches share one model call.

A server embeds each search's query with the local model (about 12 ms a query on
one core). One query at a time keeps the model's batch dimension idle, and two
searches embedding at once oversubscribe the cores. :class:`QueryBatcher` wraps an
embedder so that queries arriving while the model is busy wait, and the next model
call embeds all of them together (up to ``max_batch``).

There is one model call at a time. The caller that finds the model idle *leads*:
it waits at most ``window`` seconds for company (only while the last call had
company, so a lone client never waits), takes the queue, runs the model and hands
each waiter its vector; if more queries arrived meanwhile it hands the lead to the
oldest of them, whose thread runs the next call. No thread of its own, nothing to
stop. A failure reaches every caller of that batch.

Only queries are batched, and only for embedders whose query embedding is a
document embedding (:func:`query_batch_of`): ``embed_documents`` is the batch call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from kgsearch.embed.base import Embedder, Vector
from kgsearch.embed.bundled import BundledEmbedder
from kgsearch.embed.fake import FakeEmbedder
from kgsearch.errors import ProviderError

__all__ = ["MAX_BATCH", "WINDOW_SECONDS", "QueryBatcher", "query_batch_of"]

WINDOW_SECONDS = 0.002
"""How long a leading query waits for others while queries are arriving together."""

MAX_BATCH = 32
"""Queries embedded in one model call at most."""


class _Waiter:
    """One query in the queue, and what its caller gets back."""

    __slots__ = ("done", "error", "lead", "text", "vector")

    def __init__(self, text: str) -> None:
        self.text = text
        self.done = threading.Event()
        self.vector: Vector | None = None
        self.error: BaseException | None = None
        self.lead = False


def query_batch_of(embedder: Embedder) -> Callable[[Sequence[str]], list[Vector]] | None:
    """The call that embeds several queries at once, or None when there is none.

    An embedder with ``embed_queries(texts)`` offers it; one that says its queries are
    embedded as documents (the bundled and fake models, or ``symmetric = True``) batches
    through ``embed_documents``. Remote embedders are not batched: their calls are
    bounded by the query guard instead.
    """
    if getattr(embedder, "remote", False):
        return None
    many = getattr(embedder, "embed_queries", None)
    if callable(many):
        return many  # type: ignore[no-any-return]
    if isinstance(embedder, BundledEmbedder | FakeEmbedder) or getattr(
        embedder, "symmetric", False
    ):
        return embedder.embed_documents
    return None


class QueryBatcher:
    """``embedder`` with concurrent :meth:`embed_query` calls batched together.

    Everything else passes through, so it stands wherever the embedder did (its
    ``model_id`` is the wrapped one's, and stored vectors stay comparable).

    Args:
        embedder: The embedder to wrap.
        batch: Embeds several queries in one call, in order (default:
            :func:`query_batch_of`; without one each query is embedded alone).
        window: Seconds a leading query waits for others (0: never waits).
        max_batch: Queries in one model call at most.
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        batch: Callable[[Sequence[str]], list[Vector]] | None = None,
        window: float = WINDOW_SECONDS,
        max_batch: int = MAX_BATCH,
    ) -> None:
        if max_batch < 1 or window < 0:
            raise ValueError("max_batch must be at least 1 and window not negative")
        self.inner = embedder
        self._batch = batch or query_batch_of(embedder)
        self.window = window
        self.max_batch = max_batch
        self.calls = 0
        self.queries = 0
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._queue: list[_Waiter] = []
        self._busy = False
        self._last_size = 1

    @property
    def model_id(self) -> str:
        """The wrapped embedder's model id."""
        return self.inner.model_id

    @property
    def dims(self) -> int:
        """The wrapped embedder's vector length."""
        return self.inner.dims

    @property
    def max_tokens(self) -> int:
        """The wrapped embedder's input budget."""
        return self.inner.max_tokens

    @property
    def remote(self) -> bool:
        """Whether the wrapped embedder calls a remote provider."""
        return bool(getattr(self.inner, "remote", False))

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes in the wrapped model."""
        return self.inner.count_tokens(text)

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Stored texts go straight to the wrapped embedder (they come in batches)."""
        return self.inner.embed_documents(texts)

    def embed_queries(self, texts: Sequence[str]) -> list[Vector]:
        """Several queries at once (a search's relation texts), in one call of the
        wrapped embedder's batch call, as queries: its ``embed_queries`` where it has
        one. Without this a search found only ``embed_documents`` here, and in a server
        the bundled model opened its document session for them (~75 MB more) and
        embedded them unlike the question."""
        if self._batch is None:
            return [self.inner.embed_query(text) for text in texts]
        return self._batch(texts)

    def embed_query(self, text: str) -> Vector:
        """The query's vector, from a model call shared with the queries that wait
        with it.

        Raises:
            ProviderError: The model failed (every query of that call gets it).
        """
        if self._batch is None:
            return self.inner.embed_query(text)
        me = _Waiter(text)
        with self._lock:
            self._queue.append(me)
            lead = not self._busy
            self._busy = True
            self._arrived.notify()
        if not lead:
            me.done.wait()
            lead = me.lead
        if lead:
            self._lead(me)
        if me.error is not None:
            raise me.error
        assert me.vector is not None
        return me.vector

    def _lead(self, me: _Waiter) -> None:
        """Run one model call for the queue's head (``me`` first) and pass the lead on."""
        batch_call = self._batch
        assert batch_call is not None
        with self._lock:
            if self.window > 0 and self._last_size > 1:
                deadline = time.monotonic() + self.window
                while len(self._queue) < self.max_batch:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._arrived.wait(left)
            batch = self._queue[: self.max_batch]
            del self._queue[: self.max_batch]
            self._last_size = len(batch)
        try:
            vectors = batch_call([w.text for w in batch])
            if len(vectors) != len(batch):
                raise ProviderError(f"{len(batch)} queries embedded as {len(vectors)} vectors")
        except BaseException as exc:
            for waiter in batch:
                waiter.error = exc
        else:
            for waiter, vector in zip(batch, vectors, strict=True):
                waiter.vector = vector
        with self._lock:
            self.calls += 1
            self.queries += len(batch)
            following = self._queue[0] if self._queue else None
            if following is None:
                self._busy = False
            else:
                following.lead = True
        for waiter in batch:
            if waiter is not me:
                waiter.done.set()
        if following is not None:
            following.done.set()
