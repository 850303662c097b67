"""Cancelling provider calls in flight: a :class:`Cancel` token the caller holds, and an
HTTP transport whose reads give up once that token is cancelled.

Python cannot stop a thread. A provider call that outlived its caller (a deadline
passed, the client went away) used to keep its thread, its connection and its slot of
the provider's concurrency until the provider answered, or until the client's own
timeout (two minutes; never, for a stream that keeps trickling). Here the caller's
token is a context variable (:func:`cancellable`), and a provider's HTTP client built
on :func:`cancellable_transport` reads its socket in short slices: between two slices
it checks the token of the call it reads for, so a cancelled call ends within
:data:`POLL_SECONDS`, its connection closed (the provider sees the request dropped).
Retry waits (:meth:`Cancel.wait`) end at once too. A token may have a parent: a
guard's per-call token is cancelled when the request that made the call is.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from kgsearch.errors import ProviderError

if TYPE_CHECKING:
    import httpx

__all__ = [
    "POLL_SECONDS",
    "CallCancelled",
    "Cancel",
    "cancellable",
    "cancellable_transport",
    "check_cancelled",
    "current",
    "pause",
]

POLL_SECONDS = 0.2
"""How often a read waiting on a provider looks at its call's token."""

_CURRENT: contextvars.ContextVar[Cancel | None] = contextvars.ContextVar(
    "kgsearch_cancel", default=None
)


class CallCancelled(ProviderError):
    """A provider call was given up by its caller (deadline, client gone) while in
    flight; its connection was closed."""

    code = "call_cancelled"


class Cancel:
    """A cancellation token, safe to cancel from any thread.

    Args:
        parent: A token whose cancellation cancels this one too.
        deadline: When the work it stands for must be done (``time.monotonic()``
            seconds), if it has a deadline: a guarded call waits at most the time left
            (:meth:`remaining`), its parent's deadline included.
    """

    def __init__(self, parent: Cancel | None = None, *, deadline: float | None = None) -> None:
        self._parent = parent
        self._deadline = deadline
        self._event = threading.Event()
        self._reason: str | None = None

    def remaining(self) -> float | None:
        """Seconds left before the nearest deadline (this token's or a parent's), or
        None when neither has one."""
        own = None if self._deadline is None else self._deadline - time.monotonic()
        inherited = None if self._parent is None else self._parent.remaining()
        if own is None or inherited is None:
            return own if inherited is None else inherited
        return min(own, inherited)

    def cancel(self, reason: str) -> None:
        """Cancel the calls made under this token (the first reason is kept)."""
        if not self._event.is_set():
            self._reason = reason
            self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether this token (or a parent) is cancelled."""
        return self._event.is_set() or (self._parent is not None and self._parent.cancelled)

    @property
    def reason(self) -> str | None:
        """Why it was cancelled (this token's reason, else its parent's)."""
        if self._event.is_set():
            return self._reason
        return self._parent.reason if self._parent is not None else None

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``, less if cancelled meanwhile; whether it was."""
        end = time.monotonic() + seconds
        while not self.cancelled:
            left = end - time.monotonic()
            if left <= 0:
                return False
            self._event.wait(min(left, POLL_SECONDS))
        return True


def current() -> Cancel | None:
    """The token of the call being made in this context, if any."""
    return _CURRENT.get()


@contextmanager
def cancellable(token: Cancel) -> Iterator[Cancel]:
    """Make the provider calls inside the block (in this context) under ``token``."""
    reset = _CURRENT.set(token)
    try:
        yield token
    finally:
        _CURRENT.reset(reset)


def check_cancelled(what: str) -> None:
    """Raise :class:`CallCancelled` if the current call is cancelled.

    Args:
        what: The call, for the message (``the LLM``, a URL...).
    """
    token = _CURRENT.get()
    if token is not None and token.cancelled:
        raise CallCancelled(f"{what} was cancelled: {token.reason}")


def pause(seconds: float) -> None:
    """``time.sleep`` that ends early when the current call is cancelled (a retry's
    backoff)."""
    token = _CURRENT.get()
    if token is None:
        time.sleep(seconds)
    else:
        token.wait(seconds)


def cancellable_transport(**options: Any) -> httpx.HTTPTransport:
    """An httpx transport (``options`` are :class:`httpx.HTTPTransport`'s) whose reads
    end within :data:`POLL_SECONDS` once the current call's token is cancelled.

    httpx has no public hook for this: the transport's connection pool gets a network
    backend that wraps the usual one. Should a later httpx not have that pool, the
    plain transport is returned (calls are then given up by their guard's deadline but
    left to the client's timeout), and ``tests/unit/test_cancel.py`` fails.
    """
    import httpx

    transport = httpx.HTTPTransport(**options)
    pool = getattr(transport, "_pool", None)
    inner = getattr(pool, "_network_backend", None)
    if inner is not None:
        pool._network_backend = _Backend(inner)  # type: ignore[union-attr]
    return transport


class _Backend:
    """httpcore's network backend, handing out :class:`_Stream` connections."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def connect_tcp(self, *args: Any, **kwargs: Any) -> _Stream:
        return _Stream(self._inner.connect_tcp(*args, **kwargs))

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> _Stream:
        return _Stream(self._inner.connect_unix_socket(*args, **kwargs))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _Stream:
    """A connection whose reads wait in slices and stop when the call is cancelled.

    httpcore reads on the calling thread, so the token in this context is the one of
    the call the bytes are for, whichever call opened the (pooled) connection. A slice
    that times out has read nothing and leaves the socket as it was.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        token = _CURRENT.get()
        if token is None:
            return bytes(self._inner.read(max_bytes, timeout))
        import httpcore

        end = None if timeout is None else time.monotonic() + timeout
        while True:
            if token.cancelled:
                raise httpcore.ReadError(f"cancelled: {token.reason}")
            left = POLL_SECONDS if end is None else min(POLL_SECONDS, end - time.monotonic())
            if left <= 0:
                raise httpcore.ReadTimeout("timed out")
            try:
                return bytes(self._inner.read(max_bytes, left))
            except httpcore.ReadTimeout:
                continue

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        token = _CURRENT.get()
        if token is not None and token.cancelled:
            import httpcore

            raise httpcore.WriteError(f"cancelled: {token.reason}")
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, *args: Any, **kwargs: Any) -> _Stream:
        return _Stream(self._inner.start_tls(*args, **kwargs))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)
