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
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

__all__ = ["MODES", "FaultyProvider"]

MODES = ("hang", "refuse", "error", "wrong_dims", "slow")
EXTRACTION = json.dumps(
    {
        "entities": [
            {"name": "Ada Lovelace", "type": "person", "description": "A mathematician."},
        ],
        "relationships": [],
    }
)


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
        self.calls = 0
        self._changed = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._httpd = self._serve(0)
        self.port = int(self._httpd.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}/v1"

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
                if mode == "hang":
                    while not changed.wait(0.1) and not provider._stopping.is_set():
                        pass
                    return  # the connection is dropped unanswered
                if mode == "slow":
                    time.sleep(provider.slow_seconds)
                if mode == "error":
                    self._send(500, {"error": {"message": "overloaded"}})
                elif self.path.endswith("/embeddings"):
                    dims = provider.dims + (3 if mode == "wrong_dims" else 0)
                    data = [
                        {"index": i, "embedding": vector(text, dims)}
                        for i, text in enumerate(body["input"])
                    ]
                    self._send(200, {"data": data, "model": body["model"]})
                else:
                    message = {"role": "assistant", "content": EXTRACTION}
                    reply = {"choices": [{"message": message, "finish_reason": "stop"}]}
                    self._send(200, reply)

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

            def log_message(self, format: str, *args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        return httpd
