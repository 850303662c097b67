"""Statement tracing: a search primitive shows the SQL it runs (sqlite-utils' ``tracer``).

A store primitive that accepts ``trace=`` (see :data:`Trace`) is wrapped in
:func:`traced`, which installs the tracer for the duration of that one call. Both
backends' connections call :func:`report` with every statement and its parameters
just before running it, so every statement the call executes is heard, whichever
helper runs it. The tracer lives in a context variable, so it belongs to the calling
thread: search legs run side by side in worker threads, each with a tracer of its
own, and a store shared by many requests never reports one request's SQL to another.
Work a primitive does outside SQL (an in-memory vector scan) is described through
:func:`note`, heard by tracers that have a ``note(text)`` method.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar, cast

__all__ = ["Trace", "active", "note", "report", "traced", "tracing"]

Trace = Callable[[str, Sequence[Any]], None]
"""Called with each SQL statement a store call runs and its parameters (for a
statement run once per parameter row, the list of rows)."""

_P = ParamSpec("_P")
_R = TypeVar("_R")
_CURRENT: ContextVar[Trace | None] = ContextVar("kgsearch_trace", default=None)


@contextmanager
def tracing(trace: Trace | None) -> Iterator[None]:
    """Report the calling thread's statements to ``trace`` inside the block (None: keep
    the current tracer, if any)."""
    if trace is None:
        yield
        return
    token = _CURRENT.set(trace)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def traced(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Wrap a store method whose keyword ``trace`` (a :data:`Trace` or None) hears every
    statement the call runs; without one the call runs as it is."""

    @functools.wraps(method)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        trace = cast("Trace | None", kwargs.get("trace"))
        if trace is None:
            return method(*args, **kwargs)
        with tracing(trace):
            return method(*args, **kwargs)

    return call


def report(sql: str, params: Sequence[Any]) -> None:
    """Tell the calling thread's tracer, if any, about a statement about to run."""
    trace = _CURRENT.get()
    if trace is not None:
        trace(sql, params)


def note(text: str) -> None:
    """Tell the calling thread's tracer, if it takes notes, about work done outside SQL."""
    trace = _CURRENT.get()
    take = getattr(trace, "note", None)
    if callable(take):
        take(text)


def active() -> bool:
    """Whether the calling thread's statements are being traced (so that notes are only
    worded when someone reads them)."""
    return _CURRENT.get() is not None
