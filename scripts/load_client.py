"""A lean HTTP/1.1 client for load benchmarks (scripts/bench_load.py).

The load generator shares the server's cores, so it is kept lean: httpx's AsyncClient
took 1.6-2.3 ms of CPU a request here (a sixth of 2 cores at 150 requests/s), this
about 0.4 ms. It speaks just what kgsearch's server answers: a status line, headers and
a body of ``Content-Length`` bytes, over one keep-alive connection.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

__all__ = ["Connection"]


class Connection:
    """One keep-alive HTTP/1.1 connection to the server: JSON in, status and JSON out
    (a reply without ``Content-Length`` is a ValueError)."""

    def __init__(self, host: str, port: int, key: str) -> None:
        self.host, self.port = host, port
        self.head = f"Host: {host}:{port}\r\nAuthorization: Bearer {key}\r\n"
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, path: str, body: object) -> tuple[int, Any]:
        """POST ``body`` as JSON; the status and the decoded JSON reply (None if none)."""
        if self.streams is None:
            self.streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self.streams
        data = json.dumps(body).encode()
        writer.write(
            f"POST {path} HTTP/1.1\r\n{self.head}Content-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ", 2)[1])
            fields = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
            length = {k.lower(): v for k, v in fields.items()}.get("content-length")
            if length is None:
                raise ValueError("a reply without Content-Length")
            reply = await reader.readexactly(int(length))
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            await self.close()
            raise
        return status, json.loads(reply) if reply else None

    async def close(self) -> None:
        """Close the connection (the next post opens another)."""
        if self.streams is not None:
            self.streams[1].close()
            self.streams = None
