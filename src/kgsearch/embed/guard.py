"""A deadline and a circuit breaker for the query embedder, so a hung provider never
holds a search (or the server's request threads) hostage.

A search embeds its query through :meth:`QueryGuard.embed`: the call runs on one of a
few dedicated threads and the search waits at most ``deadline`` seconds for it. A
call that times out or fails counts as a failure; after ``failures`` in a row the
breaker opens and searches skip the embedder at once for ``cooldown`` seconds (their
vector legs are skipped with a warning), then one call is let through to probe it.
When every thread is still waiting on a hung call, a search does not queue behind
them: it is refused at once, the same way. The provider's own threads are never
cancelled (Python cannot), but they are bounded by ``workers``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from kgsearch.embed.base import Vector
from kgsearch.errors import DimensionMismatch, ProviderError

__all__ = ["EmbedderUnavailable", "QueryGuard"]


class EmbedderUnavailable(ProviderError):
    """The query embedder timed out, failed, or is skipped while it keeps failing."""

    code = "embedder_unavailable"


class QueryGuard:
    """Deadline, bounded threads and circuit breaker around query embedding.

    Args:
        deadline: Seconds a search waits for its query vector.
        failures: Failures in a row that open the breaker.
        cooldown: Seconds the open breaker skips the embedder before probing it.
        workers: Threads that may wait on the provider at once.
    """

    def __init__(
        self,
        *,
        deadline: float = 5.0,
        failures: int = 3,
        cooldown: float = 30.0,
        workers: int = 4,
    ) -> None:
        self.deadline = deadline
        self.failures = failures
        self.cooldown = cooldown
        self._workers = workers
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="query-embed")
        self._lock = threading.Lock()
        self._busy = 0
        self._failed = 0
        self._open_until = 0.0

    def embed(self, fn: Callable[[str], Vector], text: str) -> Vector:
        """``fn(text)`` within the deadline.

        Raises:
            EmbedderUnavailable: The breaker is open, every thread is waiting on the
                provider, the call took longer than the deadline, or it failed.
            DimensionMismatch: The embedder does not match the stored vectors (a
                configuration error, passed through and never counted).
        """
        with self._lock:
            now = time.monotonic()
            if now < self._open_until:
                raise EmbedderUnavailable(
                    f"the embedder failed {self._failed} times in a row; skipped for "
                    f"another {self._open_until - now:.0f} s"
                )
            if self._busy >= self._workers:
                raise EmbedderUnavailable(
                    "the embedder is not answering (every query thread is waiting on it)"
                )
            self._busy += 1
        future: Future[Vector] = self._pool.submit(self._run, fn, text)
        try:
            vector = future.result(timeout=self.deadline)
        except FutureTimeout:
            self._failure()
            raise EmbedderUnavailable(
                f"the query embedding took longer than {self.deadline:g} s"
            ) from None
        except DimensionMismatch:
            raise
        except Exception as exc:
            self._failure()
            raise EmbedderUnavailable(f"{type(exc).__name__}: {exc}") from exc
        with self._lock:
            self._failed = 0
        return vector

    def _run(self, fn: Callable[[str], Vector], text: str) -> Vector:
        try:
            return fn(text)
        finally:
            with self._lock:
                self._busy -= 1

    def _failure(self) -> None:
        with self._lock:
            self._failed += 1
            if self._failed >= self.failures:
                self._open_until = time.monotonic() + self.cooldown

    def close(self) -> None:
        """Stop taking calls (threads still waiting on a provider are left to finish)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
