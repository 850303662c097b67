"""Query vectors for the searches waiting for a thread, in one model call.

A search's query embedding is a third of its CPU with the bundled model, and the
model's cost per query falls as queries share a call (5.3 ms of CPU for one short
query alone, about 3 each for 8 together: a call reads all the weights once). The
engine's own batching (:class:`~kgsearch.embed.batching.QueryBatcher`) only sees the
searches that already hold a search-lane thread, at most 2 on 2 cores, while under
load the other requests wait for one.

:class:`QueryPrefetch` lets the waiting ones share: a REST search notes its query as
waiting (:meth:`QueryPrefetch.waiting`) before it queues for a search thread, and once
it has one, :meth:`QueryPrefetch.ensure` embeds its query together with every waiting
query not embedded yet, in one model call (one at a time), into the engine's query
cache. The search then finds its vector there, and so do the searches that waited
with it. A lone search embeds its own query alone, as before, and waits for nothing.

Only what the search would embed itself is embedded: the query as it is, when the
request asks no keywords, gives no type hint (both change the text) and has a vector
leg, the store holds vectors of the engine's model, and the model is local. Anything
else, and any failure, leaves the search to embed (and report) as it always did.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from kgsearch.embed.base import Vector
from kgsearch.embed.batching import query_batch_of
from kgsearch.errors import KgsearchError
from kgsearch.search.request import SearchRequest, SearchResponse

if TYPE_CHECKING:
    from kgsearch.engine import Engine

__all__ = ["MAX_BATCH", "QueryPrefetch", "embeds_query_as_is", "with_embed_time"]

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_BATCH = 32
"""Queries in one model call at most."""

INFO_FRESH_SECONDS = 1.0
"""How long the store's embedding model, read once, is trusted."""


def embeds_query_as_is(request: SearchRequest) -> bool:
    """Whether the search embeds ``request.query`` unchanged for some scope: no
    keywords, type hint or recipe (which change the texts or the legs), and a vector
    leg over objects, relationships or chunks."""
    if request.keywords != "off" or request.type_hint or request.recipe is not None:
        return False
    scopes = (request.objects, request.relationships, request.chunks)
    return any(s is not None and "vector" in s.methods for s in scopes)


def with_embed_time(result: T, ms: float) -> T:
    """``result`` with ``ms`` (the time :meth:`QueryPrefetch.ensure` took for it) added
    to its ``embedQueryMs`` and ``totalMs``, when it is a search response: its query
    was embedded before the search began, and the search's own timings start after."""
    if not isinstance(result, SearchResponse):
        return result
    timings = result.metadata.get("executionTime")
    if not isinstance(timings, dict) or ms <= 0:
        return result
    timings = {
        **timings,
        "embedQueryMs": round(timings.get("embedQueryMs", 0.0) + ms, 3),
        "totalMs": round(timings.get("totalMs", 0.0) + ms, 3),
    }
    metadata = {**result.metadata, "executionTime": timings}
    return result.model_copy(update={"metadata": metadata})


class QueryPrefetch:
    """Embeds the queries of waiting searches together, into the engine's cache.

    Args:
        engine: The engine whose embedder and query cache are used.
        max_batch: Queries in one model call at most.
    """

    def __init__(self, engine: Engine, *, max_batch: int = MAX_BATCH) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self.engine = engine
        self.max_batch = max_batch
        self.calls = 0
        self.queries = 0
        self._waiting: dict[str, int] = {}  # query text -> searches waiting with it
        self._waiting_lock = threading.Lock()
        self._model_lock = threading.Lock()  # one model call at a time
        self._model: tuple[float, str | None] | None = None  # (when read, the store's)

    @contextmanager
    def waiting(self, request: SearchRequest) -> Iterator[None]:
        """Note ``request``'s query as waiting while the block runs (the search, from
        before it queues for a thread to its end)."""
        if not embeds_query_as_is(request):
            yield
            return
        text = request.query
        with self._waiting_lock:
            self._waiting[text] = self._waiting.get(text, 0) + 1
        try:
            yield
        finally:
            with self._waiting_lock:
                left = self._waiting.pop(text) - 1
                if left:
                    self._waiting[text] = left

    def ensure(self, request: SearchRequest) -> None:
        """Make sure ``request``'s query vector is cached, embedding it with the other
        waiting queries not cached yet (on the search's thread; never raises: a failure
        leaves the search to embed and report)."""
        if not embeds_query_as_is(request) or self.engine.query_cache.size <= 0:
            return
        try:
            self._ensure(request.query)
        except Exception:  # the search embeds itself and reports it
            log.debug("query prefetch failed", exc_info=True)

    def _ensure(self, text: str) -> None:
        cache = self.engine.query_cache
        found = self._batch_call()
        if found is None:
            return
        model_id, call = found
        if cache.get(model_id, text) is not None:
            return
        with self._model_lock:
            if cache.get(model_id, text) is not None:  # embedded by the call just ended
                return
            with self._waiting_lock:
                others = [t for t in self._waiting if t != text]
            texts = [text]
            for other in others:
                if len(texts) >= self.max_batch:
                    break
                if cache.get(model_id, other) is None:
                    texts.append(other)
            vectors = call(texts)
            if len(vectors) != len(texts):
                return
            self.calls += 1
            self.queries += len(texts)
            for each, vector in zip(texts, vectors, strict=True):
                cache.put(model_id, each, vector)

    def _batch_call(self) -> tuple[str, Callable[[Sequence[str]], list[Vector]]] | None:
        """The model id and batch call the searches' vectors come from, or None when
        the searches would not embed with this model (nothing embedded, another model,
        a remote provider)."""
        embedder = self.engine.embedder
        inner = getattr(embedder, "inner", embedder)  # the engine's QueryBatcher
        call = query_batch_of(inner)
        if call is None:
            return None
        if self._store_model() != embedder.model_id:
            return None
        return embedder.model_id, call

    def _store_model(self) -> str | None:
        """The store's embedding model, read at most once a second."""
        now = time.monotonic()
        if self._model is None or now - self._model[0] > INFO_FRESH_SECONDS:
            try:
                model = self.engine.store.info().embedding_model
            except KgsearchError:
                model = None
            self._model = (now, model)
        return self._model[1]
