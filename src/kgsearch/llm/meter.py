"""What a request's model calls spent: a :class:`Meter` the caller opens around its work.

A server opens a meter around one spending request (:func:`metered`) and every model
call that really reaches the provider inside it adds its tokens and price
(:func:`charge`, called by :class:`kgsearch.llm.guard.GuardedLLM`). Replies served from
the response cache or replayed from a file never reach the provider, so they cost
nothing here. The current meter is a context variable: threads started with a copy of
the caller's context (``anyio.to_thread``, :func:`in_context`) charge the same meter.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from kgsearch.llm.base import Usage

__all__ = ["Meter", "charge", "in_context", "metered"]

P = ParamSpec("P")
T = TypeVar("T")

_CURRENT: contextvars.ContextVar[Meter | None] = contextvars.ContextVar(
    "kgsearch_llm_meter", default=None
)


class Meter:
    """Calls, tokens and US dollars spent, added to from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.usage = Usage()
        self.cost_usd = 0.0

    def add(self, usage: Usage, cost_usd: float | None) -> None:
        """Count one model call of ``usage`` (and its price, when known)."""
        with self._lock:
            self.calls += 1
            self.usage = self.usage + usage
            self.cost_usd += cost_usd or 0.0


@contextmanager
def metered(meter: Meter) -> Iterator[Meter]:
    """Charge the model calls made inside the block (in this context) to ``meter``."""
    token = _CURRENT.set(meter)
    try:
        yield meter
    finally:
        _CURRENT.reset(token)


def charge(usage: Usage, cost_usd: float | None) -> None:
    """Add one model call to the current meter, if a caller opened one."""
    meter = _CURRENT.get()
    if meter is not None:
        meter.add(usage, cost_usd)


def in_context(fn: Callable[P, T]) -> Callable[P, T]:
    """``fn`` run in a copy of the caller's context (for work handed to a thread pool,
    whose threads would otherwise charge no meter)."""
    context = contextvars.copy_context()

    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        return context.copy().run(fn, *args, **kwargs)

    return run
