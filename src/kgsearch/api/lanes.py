"""Separate work, separate lanes: searches and chat-model calls on pools of their own.

A request that waits for the chat model (``ask`` with the model, a search with
``keywords: "llm"``) runs on the LLM lane, a bounded pool of its own; a plain search
runs on the search lane. A slow or stalled model then fills only the LLM lane: plain
searches keep their threads, and writes, lookups and ``/health`` keep the request
threads. A streamed answer holds one LLM-lane token while its model call runs and no
request thread at all (the events are relayed to the event loop as they come).

Work on the LLM lane runs under a :class:`~kgsearch.cancel.Cancel` token of its
request: when the client goes away (it closed the connection, or stopped reading a
stream), the token is cancelled and the model call in flight is dropped within a
fraction of a second (its connection closed, its lane token and threads freed)
instead of running to its end for nobody. The model call's own deadline
(``llm.answer_deadline_seconds``, ``llm.deadline_seconds``) cuts it the same way.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import anyio
from fastapi import Request

from kgsearch.cancel import Cancel, cancellable
from kgsearch.engine import Engine
from kgsearch.errors import KgsearchError, ProviderError
from kgsearch.http import public_provider_error

__all__ = [
    "LLM_THREADS",
    "Lanes",
    "on_lane",
    "on_llm_lane",
    "provider_body",
    "relay",
    "stream_events",
    "wants_llm",
]

T = TypeVar("T")
log = logging.getLogger(__name__)

LLM_THREADS = 4
"""Requests waiting for the chat model at once, by default (across all projects)."""


class Lanes:
    """The app's bounded pools.

    Args:
        search: Threads for searches, context and explain without the model.
        llm: Threads for requests that wait for the chat model.
    """

    def __init__(self, search: int, llm: int) -> None:
        self.search = anyio.CapacityLimiter(search)
        self.llm = anyio.CapacityLimiter(llm)


def wants_llm(body: Any) -> bool:
    """Whether serving ``body`` calls the chat model (an answer, or LLM keywords)."""
    return bool(getattr(body, "llm", False)) or getattr(body, "keywords", "off") == "llm"


_GONE = "the client went away"
_WATCH_SECONDS = 0.25


async def on_lane(request: Request, body: Any, work: Callable[[], T]) -> T:
    """Run ``work`` on the lane ``body`` needs (:func:`wants_llm`).

    On the search lane the search deadline (``search.query_deadline_seconds``) runs
    from now, the time queued for a thread included: a search that waited for one has
    only the rest for its remote query embedding, and none left skips it (the vector
    legs, with a warning), so the deadline holds end to end.
    """
    if wants_llm(body):
        return await on_llm_lane(request, work)
    lanes: Lanes = request.app.state.lanes
    engine: Engine = request.app.state.engine
    token = Cancel(deadline=time.monotonic() + engine.query_guard.deadline)

    def within() -> T:
        with cancellable(token):
            return work()

    return await anyio.to_thread.run_sync(within, limiter=lanes.search)


async def on_llm_lane(request: Request, work: Callable[[], T]) -> T:
    """Run ``work`` on the LLM lane under a token of its own, cancelled (its model
    call dropped) if the client goes away before it ends."""
    lanes: Lanes = request.app.state.lanes
    token = Cancel()

    def within() -> T:
        with cancellable(token):
            return work()

    failure: Exception | None = None
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_cancel_when_gone, request, token)
        try:
            done = await anyio.to_thread.run_sync(within, limiter=lanes.llm)
        except Exception as exc:  # raised below, not wrapped in the group's ExceptionGroup
            failure = exc
        finally:
            tasks.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return done


async def _cancel_when_gone(request: Request, token: Cancel) -> None:
    while not await request.is_disconnected():
        await anyio.sleep(_WATCH_SECONDS)
    log.info("%s %s: %s; its model call is dropped", request.method, request.url.path, _GONE)
    token.cancel(_GONE)


def provider_body(exc: ProviderError, engine: Engine) -> dict[str, Any]:
    """The body of a provider failure as clients see it (its kind, never its URL or raw
    error); the whole error is logged here."""
    log.warning("provider failure (%s): %s %s", exc.code, exc.message, exc.details)
    chat = engine.llm_settings.model.partition(":")[0] or "chat"
    try:
        embedder = engine.embedder.model_id.partition(":")[0] or "embedder"
    except KgsearchError:
        embedder = "embedder"
    return public_provider_error(exc, chat=chat, embedder=embedder)


def stream_events(
    request: Request, run: Callable[[Callable[[str], None]], Any]
) -> AsyncIterator[str]:
    """Server-sent events of an answer made on the LLM lane: ``text`` events as the
    model writes, then one ``answer`` (or ``error``) event.

    ``run(on_text)`` makes the answer in a thread of its own; the lane's token is taken
    before it starts and given back when it ends, so streamed answers are bounded like
    the others, and no request thread waits on the stream. A client that stops
    reading (the server then closes the stream) cancels the model call.
    """
    return _sse(relay(request, run))


async def _sse(events: AsyncIterator[tuple[str, Any]]) -> AsyncIterator[str]:
    async for event, data in events:
        yield f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def relay(
    request: Request, run: Callable[[Callable[[str], None]], Any]
) -> AsyncIterator[tuple[str, Any]]:
    """The events of an answer made on the LLM lane, as ``(event, data)`` pairs for a
    route to frame its own way: ``("text", piece)`` as the model writes, then one
    ``("answer", the answer as JSON)`` or ``("error", the error body)``."""
    lanes: Lanes = request.app.state.lanes
    return _events(lanes.llm, run, request.app.state.engine)


async def _events(
    limiter: anyio.CapacityLimiter, run: Callable[[Callable[[str], None]], Any], engine: Engine
) -> AsyncIterator[tuple[str, Any]]:
    loop = asyncio.get_running_loop()
    pieces: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    token = Cancel()
    await limiter.acquire_on_behalf_of(token)
    finished = False

    def put(item: tuple[str, Any]) -> None:
        loop.call_soon_threadsafe(pieces.put_nowait, item)

    def work() -> None:
        try:
            with cancellable(token):
                answer = run(lambda piece: put(("text", piece)))
            put(("answer", answer.model_dump(mode="json")))
        except ProviderError as exc:
            put(("error", provider_body(exc, engine)))
        except KgsearchError as exc:
            put(("error", exc.to_dict()))
        except Exception:  # a bug: reported without internals, like a 500
            log.exception("ask failed unexpectedly")
            put(("error", {"error": {"code": "error", "message": "internal error", "details": {}}}))
        finally:
            loop.call_soon_threadsafe(limiter.release_on_behalf_of, token)

    try:
        threading.Thread(target=work, daemon=True, name="kgsearch-ask").start()
    except BaseException:
        limiter.release_on_behalf_of(token)
        raise
    try:
        while True:
            item = await pieces.get()
            if item[0] != "text":
                finished = True
            yield item
            if finished:
                return
    finally:
        if not finished:  # the stream was closed before its end: nobody reads on
            token.cancel(_GONE)
