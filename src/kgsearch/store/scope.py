"""A read scope: what a store checks for freshness, read once per search.

A search asks its store, leg after leg, whether what it holds in memory is current:
a kind's epoch before its vectors and its rows, the BM25 index's structure records
before its held postings. On SQLite each such check was a statement of its own, five
to eight a search, and on 2 shared cores a statement after other work starts on cold
caches (a one-row read that takes 5 us back to back took 70 after a pause of 5 ms;
``scripts/bench_scan_context.py`` measures the same for the vector product). Inside
:func:`read_scope` (the search pipeline opens one per search) a store may read all of
them in one statement, on the first check, and answer the later ones from it
(:func:`scoped`): the search then sees one snapshot of them, taken before any row or
vector it reads, which keeps the rule every check keeps (a check comes before what it
vouches for: what is read later may be newer, never older).

The scope lives in a context variable: it belongs to the thread that opened it, and
to the work that thread hands to another inside :func:`carried` (a search's legs in
leg workers), and to nothing else.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

__all__ = ["carried", "read_scope", "scoped"]

_T = TypeVar("_T")


class _Memo:
    """One scope's values; the first check of a key reads it while the scope's other
    threads wait (legs started together would each read it otherwise)."""

    def __init__(self) -> None:
        self.values: dict[Hashable, Any] = {}
        self.lock = threading.Lock()


_SCOPE: ContextVar[_Memo | None] = ContextVar("kgsearch_read_scope", default=None)


@contextmanager
def read_scope() -> Iterator[None]:
    """Let the block's freshness checks share one read each (see :func:`scoped`)."""
    with _entered(_Memo()):
        yield


def scoped(key: Hashable, read: Callable[[], _T]) -> _T | None:
    """``read()``'s value, made once per scope under ``key``; None outside a scope
    (the caller checks on its own)."""
    memo = _SCOPE.get()
    if memo is None:
        return None
    if key not in memo.values:
        with memo.lock:
            if key not in memo.values:
                memo.values[key] = read()
    value: _T = memo.values[key]
    return value


def carried() -> AbstractContextManager[None]:
    """The calling thread's read scope (if any), for another thread to enter: work a
    search hands to a worker checks within the search's scope."""
    return _entered(_SCOPE.get())


@contextmanager
def _entered(memo: _Memo | None) -> Iterator[None]:
    token = _SCOPE.set(memo)
    try:
        yield
    finally:
        _SCOPE.reset(token)
