"""FakeLLM: a scripted chat model for unit tests (no network, no randomness).

Replies are queued with :meth:`FakeLLM.enqueue` and handed out in order; a queued
exception is raised instead of answered. Every call is recorded in ``calls``. With an
empty queue the ``default`` reply is returned, or :class:`ProviderError` raised when
there is none, so a test that expected no model call fails loudly.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kgsearch.errors import ProviderError
from kgsearch.llm.base import Completion, Message, Usage

__all__ = ["FakeCall", "FakeLLM"]


@dataclass(frozen=True)
class FakeCall:
    """One call the fake answered: the messages and the options it was given."""

    messages: tuple[Message, ...]
    json_schema: Mapping[str, Any] | None
    temperature: float
    max_tokens: int | None


Reply = str | BaseException | Callable[[Sequence[Message]], str]


class FakeLLM:
    """A chat model that answers from a queue of scripted replies.

    Args:
        replies: Initial replies: a string, an exception to raise, or a function of
            the messages that returns the reply.
        model: The model part of ``model_id`` (``fake:<model>``).
        default: The reply when the queue is empty (None: raise ProviderError).
        price_per_million: US dollars per million tokens for :meth:`estimate_cost`
            (None: no price known).
    """

    def __init__(
        self,
        replies: Sequence[Reply] = (),
        *,
        model: str = "scripted",
        default: Reply | None = None,
        price_per_million: float | None = None,
    ) -> None:
        self._replies: deque[Reply] = deque(replies)
        self._model = model
        self._default = default
        self._price = price_per_million
        self._lock = threading.Lock()
        self.calls: list[FakeCall] = []

    @property
    def model_id(self) -> str:
        """``fake:<model>``."""
        return f"fake:{self._model}"

    def enqueue(self, *replies: Reply) -> None:
        """Queue more replies, answered after the ones already queued."""
        with self._lock:
            self._replies.extend(replies)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion:
        """Answer with the next queued reply (or raise it)."""
        with self._lock:
            self.calls.append(FakeCall(tuple(messages), json_schema, temperature, max_tokens))
            reply = self._replies.popleft() if self._replies else self._default
        if reply is None:
            raise ProviderError(f"{self.model_id}: no scripted reply left")
        if isinstance(reply, BaseException):
            raise reply
        text = reply if isinstance(reply, str) else reply(messages)
        prompt = sum(len(m.content) for m in messages) // 4 + 1
        return Completion(
            text=text,
            usage=Usage(prompt_tokens=prompt, completion_tokens=len(text) // 4 + 1),
            model=self.model_id,
            finish_reason="stop",
        )

    def estimate_cost(self, usage: Usage) -> float | None:
        """``total_tokens × price_per_million / 1e6``, or None without a price."""
        if self._price is None:
            return None
        return usage.total_tokens * self._price / 1_000_000
