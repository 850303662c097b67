"""A real uvicorn server in a thread for the REST, MCP-over-HTTP and parity tests.

``LiveServer(app).start()`` serves an ASGI app on 127.0.0.1 with port 0 (the OS picks
a free port) and returns the base URL; ``stop()`` shuts it down. ``client``,
``wait_for`` and ``child_env`` are small helpers shared by those tests.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import uvicorn

__all__ = ["LiveServer", "child_env", "client", "wait_for"]


class LiveServer:
    """uvicorn running an ASGI app in a background thread."""

    def __init__(self, app: Any) -> None:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", access_log=False
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> str:
        """Start serving and return the base URL."""
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for it."""
        self.server.should_exit = True
        self.thread.join(15)


def client(base_url: str, key: str | None = None, **headers: str) -> httpx.Client:
    """An httpx client for ``base_url`` sending ``key`` as a bearer token."""
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    # Plain HTTP on loopback: skip building a TLS context (~0.1 s per client).
    return httpx.Client(base_url=base_url, headers=headers, timeout=30, verify=False)


def child_env(**variables: str) -> dict[str, str]:
    """The environment of a ``python -m kgsearch`` child started by the MCP SDK's stdio
    client, which passes on only a few variables of its own: ``variables`` and this
    process's PYTHONPATH, so that the child imports the kgsearch under test."""
    path = os.environ.get("PYTHONPATH")
    return {**variables, **({"PYTHONPATH": path} if path else {})}


def wait_for(check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll ``check`` until it is true (or fail after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)
