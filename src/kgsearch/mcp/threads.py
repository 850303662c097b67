"""Tool calls in worker threads that stop their model calls when the call is cancelled.

The engine is synchronous, so each tool runs in a worker thread. When a client cancels
a tool call (``notifications/cancelled``, sent by the SDK when the client abandons a
request) or its session ends, the SDK cancels the handler; a thread cannot be stopped,
but the call's :class:`~kgsearch.cancel.Cancel` token can: a provider call in flight
under it closes its connection within :data:`~kgsearch.cancel.POLL_SECONDS` (the
provider sees the request dropped), and its retry waits end at once, so the thread and
its slot of the LLM lane are given back instead of waiting for the model to answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

from kgsearch.cancel import Cancel, cancellable

__all__ = ["CANCELLED", "run_tool"]

log = logging.getLogger(__name__)

T = TypeVar("T")

CANCELLED = "the client cancelled the tool call"
"""The reason a cancelled call's token carries."""


async def run_tool(fn: Callable[[], T], *, limiter: anyio.CapacityLimiter | None = None) -> T:
    """Run ``fn`` in a worker thread under a token of its own, cancelled (its model
    calls dropped) if this call is cancelled before ``fn`` returns."""
    token = Cancel()

    def within() -> T:
        with cancellable(token):
            return fn()

    try:
        return await anyio.to_thread.run_sync(within, limiter=limiter, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        log.info("%s; its model calls are dropped", CANCELLED)
        token.cancel(CANCELLED)
        raise
