"""The ``serve`` fixture: local chat-completion servers (tests/chat_server.py), stopped
when the test ends."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer

import pytest
from chat_server import ChatServer, Responder, start_chat_server


@pytest.fixture
def serve() -> Iterator[Callable[[Responder], ChatServer]]:
    """Start servers that answer POST /v1/chat/completions with a responder."""
    running: list[ThreadingHTTPServer] = []
    stopping = threading.Event()

    def start(responder: Responder) -> ChatServer:
        server, httpd = start_chat_server(responder, stopping)
        running.append(httpd)
        return server

    yield start
    stopping.set()
    for httpd in running:
        httpd.shutdown()
        httpd.server_close()
