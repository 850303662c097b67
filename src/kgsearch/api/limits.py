"""Request limits of the REST API and the ASGI middleware that guards request bodies.

The body limit is checked before any parsing (file uploads, ``UPLOAD_PATH``, have a
larger one of their own, ``MAX_UPLOAD_BYTES``): a request announcing a larger
``Content-Length`` is refused at once, and a streamed (chunked) body is read only
up to the limit. Both get the one error shape with status 413.

JSON may spell text that is not valid Unicode: a lone surrogate escape such as
``"\\ud800"`` decodes to a Python string that cannot be encoded as UTF-8, which
every hash and every database driver rejects. Such bodies are refused with 400
before any route sees them (valid pairs, e.g. an escaped emoji, are fine).

A body must arrive within ``MAX_BODY_SECONDS`` of the request's start: a client that
trickles it (or stops sending) gets 408 and the connection is closed, so slow-body
connections never stay open (uvicorn and h11 have no body timeout of their own).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio

from kgsearch.errors import InvalidRequest, PayloadTooLarge

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_BODY_SECONDS",
    "MAX_BULK_ITEMS",
    "MAX_ID_CHARS",
    "MAX_LIMIT",
    "MAX_QUERY_CHARS",
    "MAX_UPLOAD_BYTES",
    "UPLOAD_PATH",
    "InputGuard",
    "PayloadTooLarge",
    "RequestTimeout",
    "has_lone_surrogate",
]

MAX_BODY_BYTES = 1_048_576
MAX_BODY_SECONDS = 30.0
MAX_UPLOAD_BYTES = 32 * 1024 * 1024
"""The largest multipart upload (all its files together): a PDF or DOCX is rarely
under the 1 MiB of a JSON body."""
UPLOAD_PATH = "/api/documents/upload"
MAX_QUERY_CHARS = 800
MAX_LIMIT = 100
MAX_BULK_ITEMS = 1000
MAX_ID_CHARS = 200

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class RequestTimeout(InvalidRequest):
    """The request body did not arrive in time."""

    status = 408
    code = "request_timeout"


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def has_lone_surrogate(value: object) -> bool:
    """Whether a decoded JSON value holds a string that is not valid Unicode."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class InputGuard:
    """ASGI middleware: refuse bodies over ``max_bytes`` (413), bodies that take
    longer than ``body_seconds`` to arrive (408, connection closed) and JSON bodies
    whose strings are not valid Unicode (400), all with the one error body.

    Args:
        app: The wrapped ASGI application.
        max_bytes: Largest accepted body.
        body_seconds: Longest time to receive a whole body.
        upload_bytes: Largest accepted body at ``UPLOAD_PATH`` (file uploads).
    """

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int = MAX_BODY_BYTES,
        body_seconds: float = MAX_BODY_SECONDS,
        upload_bytes: int = MAX_UPLOAD_BYTES,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.body_seconds = body_seconds
        self.upload_bytes = upload_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer 413 when its body is too large."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        upload = scope.get("path") == UPLOAD_PATH
        limit = self.upload_bytes if upload else self.max_bytes
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await self._refuse(send, limit, upload)
            return
        body = bytearray()
        with anyio.move_on_after(self.body_seconds) as waited:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return  # the client went away before sending its whole body
                body += message.get("body", b"")
                if len(body) > limit:
                    await self._refuse(send, limit, upload)
                    return
                if not message.get("more_body", False):
                    break
        if waited.cancelled_caught:
            error = RequestTimeout(
                f"the request body did not arrive within {self.body_seconds:g} s",
                details={"body_seconds": self.body_seconds},
            )
            await _send_error(send, error)
            return
        if _SURROGATE_ESCAPE.search(body) and _invalid_unicode(bytes(body)):
            await _send_error(
                send,
                InvalidRequest(
                    "the body holds text that is not valid Unicode (a lone surrogate escape "
                    "such as \\ud800); send UTF-8 text"
                ),
            )
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send, limit: int, upload: bool) -> None:
        hint = "upload fewer or smaller files at once" if upload else "send fewer items per request"
        error = PayloadTooLarge(
            f"request body is larger than {limit} bytes; {hint}", details={"max_bytes": limit}
        )
        await _send_error(send, error)


def _invalid_unicode(body: bytes) -> bool:
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return False  # not JSON at all: the route's own parsing answers 400
    return has_lone_surrogate(value)


async def _send_error(send: Send, error: InvalidRequest) -> None:
    payload = json.dumps(error.to_dict()).encode("utf-8")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode("ascii")),
    ]
    if isinstance(error, PayloadTooLarge | RequestTimeout):
        headers.append((b"connection", b"close"))  # the unread rest of the body is dropped
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
