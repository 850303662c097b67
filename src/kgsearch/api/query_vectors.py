"""Query vectors ahead of the search lane: concurrent searches share one model call.

A search's query embedding is a third of its CPU with the bundled model, and the
model's cost per query falls as queries share a call (its weights are read once per
call: 5.3 ms of CPU for one short query alone, about 3 for each of 8 together). Inside
the search lane at most as many queries meet as the lane has threads (2 on 2 cores),
so the engine's own batching (:class:`~kgsearch.embed.batching.QueryBatcher`) rarely
sees more than 2.

:class:`QueryPrefetch` embeds on the event loop's side instead: each search that will
embed its query as it is queues the text before it waits for a search thread; one
model call at a time (on a thread of its own) takes every text queued meanwhile, and
the vectors go into the engine's query cache, where the search then finds them. No
window is waited: a lone query goes at once, and under load the queue fills while
the previous call runs.

Only what the search would embed itself is embedded: the query as it is, when the
request asks no keywords, gives no type hint (both change the text) and has a vector
leg, the store holds vectors of the engine's model, and the model is local. Anything
else, and any failure, leaves the search to embed (and report) as it always did.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import anyio

from kgsearch.embed.base import Vector
from kgsearch.embed.batching import query_batch_of
from kgsearch.errors import KgsearchError
from kgsearch.search.request import SearchRequest

if TYPE_CHECKING:
    from kgsearch.engine import Engine

__all__ = ["MAX_BATCH", "QueryPrefetch", "embeds_query_as_is"]

log = logging.getLogger(__name__)

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


class QueryPrefetch:
    """Embeds the queries of concurrent searches together, into the engine's cache.

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
        self._queue: list[tuple[str, asyncio.Future[None]]] = []
        self._running = False
        self._limiter = anyio.CapacityLimiter(1)
        self._model: tuple[float, str | None] | None = None  # (when read, the store's)

    async def prime(self, request: SearchRequest) -> None:
        """Return once ``request``'s query vector is in the cache, or once it is clear
        that the search should embed it itself (never raises)."""
        if not embeds_query_as_is(request) or self.engine.query_cache.size <= 0:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((request.query, future))
        if not self._running:
            self._running = True
            asyncio.get_running_loop().create_task(self._drain())
        await future

    async def _drain(self) -> None:
        """Run model calls until the queue is empty, each for all that waits."""
        try:
            while self._queue:
                batch = self._queue[: self.max_batch]
                del self._queue[: self.max_batch]
                texts = list(dict.fromkeys(text for text, _ in batch))
                try:
                    await anyio.to_thread.run_sync(self._embed, texts, limiter=self._limiter)
                except Exception:  # the searches embed themselves and report it
                    log.debug("query prefetch failed", exc_info=True)
                for _, future in batch:
                    if not future.done():
                        future.set_result(None)
        finally:
            self._running = False
            for _, future in self._queue:  # only left when cancelled mid-way
                if not future.done():
                    future.set_result(None)
            self._queue.clear()

    def _embed(self, texts: Sequence[str]) -> None:
        """Embed the texts not cached yet in one call and cache them (a thread)."""
        found = self._batch_call()
        if found is None:
            return
        model_id, call = found
        cache = self.engine.query_cache
        missing = [t for t in texts if cache.get(model_id, t) is None]
        if not missing:
            return
        vectors = call(missing)
        if len(vectors) != len(missing):
            return
        self.calls += 1
        self.queries += len(missing)
        for text, vector in zip(missing, vectors, strict=True):
            cache.put(model_id, text, vector)

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
