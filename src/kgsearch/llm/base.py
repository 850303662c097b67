"""The LLM protocol: chat messages in, text and token usage out.

Providers (``llm/openai.py``), the response cache (``llm/cache.py``) and the test double
(``llm/fake.py``) all implement :class:`LLM`. Extraction, description merging and
community reports call only this protocol, so they never know which server answered,
or whether the answer came from the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "LLM",
    "Completion",
    "Forgetting",
    "Message",
    "Streaming",
    "Usage",
    "complete_streaming",
]

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: Role
    content: str


@dataclass(frozen=True)
class Usage:
    """Tokens a call took, as the server reported them (or as estimated when it did not)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True)
class Completion:
    """A model's reply.

    Attributes:
        text: The reply text exactly as the model wrote it (fences, prose and all).
        usage: Tokens the call took.
        model: The model that answered (``provider:model``).
        cached: True when the reply came from the response cache (no model call).
        finish_reason: The server's finish reason (``"length"`` means truncated).
    """

    text: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    cached: bool = False
    finish_reason: str | None = None


@runtime_checkable
class LLM(Protocol):
    """A chat model.

    ``model_id`` is ``provider:model`` and is recorded with every extraction.
    Implementations raise :class:`kgsearch.errors.ProviderError` when the call fails
    after their retries (timeouts, refused connections, 4xx/5xx).
    """

    @property
    def model_id(self) -> str:
        """``provider:model``, e.g. ``openai:gpt-4o-mini``."""
        ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion:
        """Answer ``messages``.

        Args:
            messages: The conversation, system message first.
            json_schema: Ask for JSON matching this schema where the server supports
                structured output (the reply is still text; parse it).
            temperature: Sampling temperature.
            max_tokens: Cap on the reply's tokens.
        """
        ...

    def estimate_cost(self, usage: Usage) -> float | None:
        """US dollars ``usage`` costs with this model, or None when no price is known."""
        ...


@runtime_checkable
class Forgetting(Protocol):
    """A model wrapper that keeps replies (a cache) and can drop one its caller could
    not use, so a retry asks the model again instead of replaying the bad reply."""

    def forget(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> None:
        """Drop the kept reply to this request, if any."""
        ...


@runtime_checkable
class Streaming(Protocol):
    """A chat model that can hand its reply over piece by piece as it is written."""

    def complete_streaming(
        self,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], None],
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion:
        """Answer ``messages``, calling ``on_text`` with each new piece of the reply;
        returns the whole reply as :meth:`LLM.complete` would."""
        ...


def complete_streaming(
    llm: LLM,
    messages: Sequence[Message],
    *,
    on_text: Callable[[str], None],
    temperature: float = 0.0,
    max_tokens: int | None = None,
) -> Completion:
    """The reply of ``llm``, streamed to ``on_text`` when the model can stream, else
    handed to ``on_text`` whole once it is complete."""
    if isinstance(llm, Streaming):
        return llm.complete_streaming(
            messages, on_text=on_text, temperature=temperature, max_tokens=max_tokens
        )
    completion = llm.complete(messages, temperature=temperature, max_tokens=max_tokens)
    on_text(completion.text)
    return completion
