"""A guarded chat model: a deadline per call and a circuit breaker, so a hung or
failing LLM never holds an extraction run, a summary run or a request for long.

:class:`GuardedLLM` wraps a provider (inside the response cache, so cached replies
never touch it) and sends each call through a :class:`kgsearch.http.CallGuard`
shared by every extractor of an engine: a call waits at most ``deadline`` seconds,
and after a few failures in a row calls are refused at once with
:class:`LLMSkipped` until the cooldown ends. Job runners stop on ``LLMSkipped``
(nothing was attempted, so no chunk loses an attempt) and record ``LLMUnavailable``
(a timeout or a failure) on the rows they claimed. Every reply that reaches the
provider is charged to the caller's :class:`kgsearch.llm.meter.Meter`, if it opened one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kgsearch.errors import MissingCredentials, ProviderError
from kgsearch.http import CallGuard, ProviderSkipped
from kgsearch.llm.base import LLM, Completion, Message, Usage, complete_streaming
from kgsearch.llm.meter import charge

__all__ = ["GuardedLLM", "LLMSkipped", "LLMUnavailable", "llm_guard"]


class LLMUnavailable(ProviderError):
    """An LLM call took longer than its deadline or failed."""

    code = "llm_unavailable"


class LLMSkipped(LLMUnavailable, ProviderSkipped):
    """The LLM was not called: it keeps failing (breaker open) or every thread is
    still waiting on it."""

    code = "llm_unavailable"


def llm_guard(
    *, deadline: float = 600.0, failures: int = 3, cooldown: float = 60.0, workers: int = 8
) -> CallGuard:
    """The guard an engine shares between its LLM extractors and summaries."""
    return CallGuard(
        "the LLM",
        deadline=deadline,
        failures=failures,
        cooldown=cooldown,
        workers=workers,
        passed=(MissingCredentials,),
        failed=LLMUnavailable,
        skipped=LLMSkipped,
    )


class GuardedLLM:
    """``llm`` whose calls go through ``guard`` (deadline, bounded threads, breaker).

    Args:
        llm: The provider.
        guard: Usually one per engine, so every extractor shares the breaker.
    """

    def __init__(self, llm: LLM, guard: CallGuard) -> None:
        self._llm = llm
        self._guard = guard

    @property
    def model_id(self) -> str:
        """The wrapped model's id."""
        return self._llm.model_id

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion:
        """The wrapped model's reply, within the guard's deadline.

        Raises:
            LLMSkipped: The breaker is open or every guard thread is busy.
            LLMUnavailable: The call took longer than the deadline or failed.
            MissingCredentials: The provider needs a key (passed through).
        """
        completion = self._guard.call(
            self._llm.complete,
            messages,
            json_schema=json_schema,
            temperature=temperature,
            max_tokens=max_tokens,
        )
        return self._charged(completion)

    def complete_streaming(
        self,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], None],
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion:
        """The wrapped model's reply, streamed to ``on_text`` when it can stream (from
        the guard's thread), within the same deadline and breaker as :meth:`complete`."""
        completion = self._guard.call(
            complete_streaming,
            self._llm,
            messages,
            on_text=on_text,
            temperature=temperature,
            max_tokens=max_tokens,
        )
        return self._charged(completion)

    def _charged(self, completion: Completion) -> Completion:
        """``completion``, its tokens and price added to the caller's meter (if any)."""
        if not completion.cached:
            charge(completion.usage, self._llm.estimate_cost(completion.usage))
        return completion

    def estimate_cost(self, usage: Usage) -> float | None:
        """The wrapped model's estimate."""
        return self._llm.estimate_cost(usage)
