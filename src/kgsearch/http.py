"""Retrying JSON POSTs to provider HTTP APIs (OpenAI-compatible embedders and chat models).

:func:`post_json` sends one request body, retrying rate limits (429), transient server
errors (408, 500, 502, 503, 504), dropped connections and timeouts. It waits what a
``Retry-After`` header asks for when that is a reasonable amount (0–60 s, seconds or an
HTTP date), else an exponential backoff. Transport failures that outlast the retries
become :class:`~kgsearch.errors.ProviderError`; an HTTP error response is handed back,
because what it means (missing key, unsupported option) is the provider's to decide.
:func:`status_error` and :func:`json_body` turn responses into errors and JSON the same
way for every provider.
"""

from __future__ import annotations

import contextlib
import email.utils
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from kgsearch.errors import ProviderError

__all__ = [
    "OPENAI_BASE_URL",
    "OPENAI_HOST",
    "RETRY_STATUSES",
    "RetryPolicy",
    "excerpt",
    "json_body",
    "post_json",
    "retry_after_seconds",
    "status_error",
]

OPENAI_HOST = "api.openai.com"
OPENAI_BASE_URL = f"https://{OPENAI_HOST}/v1"
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_BODY_EXCERPT = 300


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long :func:`post_json` retries.

    Attributes:
        max_retries: Retries after the first attempt.
        backoff: Seconds before the first retry; doubled for each further retry.
        max_retry_after: The longest ``Retry-After`` honoured; a longer (or
            unparseable) one falls back to the backoff.
    """

    max_retries: int = 3
    backoff: float = 0.5
    max_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: str | None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (from 0)."""
        asked = retry_after_seconds(retry_after)
        # The OpenAI SDKs (Stainless `_calculate_retry_timeout`) do the same: obey the
        # server when it asks for a reasonable wait, back off on their own otherwise.
        if asked is not None and 0.0 <= asked <= self.max_retry_after:
            return asked
        return float(self.backoff * 2**attempt)


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """Parse a ``Retry-After`` header: delta seconds or an HTTP date.

    Args:
        value: The header value (None when absent).
        now: The current POSIX time for a date value (default: the clock).

    Returns:
        Seconds to wait (negative for a date in the past), or None when the value is
        absent or neither a number nor a date.
    """
    if value is None:
        return None
    with contextlib.suppress(ValueError):
        return float(value)
    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    return float(email.utils.mktime_tz(parsed)) - (time.time() if now is None else now)


def post_json(
    client: httpx.Client,
    url: str,
    body: Mapping[str, Any],
    policy: RetryPolicy,
    *,
    limit: threading.Semaphore | None = None,
) -> tuple[httpx.Response, int]:
    """POST ``body`` as JSON, retrying transient failures.

    Args:
        client: The HTTP client (its timeout applies to every attempt).
        url: The full endpoint URL.
        body: The JSON body.
        policy: Retries and waits.
        limit: Held around each attempt (not the waits between them), so threads
            sharing it never have more requests in flight than it allows.

    Returns:
        The last response (successful, not retryable, or out of retries) and the
        number of attempts made.

    Raises:
        ProviderError: Every attempt timed out or failed to connect.
    """
    gate = limit if limit is not None else contextlib.nullcontext()
    attempt = 0
    while True:
        try:
            with gate:
                response = client.post(url, json=body)
        except httpx.TransportError as exc:
            if attempt >= policy.max_retries:
                raise _transport_error(client, url, exc, attempt + 1) from exc
            time.sleep(policy.delay(attempt, None))
        else:
            if (
                response.is_success
                or response.status_code not in RETRY_STATUSES
                or attempt >= policy.max_retries
            ):
                return response, attempt + 1
            time.sleep(policy.delay(attempt, response.headers.get("retry-after")))
        attempt += 1


def _transport_error(
    client: httpx.Client, url: str, exc: httpx.TransportError, attempts: int
) -> ProviderError:
    if isinstance(exc, httpx.TimeoutException):
        seconds = client.timeout.read
        return ProviderError(
            f"{url} timed out after {seconds:g} s on each of {attempts} attempt(s); "
            "raise the timeout if the server is just slow.",
            details={"url": url, "attempts": attempts, "timeout": seconds},
        )
    return ProviderError(
        f"{url} failed after {attempts} attempt(s): {exc!r}",
        details={"url": url, "attempts": attempts},
    )


def excerpt(response: httpx.Response) -> str:
    """The first few hundred characters of the response body, for error messages."""
    return response.text[:_BODY_EXCERPT]


def status_error(response: httpx.Response, attempts: int) -> ProviderError:
    """The error for an unsuccessful ``response``: status, attempts and a body excerpt."""
    url = str(response.request.url)
    status = response.status_code
    body = excerpt(response)
    return ProviderError(
        f"{url} answered HTTP {status} after {attempts} attempt(s): {body}",
        details={"url": url, "status": status, "body": body, "attempts": attempts},
    )


def json_body(response: httpx.Response) -> Any:
    """The response's decoded JSON.

    Raises:
        ProviderError: The body is not JSON (a proxy's HTML page, a cut-off reply).
    """
    try:
        return response.json()
    except ValueError as exc:
        raise ProviderError(
            f"{response.request.url} returned a non-JSON body: {excerpt(response)}",
            details={"url": str(response.request.url), "status": response.status_code},
        ) from exc
