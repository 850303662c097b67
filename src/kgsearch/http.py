"""Retrying JSON POSTs to provider HTTP APIs (OpenAI-compatible embedders and chat models).

:func:`post_json` sends one request body, retrying rate limits (429), transient server
errors (408, 500, 502, 503, 504), dropped connections and timeouts. It waits what a
``Retry-After`` header asks for when that is a reasonable amount (0–60 s, seconds or an
HTTP date), else an exponential backoff. Transport failures that outlast the retries
become :class:`~kgsearch.errors.ProviderError`; an HTTP error response is handed back,
because what it means (missing key, unsupported option) is the provider's to decide.
:func:`status_error` and :func:`json_body` turn responses into errors and JSON the same
way for every provider. :class:`CallGuard` bounds how long a caller waits on a
provider at all: a deadline per call, a few dedicated threads, and a circuit breaker.
"""

from __future__ import annotations

import contextlib
import email.utils
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from kgsearch.cancel import Cancel, cancellable, check_cancelled, current, pause
from kgsearch.errors import ProviderError

if TYPE_CHECKING:
    import httpx

__all__ = [
    "OPENAI_BASE_URL",
    "OPENAI_HOST",
    "RETRY_STATUSES",
    "CallGuard",
    "ProviderSkipped",
    "RetryPolicy",
    "excerpt",
    "json_body",
    "post_json",
    "public_provider_error",
    "retry_after_seconds",
    "status_error",
]

OPENAI_HOST = "api.openai.com"
OPENAI_BASE_URL = f"https://{OPENAI_HOST}/v1"
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_BODY_EXCERPT = 300
T = TypeVar("T")


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
        CallCancelled: The current call was cancelled (:mod:`kgsearch.cancel`): no
            further attempt is made, and a backoff wait ends at once.
    """
    import httpx  # imported when used: the engine and the CLI start faster without it

    gate = limit if limit is not None else contextlib.nullcontext()
    attempt = 0
    while True:
        check_cancelled(url)
        try:
            with gate:
                response = client.post(url, json=body)
        except httpx.TransportError as exc:
            check_cancelled(url)  # a cancelled call's read ends in a TransportError
            if attempt >= policy.max_retries:
                raise _transport_error(client, url, exc, attempt + 1) from exc
            pause(policy.delay(attempt, None))
        else:
            if (
                response.is_success
                or response.status_code not in RETRY_STATUSES
                or attempt >= policy.max_retries
            ):
                return response, attempt + 1
            pause(policy.delay(attempt, response.headers.get("retry-after")))
        attempt += 1


def _transport_error(
    client: httpx.Client, url: str, exc: httpx.TransportError, attempts: int
) -> ProviderError:
    import httpx

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


class ProviderSkipped(ProviderError):
    """The provider was not called: its breaker is open, or every thread of its guard
    is still waiting on it. Nothing was attempted, so a job runner should stop (and
    leave its rows' attempts alone) rather than fail row after row."""

    code = "provider_unavailable"


class CallGuard:
    """A deadline, bounded threads and a circuit breaker around a provider's calls.

    :meth:`call` runs ``fn`` on one of ``workers`` dedicated threads and waits at most
    ``deadline`` seconds for it. A call that times out or fails counts as a failure;
    after ``failures`` in a row the breaker opens and calls are refused at once for
    ``cooldown`` seconds, then one is let through to probe the provider. When every
    thread still waits on a hung call, a new call is refused at once too.

    Each call runs under a :class:`~kgsearch.cancel.Cancel` token of its own (a child
    of the caller's, if the caller has one): at the deadline the token is cancelled,
    so a provider client built on :func:`~kgsearch.cancel.cancellable_transport`
    drops the request and frees its thread within a fraction of a second. A call
    whose caller cancelled it (a client that went away) is not a provider failure and
    does not count towards the breaker and raises ``skipped`` (a job runner stops and
    leaves its rows' attempts alone). Python cannot stop a thread, so a provider
    that does not read the token keeps its thread until its own timeout; ``workers``
    bounds how many can.

    Args:
        name: What is guarded, for messages (``the embedder``, ``the LLM``).
        deadline: Seconds a caller waits for one call.
        failures: Failures in a row that open the breaker.
        cooldown: Seconds the open breaker refuses calls before probing.
        workers: Threads that may wait on the provider at once.
        passed: Exception types that are the caller's to handle (a configuration
            error, say): raised as they are and never counted.
        failed: The error raised for a call that timed out or failed.
        skipped: The error raised for a call refused without calling the provider.
    """

    def __init__(
        self,
        name: str,
        *,
        deadline: float,
        failures: int = 3,
        cooldown: float = 30.0,
        workers: int = 4,
        passed: tuple[type[Exception], ...] = (),
        failed: type[ProviderError] = ProviderError,
        skipped: type[ProviderError] = ProviderSkipped,
    ) -> None:
        self.name = name
        self.deadline = deadline
        self.failures = failures
        self.cooldown = cooldown
        self._workers = workers
        self._passed = passed
        self._failed_error = failed
        self._skipped_error = skipped
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="provider-call")
        self._lock = threading.Lock()
        self._busy = 0
        self._failed = 0
        self._open_until = 0.0

    @property
    def is_open(self) -> bool:
        """Whether calls are refused right now (the breaker is open)."""
        with self._lock:
            return time.monotonic() < self._open_until

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` within the deadline, or the caller's own when that
        comes first (a :class:`~kgsearch.cancel.Cancel` token with a deadline: a search
        that queued for its thread has less time left for its query embedding).

        Raises:
            ProviderError: ``skipped`` when the breaker is open, every thread is
                waiting on the provider or the caller's deadline has passed; ``failed``
                when the call took longer than the deadline or raised (the ``passed``
                types are raised as they are). Running out of the caller's time is not
                counted as the provider's failure.
        """
        token = Cancel(current())
        left = token.remaining()
        if left is not None and left <= 0:
            raise self._skipped_error(
                f"{self.name} was skipped: the request's deadline has passed",
                details={"deadline": 0},
            )
        wait = self.deadline if left is None else min(self.deadline, left)
        with self._lock:
            now = time.monotonic()
            if now < self._open_until:
                raise self._skipped_error(
                    f"{self.name} failed {self._failed} times in a row; skipped for "
                    f"another {self._open_until - now:.0f} s",
                    details={"retry_after": round(self._open_until - now, 1)},
                )
            if self._busy >= self._workers:
                raise self._skipped_error(
                    f"{self.name} is not answering (every thread is waiting on it)"
                )
            self._busy += 1
        future: Future[T] = self._pool.submit(self._run, token, fn, args, kwargs)
        try:
            value = future.result(timeout=wait)
        except FutureTimeout:
            token.cancel(f"{self.name} took longer than {wait:g} s")
            if wait >= self.deadline:  # the provider's own slowness, not the caller's haste
                self._failure()
            raise self._failed_error(
                f"{self.name} took longer than {wait:g} s", details={"deadline": round(wait, 3)}
            ) from None
        except self._passed:
            raise
        except Exception as exc:
            if token.cancelled:  # the caller gave up (a client gone, a job cancelled)
                # not the provider's failure; a job runner stops, no attempt counted
                raise self._skipped_error(
                    f"{self.name} was cancelled: {token.reason}",
                    details={"reason": token.reason},
                ) from exc
            self._failure()
            raise self._failed_error(
                f"{type(exc).__name__}: {exc}",
                details=exc.details if isinstance(exc, ProviderError) else {},
            ) from exc
        with self._lock:
            self._failed = 0
        return value

    def _run(
        self, token: Cancel, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> T:
        try:
            with cancellable(token):
                return fn(*args, **kwargs)
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


_PUBLIC_DETAILS = ("status", "attempts", "timeout", "deadline", "retry_after", "finish_reason")


def public_provider_error(exc: ProviderError, *, chat: str, embedder: str) -> dict[str, Any]:
    """The error body a client may see of a provider failure (a server's 502): the
    provider's kind (``chat`` for the chat model, ``embedder`` for the embedder) and
    the kind of failure (deadline, HTTP status, breaker), never the provider's URL,
    its raw reply or its error text, which the server logs instead.

    Args:
        exc: The failure.
        chat: The chat model's provider kind (``openai``, ``ollama``…).
        embedder: The embedder's provider kind.
    """
    details = {k: exc.details[k] for k in _PUBLIC_DETAILS if k in exc.details}
    url = str(exc.details.get("url", ""))
    kind = embedder if exc.code.startswith("embedder") or url.endswith("/embeddings") else chat
    if "deadline" in details:
        what = f"took longer than {details['deadline']:g} s"
    elif "retry_after" in details:
        what = f"keeps failing; calls are paused for {details['retry_after']:g} s"
    elif "status" in details:
        what = f"failed (HTTP {details['status']})"
    elif "timeout" in details:
        what = f"timed out after {details['timeout']:g} s"
    else:
        what = "failed"
    message = f"the {kind} provider {what}; the server log has the details"
    if exc.code == "missing_credentials":
        message = f"the {kind} provider needs credentials the server does not have"
    return {
        "error": {"code": exc.code, "message": message, "details": {**details, "provider": kind}}
    }
