"""A real loopback OpenAI-compatible provider whose behaviour a test switches at will.

``FaultyProvider`` serves ``/v1/embeddings`` (deterministic unit vectors of ``dims``)
and ``/v1/chat/completions`` (a fixed extraction reply) on 127.0.0.1, and can be put
in one of these modes at any time:

- ``ok``: answers at once;
- ``hang``: accepts the request and never answers (until the mode changes);
- ``error``: answers HTTP 500;
- ``wrong_dims``: answers vectors three longer than ``dims``;
- ``slow``: answers correctly after ``slow_seconds``;
- ``refuse``: stops listening, so connections are refused (the port is taken again,
  with the same number, when the mode changes back).

Two more modes concern the chat model only (``chat_mode`` sets the chat model's mode
apart from the embedder's):

- ``stall``: starts the reply (the stream's first piece, or the first half of a whole
  reply) and then sends nothing more;
- ``trickle``: a streamed reply that never ends: a piece every 0.2 s (a whole reply is
  answered slowly, as ``slow``).

A request held open (``hang``, ``slow``, ``stall``, ``trickle``) watches its
connection: when the client drops it, the time is appended to ``dropped`` and the
request ends; ``held`` counts the requests held right now.
"""

from __future__ import annotations

import hashlib
import json
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

__all__ = ["CHAT_MODES", "MODES", "FaultyProvider"]

MODES = ("hang", "refuse", "error", "wrong_dims", "slow")
CHAT_MODES = ("slow", "stall", "trickle")
PIECES = ["Ada Lovelace ", "wrote the first ", "published program."]
EXTRACTION = json.dumps(
    {
        "entities": [
            {"name": "Ada Lovelace", "type": "person", "description": "A mathematician."},
        ],
        "relationships": [],
    }
)


def _reply(text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    return {"choices": [{"message": message, "finish_reason": "stop"}]}


def vector(text: str, dims: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8", "replace")).digest()[:8], "big")
    values = np.random.default_rng(seed).standard_normal(dims)
    return [float(v) for v in values / np.linalg.norm(values)]


class FaultyProvider:
    """The provider; ``url`` is its API root (``http://127.0.0.1:<port>/v1``)."""

    def __init__(self, dims: int = 8, slow_seconds: float = 1.5) -> None:
        self.dims = dims
        self.slow_seconds = slow_seconds
        self.mode = "ok"
        self.chat_mode: str | None = None
        self.calls = 0
        self.held = 0
        self.dropped: list[float] = []
        self._changed = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._httpd = self._serve(0)
        self.port = int(self._httpd.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def set_chat_mode(self, mode: str | None) -> None:
        """Switch the chat model's behaviour apart from the embedder's (None: follow
        ``mode``); held requests are released."""
        assert mode is None or mode == "ok" or mode in MODES + CHAT_MODES, mode
        with self._lock:
            self.chat_mode = mode
            self._changed.set()
            self._changed = threading.Event()

    def set_mode(self, mode: str) -> None:
        """Switch behaviour; held (hanging) requests are released."""
        assert mode == "ok" or mode in MODES, mode
        with self._lock:
            if mode == "refuse" and self.mode != "refuse":
                self._close()
            elif self.mode == "refuse" and mode != "refuse":
                self._httpd = self._serve(self.port)
            self.mode = mode
            self._changed.set()
            self._changed = threading.Event()

    def stop(self) -> None:
        self._stopping.set()
        self._changed.set()
        with self._lock:
            if self.mode != "refuse":
                self._close()

    def _close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _serve(self, port: int) -> ThreadingHTTPServer:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                provider.calls += 1
                mode, changed = provider.mode, provider._changed
                chat = not self.path.endswith("/embeddings")
                if chat and provider.chat_mode is not None:
                    mode = provider.chat_mode
                if mode == "hang":
                    self._hold(changed, None)
                    return  # the connection is dropped unanswered
                if mode in ("stall", "trickle") and chat:
                    self._stall(body, changed, trickle=mode == "trickle")
                    return
                if mode in ("slow", "trickle") and self._hold(changed, provider.slow_seconds):
                    return
                if mode == "error":
                    self._send(500, {"error": {"message": "overloaded"}})
                elif self.path.endswith("/embeddings"):
                    dims = provider.dims + (3 if mode == "wrong_dims" else 0)
                    data = [
                        {"index": i, "embedding": vector(text, dims)}
                        for i, text in enumerate(body["input"])
                    ]
                    self._send(200, {"data": data, "model": body["model"]})
                elif body.get("stream"):
                    self._send_stream()
                else:
                    self._send(200, _reply(EXTRACTION))

            def _hold(self, changed: threading.Event, seconds: float | None) -> bool:
                """Wait ``seconds`` (None: until the mode changes); True if the client
                dropped the connection meanwhile."""
                until = None if seconds is None else time.monotonic() + seconds
                provider.held += 1
                try:
                    while until is None or time.monotonic() < until:
                        if changed.is_set() or provider._stopping.is_set():
                            return False
                        if self._client_gone(0.05):
                            provider.dropped.append(time.monotonic())
                            return True
                    return False
                finally:
                    provider.held -= 1

            def _client_gone(self, wait: float) -> bool:
                readable, _, _ = select.select([self.connection], [], [], wait)
                if not readable:
                    return False
                connection: socket.socket = self.connection
                try:
                    return connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    return True

            def _stall(self, body: dict[str, Any], changed: threading.Event, trickle: bool) -> None:
                """Start the reply, then send nothing more (or a piece every 0.2 s)."""
                try:
                    if not body.get("stream"):
                        raw = json.dumps(_reply(" ".join(PIECES))).encode()
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(raw)))
                        self.end_headers()
                        self.wfile.write(raw[: len(raw) // 2])
                        self.wfile.flush()
                        self._hold(changed, None)
                        return
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    self._piece(PIECES[0])
                    if not trickle:
                        self._hold(changed, None)
                        return
                    provider.held += 1
                    try:
                        while not changed.is_set() and not provider._stopping.is_set():
                            time.sleep(0.2)
                            self._piece("and so on ")
                    finally:
                        provider.held -= 1
                except (BrokenPipeError, ConnectionResetError):
                    provider.dropped.append(time.monotonic())

            def _piece(self, text: str) -> None:
                event = {"choices": [{"index": 0, "delta": {"content": text}}]}
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()

            def _send(self, status: int, payload: Any) -> None:
                raw = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up

            def _send_stream(self) -> None:
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for piece in PIECES:
                        self._piece(piece)
                    self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up

            def log_message(self, format: str, *args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        return httpd
