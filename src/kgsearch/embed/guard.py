"""A deadline and a circuit breaker for the query embedder, so a hung provider never
holds a search (or the server's request threads) hostage.

A search embeds its query through :meth:`QueryGuard.embed`: the call runs on one of a
few dedicated threads and the search waits at most ``deadline`` seconds for it. A
call that times out or fails counts as a failure; after ``failures`` in a row the
breaker opens and searches skip the embedder at once for ``cooldown`` seconds (their
vector legs are skipped with a warning), then one call is let through to probe it.
When every thread is still waiting on a hung call, a search does not queue behind
them: it is refused at once, the same way. The mechanism is
:class:`kgsearch.http.CallGuard`, shared with the LLM's guard.
"""

from __future__ import annotations

from collections.abc import Callable

from kgsearch.embed.base import Vector
from kgsearch.errors import DimensionMismatch, ProviderError
from kgsearch.http import CallGuard

__all__ = ["EmbedderUnavailable", "QueryGuard"]


class EmbedderUnavailable(ProviderError):
    """The query embedder timed out, failed, or is skipped while it keeps failing."""

    code = "embedder_unavailable"


class QueryGuard(CallGuard):
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
        super().__init__(
            "the query embedding",
            deadline=deadline,
            failures=failures,
            cooldown=cooldown,
            workers=workers,
            passed=(DimensionMismatch,),
            failed=EmbedderUnavailable,
            skipped=EmbedderUnavailable,
        )

    def embed(self, fn: Callable[[str], Vector], text: str) -> Vector:
        """``fn(text)`` within the deadline.

        Raises:
            EmbedderUnavailable: The breaker is open, every thread is waiting on the
                provider, the call took longer than the deadline, or it failed.
            DimensionMismatch: The embedder does not match the stored vectors (a
                configuration error, passed through and never counted).
        """
        return self.call(fn, text)
