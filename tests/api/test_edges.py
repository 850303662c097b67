"""REST edges (issue 18, defect 9, rest): no store internals in error bodies, a deadline
on request bodies, and an embedder that never answered does not pass for a missing one.

All over real HTTP servers; the conflict test runs on every store backend.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from live_server import wait_for

from kgsearch import Engine, connect
from kgsearch.api.app import create_app
from kgsearch.embed.openai import OpenAIEmbedder

Serve = Callable[..., str]
INTERNALS = ("UNIQUE", "constraint", "objects.", "Key (", "INSERT", "SELECT", "sqlite", "psycopg")


def test_a_conflict_says_which_fields_collide_not_which_constraint(
    serve: Serve, engine: Engine
) -> None:
    base = serve(create_app(engine, keys=False))
    with httpx.Client(base_url=base, timeout=10) as c:
        first = c.post("/api/graph/objects", json={"type": "P", "key": "a", "id": "x"})
        second = c.post("/api/graph/objects", json={"type": "P", "key": "b", "id": "x"})
    assert first.status_code == 201
    assert second.status_code == 409
    error = second.json()["error"]
    assert error["message"].endswith("an object with the same id already exists")
    assert error["details"] == {"fields": ["id"]}
    assert not [word for word in INTERNALS if word in second.text]


def test_a_body_that_never_finishes_gets_408_and_the_connection_closes(serve: Serve) -> None:
    engine = Engine(connect(":memory:"))
    base = serve(create_app(engine, keys=False, body_seconds=0.5))
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=15) as conn:
        conn.sendall(
            b"POST /api/graph/objects HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
            b'{"type": "P", '
        )
        started = time.perf_counter()
        received = b""
        while chunk := conn.recv(65536):  # returns b"" once the server closes
            received += chunk
        seconds = time.perf_counter() - started
    assert received.startswith(b"HTTP/1.1 408")
    assert b'"code": "request_timeout"' in received
    assert seconds < 10  # closed by the deadline, not by the client's 15 s timeout
    engine.close()


def test_an_embedder_that_never_answered_is_not_a_missing_one(serve: Serve, tmp_path: Path) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    embedder = OpenAIEmbedder("m", base_url=url, timeout=2, max_retries=0)  # dims unknown
    engine = Engine(connect(str(tmp_path / "g.db")), embedder=embedder)
    base = serve(create_app(engine, keys=False, worker=True, worker_interval=0.05))
    try:
        with httpx.Client(base_url=base, timeout=10) as c:
            written = c.post("/api/graph/objects", json={"type": "P", "key": "ada"})
            found = c.post("/api/search/unified", json={"query": "ada"}).json()
            # the background worker tried the row: its attempt is recorded
            wait_for(lambda: c.get("/api/embeddings/status").json()["failed"] == 1)
            status = c.get("/api/embeddings/status").json()
    finally:
        closed.close()
    assert written.status_code == 201
    warnings = " ".join(found["metadata"]["warnings"])
    assert "no embedder configured" not in warnings and "nothing is embedded yet" in warnings
    assert (status["model"], status["pending"], status["failed"]) == (None, 0, 1)
    engine.close()
