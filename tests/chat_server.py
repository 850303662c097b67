"""A real HTTP server on 127.0.0.1 that speaks ``/v1/chat/completions``, and real replies.

``start_chat_server(responder, stopping)`` serves in a thread; the ``serve`` fixture in
``tests/unit/llm/conftest.py`` starts and stops them. The reply texts in
``tests/unit/llm/recorded_replies.json`` are real gpt-4o and gpt-3.5-turbo outputs:
entity/relationship extractions of *A Christmas Carol* taken from the
``christmas-carol-graphrag`` eval set's ``extractions.jsonl``, which was derived from
nano-graphrag's LLM response caches (github.com/hhy-huang/nano-graphrag @ e3a575f4,
MIT License, Copyright (c) 2024 Gustavo Ye; the book is Project Gutenberg eBook #24022,
public domain in the US). Only the texts are real: the chat-completion envelope around
them and its token counts are made up here.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "FENCED_REPLY",
    "GPT4O_REPLY",
    "GPT35_REPLY",
    "REPLIES",
    "ChatServer",
    "Hang",
    "Responder",
    "chat_reply",
    "replies_with",
    "sse_reply",
    "start_chat_server",
]

_RECORDED_FILE = Path(__file__).parent / "unit" / "llm" / "recorded_replies.json"
_RECORDED = json.loads(_RECORDED_FILE.read_text("utf-8"))
REPLIES: dict[str, str] = {reply["name"]: reply["text"] for reply in _RECORDED["replies"]}
GPT4O_REPLY = REPLIES["gpt-4o first pass"]
GPT35_REPLY = REPLIES["gpt-3.5-turbo gleaning"]
FENCED_REPLY = REPLIES["gpt-4o fenced first pass"]

# (request number from 1, request body) -> (status, body[, headers]); a dict body is
# sent as JSON, a str as is, a Hang holds the request open.
Responder = Callable[[int, dict[str, Any]], tuple[Any, ...]]


@dataclass(frozen=True)
class Hang:
    """Answer nothing for ``seconds`` (or until the test ends)."""

    seconds: float


def chat_reply(
    text: str,
    *,
    model: str = "gpt-4o",
    prompt_tokens: int | None = 1873,
    completion_tokens: int = 231,
    finish_reason: str = "stop",
) -> dict[str, Any]:
    """An OpenAI chat-completion body around ``text`` (no ``usage`` if prompt_tokens is None)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1725500000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
    }
    if prompt_tokens is not None:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return body


def sse_reply(pieces: list[str], *, usage: bool = True) -> tuple[int, str, dict[str, str]]:
    """A streamed chat completion (server-sent events) whose deltas are ``pieces``."""
    events: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        *({"choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    if usage:
        events.append({"choices": [], "usage": {"prompt_tokens": 321, "completion_tokens": 12}})
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    return 200, body, {"Content-Type": "text/event-stream"}


def replies_with(text: str, **options: Any) -> Responder:
    """A responder that always answers ``text``."""
    return lambda number, body: (200, chat_reply(text, **options))


@dataclass
class ChatServer:
    """A running local server plus every request it has received."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    peak: int = 0

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [request["body"] for request in self.requests]


def start_chat_server(
    responder: Responder, stopping: threading.Event
) -> tuple[ChatServer, ThreadingHTTPServer]:
    """Serve ``responder`` on a free port; a Hang ends early once ``stopping`` is set."""
    server = ChatServer(url="")
    lock = threading.Lock()
    in_flight = [0]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                server.requests.append(
                    {
                        "path": self.path,
                        "authorization": self.headers.get("Authorization"),
                        "body": body,
                        "at": time.monotonic(),
                    }
                )
                number = len(server.requests)
                in_flight[0] += 1
                server.peak = max(server.peak, in_flight[0])
            try:
                reply = (
                    responder(number, body)
                    if self.path == "/v1/chat/completions"
                    else (404, "nope")
                )
                self._send(*reply)
            finally:
                with lock:
                    in_flight[0] -= 1

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            if isinstance(payload, Hang):
                stopping.wait(payload.seconds)
                return
            raw = payload if isinstance(payload, str) else json.dumps(payload)
            encoded = raw.encode()
            headers = {"Content-Length": str(len(encoded)), **(headers or {})}
            try:
                self.send_response(status)
                self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(encoded)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True).start()
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    return server, httpd
