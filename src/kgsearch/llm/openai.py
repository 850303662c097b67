"""Chat completions from any OpenAI-compatible ``/chat/completions`` endpoint, over httpx.

One adapter covers OpenAI, Ollama, vLLM, LM Studio and the llama.cpp server: they all
accept ``{"model", "messages", "temperature", "max_tokens", "response_format"}`` and
answer ``{"choices": [{"message": {"content"}, "finish_reason"}], "usage"}``. Retries
are :func:`kgsearch.http.post_json`'s; a semaphore caps the requests in flight across
threads; structured output is asked for with ``response_format`` where the server
takes it, and dropped for good when it answers 400 about it.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from kgsearch.cancel import cancellable_transport, check_cancelled
from kgsearch.errors import MissingCredentials, ProviderError
from kgsearch.http import (
    OPENAI_HOST,
    RetryPolicy,
    json_body,
    post_json,
    status_error,
)
from kgsearch.llm.base import Completion, Message, Usage

if TYPE_CHECKING:
    import httpx

__all__ = ["OPENAI_PRICES", "JsonMode", "OpenAIChat"]

JsonMode = Literal["auto", "schema", "object", "off"]

# US dollars per million (input, output) tokens: OpenAI's list prices for the standard
# tier (no batch discount, no cached-input discount), from https://openai.com/api/pricing/
# as of 2025 (gpt-3.5-turbo is the 0125 snapshot's price). List prices change: pass
# ``prices=`` to override, and treat estimates as estimates.
OPENAI_PRICES: Mapping[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-3.5-turbo": (0.50, 1.50),
}

_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")


class OpenAIChat:
    """A chat model behind an OpenAI-compatible ``POST {base_url}/chat/completions``.

    Args:
        model: The server's model name, e.g. ``gpt-4o-mini`` or ``llama3.1``.
        base_url: The API root including the version, e.g. ``https://api.openai.com/v1``
            or ``http://localhost:11434/v1``.
        api_key: Sent as a bearer token; required for ``api.openai.com``.
        provider: The provider part of :attr:`model_id` (``openai``, ``ollama``, ...).
        timeout: Seconds per attempt.
        max_retries: Retries after the first attempt on 408, 429, 500, 502, 503, 504,
            dropped connections and timeouts.
        backoff: Seconds before the first retry; doubled for each further retry. A
            ``Retry-After`` of at most 60 s (seconds or an HTTP date) takes precedence.
        max_concurrency: Requests in flight at once, over all threads using this client.
        json_mode: What a ``json_schema`` turns into: ``"schema"`` sends
            ``response_format={"type": "json_schema", ...}``, ``"object"`` sends
            ``{"type": "json_object"}`` (OpenAI then wants the word "JSON" in the
            prompt), ``"off"`` sends nothing, and ``"auto"`` sends the schema but, when
            the server answers 400 about ``response_format``, repeats the request
            without it and stops sending it.
        prices: US dollars per million (input, output) tokens, overriding the built-in
            :data:`OPENAI_PRICES`.

    Raises:
        MissingCredentials: ``base_url`` is api.openai.com and no ``api_key`` is given.
        ValueError: ``max_concurrency`` is below 1 or ``json_mode`` is unknown.

    :meth:`estimate_cost` knows OpenAI's prices only for api.openai.com; any other
    server (a proxy, Azure, a self-hosted vLLM) has no known price unless ``prices`` is
    given. The ``ollama`` registry entry passes ``prices=(0, 0)``. The client is
    thread-safe; call :meth:`close` (or use ``with``) when done.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        provider: str = "openai",
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_concurrency: int = 4,
        json_mode: JsonMode = "auto",
        prices: tuple[float, float] | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        if json_mode not in ("auto", "schema", "object", "off"):
            raise ValueError(f"unknown json_mode {json_mode!r}")
        self._on_openai = urlsplit(base_url).hostname == OPENAI_HOST
        if api_key is None and self._on_openai:
            raise MissingCredentials(
                f"No API key for {base_url}: set KGSEARCH_LLM__API_KEY (or pass api_key=...).",
                details={"provider": provider, "base_url": base_url},
            )
        self._model = model
        self._provider = provider
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._retry = RetryPolicy(max_retries=max_retries, backoff=backoff)
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._json_mode = json_mode
        self._response_format_ok = True
        self._prices = prices
        self._has_key = api_key is not None
        import httpx  # imported when a client is made: the engine loads faster without it

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # reads that stop when the call is cancelled (its deadline, its client gone)
        self._client = httpx.Client(
            headers=headers, timeout=timeout, transport=cancellable_transport()
        )

    @property
    def model_id(self) -> str:
        """``<provider>:<model>``, e.g. ``openai:gpt-4o-mini``."""
        return f"{self._provider}:{self._model}"

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion:
        """Answer ``messages`` with one chat completion.

        Args:
            messages: The conversation, system message first.
            json_schema: Ask for JSON matching this schema (see ``json_mode``); the
                reply is returned as text, fences and all.
            temperature: Sampling temperature.
            max_tokens: Cap on the reply's tokens.

        Returns:
            The reply text, token usage (estimated at four characters per token when
            the server reports none) and the finish reason.

        Raises:
            ProviderError: The server failed after all retries, timed out, or answered
                with something that is not a chat completion.
            MissingCredentials: The server answered 401 and no key was configured.
        """
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": temperature,
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        response_format = self._response_format(json_schema)
        if response_format is not None:
            body["response_format"] = response_format
        response, attempts = post_json(
            self._client, self._url, body, self._retry, limit=self._slots
        )
        if response_format is not None and self._rejects_response_format(response):
            # Some OpenAI-compatible servers (and older builds of others) reject a
            # response_format they do not implement; the prompt is then the only
            # thing asking for JSON, and asking again each call would cost a 400.
            self._response_format_ok = False
            del body["response_format"]
            response, attempts = post_json(
                self._client, self._url, body, self._retry, limit=self._slots
            )
        if not response.is_success:
            raise self._error(response, attempts)
        return self._parse(json_body(response), messages)

    def complete_streaming(
        self,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], None],
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion:
        """Answer ``messages`` with a streamed chat completion (``"stream": true``,
        server-sent events), calling ``on_text`` with each piece as it arrives.

        A server that answers with a whole completion instead is read as one. Nothing
        is retried once text has arrived (it was shown already); before that, a
        refused connection or a timeout is a :class:`ProviderError` like
        :meth:`complete`'s. A stream whose call is cancelled (:mod:`kgsearch.cancel`:
        its guard's deadline passed, its client went away) is cut there, stalled or
        not, and its connection closed.

        Raises:
            ProviderError: The server failed, timed out or sent no chat completion.
            MissingCredentials: The server answered 401 and no key was configured.
            CallCancelled: The call was cancelled while the stream was read.
        """
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": temperature,
            "stream": True,
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        import httpx

        parts: list[str] = []
        finish: str | None = None
        reported: Any = None
        try:
            with self._slots, self._client.stream("POST", self._url, json=body) as response:
                if not response.is_success:
                    response.read()
                    raise self._error(response, 1)
                if "text/event-stream" not in response.headers.get("content-type", ""):
                    response.read()
                    completion = self._parse(json_body(response), messages)
                    on_text(completion.text)
                    return completion
                for line in response.iter_lines():
                    event = _event(line)
                    if event is None:
                        continue
                    reported = event.get("usage") or reported
                    for choice in event.get("choices") or []:
                        piece = (choice.get("delta") or {}).get("content")
                        if isinstance(piece, str) and piece:
                            parts.append(piece)
                            on_text(piece)
                        finish = choice.get("finish_reason") or finish
        except httpx.HTTPError as exc:
            check_cancelled(self._url)  # cut at its deadline or its client gone
            raise ProviderError(
                f"{self._url} failed while streaming: {type(exc).__name__}: {exc}",
                details={"url": self._url},
            ) from exc
        text = "".join(parts)
        return Completion(
            text=text,
            usage=_usage(reported, messages, text),
            model=self.model_id,
            finish_reason=finish if isinstance(finish, str) else None,
        )

    def estimate_cost(self, usage: Usage) -> float | None:
        """US dollars ``usage`` costs at list price, or None when no price is known."""
        prices = self._prices
        if prices is None and self._on_openai:
            prices = OPENAI_PRICES.get(self._model)
        if prices is None:
            return None
        per_input, per_output = prices
        return (usage.prompt_tokens * per_input + usage.completion_tokens * per_output) / 1e6

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> OpenAIChat:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _response_format(self, json_schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if json_schema is None or self._json_mode == "off":
            return None
        if self._json_mode == "object":
            return {"type": "json_object"}
        if self._json_mode == "auto" and not self._response_format_ok:
            return None
        name = _SCHEMA_NAME.sub("_", str(json_schema.get("title") or "response"))[:64]
        return {"type": "json_schema", "json_schema": {"name": name, "schema": dict(json_schema)}}

    def _rejects_response_format(self, response: httpx.Response) -> bool:
        text = response.text.lower()
        return (
            self._json_mode == "auto"
            and response.status_code == 400
            and ("response_format" in text or "response format" in text)
        )

    def _error(self, response: httpx.Response, attempts: int) -> ProviderError:
        error = status_error(response, attempts)
        if response.status_code == 401 and not self._has_key:
            return MissingCredentials(
                f"{self._url} answered 401 Unauthorized and no API key is configured: "
                "set KGSEARCH_LLM__API_KEY.",
                details=error.details,
            )
        return error

    def _parse(self, payload: Any, messages: Sequence[Message]) -> Completion:
        try:
            choice = payload["choices"][0]
            message = choice["message"]
            text = message.get("content")
            finish_reason = choice.get("finish_reason")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ProviderError(
                f"{self._url} did not return a chat completion: {exc!r}",
                details={"url": self._url, "body": str(payload)[:300]},
            ) from exc
        if not isinstance(text, str):
            # OpenAI answers a structured-output refusal with content null.
            reason = message.get("refusal") or f"finish_reason={finish_reason!r}"
            raise ProviderError(
                f"{self.model_id} returned no text: {reason}",
                details={"url": self._url, "finish_reason": finish_reason},
            )
        return Completion(
            text=text,
            usage=_usage(payload.get("usage"), messages, text),
            model=self.model_id,
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        )


def _usage(reported: Any, messages: Sequence[Message], text: str) -> Usage:
    """The server's token counts, or four characters per token when it sent none."""
    if isinstance(reported, Mapping):
        prompt = reported.get("prompt_tokens")
        completion = reported.get("completion_tokens")
        if isinstance(prompt, int) and isinstance(completion, int):
            return Usage(prompt_tokens=prompt, completion_tokens=completion)
    prompt_chars = sum(len(m.content) for m in messages)
    return Usage(prompt_tokens=prompt_chars // 4 + 1, completion_tokens=len(text) // 4 + 1)


def _event(line: str) -> dict[str, Any] | None:
    """The JSON of one server-sent ``data:`` line (None for comments, blanks, [DONE])."""
    if not line.startswith("data:"):
        return None
    data = line[5:].strip()
    if not data or data == "[DONE]":
        return None
    try:
        event = json.loads(data)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None
