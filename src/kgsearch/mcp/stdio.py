"""The MCP server over stdio, answering every line (``kgsearch mcp``).

The SDK's stdio transport (``mcp.server.stdio.stdio_server``) parses each line with
the JSON-RPC message model and, when that fails, hands the exception to the server,
which drops it: a client that sent a garbage line, a lone surrogate (``"\\ud800"``)
or arguments nested past the parser's limit never gets an answer and waits forever.
:func:`run_stdio` serves the same transport over lines that :class:`CheckedLines`
reads first: each line the message model refuses is answered at once with the
JSON-RPC error the specification asks for, ``-32700`` (parse error) when it is not
JSON and ``-32600`` (invalid request) when it is JSON but not a valid message, under
the request's ``id`` when one can be read (``null`` otherwise), and never reaches
the server. As the SDK does, the process's own stdin and stdout are pointed away
from the wire while serving, so stray reads and prints cannot corrupt it.

When stdin closes, the requests already read are still answered: the lines end for
the server only once every request id read has had its response written (or after
:data:`DRAIN_SECONDS`), so a client that writes its last call and closes its end
still gets the answer.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from io import TextIOWrapper
from typing import Any, BinaryIO, cast

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from pydantic import ValidationError

__all__ = ["DRAIN_SECONDS", "CheckedLines", "LineWriter", "error_for", "run_stdio"]

DRAIN_SECONDS = 120.0  # how long requests read before stdin closed may still take
_MAX_REASON = 200
_TOP_ID = re.compile(r'\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def run_stdio(server: MCPServer[Any]) -> None:
    """Serve ``server`` over this process's stdin and stdout until stdin closes."""
    with _wire() as (wire_in, wire_out):
        anyio.run(_serve, server, wire_in, wire_out)


async def _serve(server: MCPServer[Any], wire_in: BinaryIO, wire_out: BinaryIO) -> None:
    out = LineWriter(anyio.wrap_file(TextIOWrapper(wire_out, encoding="utf-8")))
    source = anyio.wrap_file(TextIOWrapper(wire_in, encoding="utf-8", errors="replace"))
    lines = CheckedLines(source, out, drain_seconds=DRAIN_SECONDS)
    low = server._lowlevel_server  # the SDK's own run_stdio_async does the same
    async with stdio_server(stdin=cast(Any, lines), stdout=cast(Any, out)) as (read, write):
        await low.run(read, write, low.create_initialization_options())


@contextmanager
def _wire() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """Private copies of fds 0 and 1 for the wire; while serving, fd 0 reads the null
    device and fd 1 writes to stderr. Both are put back afterwards."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        yield (
            os.fdopen(wire_in, "rb", closefd=False),
            os.fdopen(wire_out, "wb", closefd=False),
        )
    finally:
        sys.stdout.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)


class LineWriter:
    """The wire's writer: whole lines, one at a time (the server's replies and the
    errors :class:`CheckedLines` sends share it). It keeps the ids of the requests
    read and not yet answered, so the end of input can wait for their answers."""

    def __init__(self, file: anyio.AsyncFile[str]) -> None:
        self._file = file
        self._lock = anyio.Lock()
        self._open: set[int | str] = set()
        self._answered = anyio.Event()

    def expect(self, request_id: int | str) -> None:
        """Note a request read whose response has yet to be written."""
        self._open.add(request_id)

    async def all_answered(self) -> None:
        """Return once every expected request has had its response written."""
        while self._open:
            await self._answered.wait()
            self._answered = anyio.Event()

    async def write(self, text: str) -> None:
        """Write ``text`` (one or more whole lines)."""
        async with self._lock:
            await self._file.write(text)
        if self._open:
            for line in text.splitlines():
                self._open.discard(_response_id(line))
            self._answered.set()

    async def flush(self) -> None:
        """Flush the wire."""
        async with self._lock:
            await self._file.flush()


class CheckedLines:
    """The wire's lines, minus those the JSON-RPC message model refuses: each of
    those is answered on ``out`` with its error instead. Blank lines are skipped."""

    def __init__(
        self, source: anyio.AsyncFile[str], out: LineWriter, *, drain_seconds: float = 0.0
    ) -> None:
        self._source = source
        self._out = out
        self._drain_seconds = drain_seconds

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._source:
            if not line.strip():
                continue
            try:
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except ValidationError as exc:
                reply = error_for(line, exc).model_dump_json(by_alias=True, exclude_unset=True)
                await self._out.write(reply + "\n")
                await self._out.flush()
                continue
            if isinstance(message, types.JSONRPCRequest):
                self._out.expect(message.id)
            yield line
        with anyio.move_on_after(self._drain_seconds):
            await self._out.all_answered()


def _response_id(line: str) -> int | str | None:
    """The id a written line answers (None for a notification or a request)."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    if not isinstance(value, dict) or ("result" not in value and "error" not in value):
        return None
    found = value.get("id")
    return found if isinstance(found, int | str) and not isinstance(found, bool) else None


def error_for(line: str, exc: ValidationError) -> types.JSONRPCError:
    """The JSON-RPC error response to ``line``, which the message model refused."""
    try:
        parsed = json.loads(line)
    except (ValueError, RecursionError):
        code, what = types.PARSE_ERROR, "parse error"
        request_id = _top_level_id(line)
    else:
        code, what = types.INVALID_REQUEST, "invalid request"
        request_id = parsed.get("id") if isinstance(parsed, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=types.ErrorData(code=code, message=f"{what}: {_reason(exc)}"[:_MAX_REASON]),
    )


def _top_level_id(line: str) -> int | str | None:
    """The ``id`` of a line JSON cannot read (nested too deeply, cut off), when it
    stands at the top level of the object before the trouble: the client then gets
    its answer under its own id rather than ``null``."""
    depth, in_string, escaped, start = 0, False, False, 0
    for i, char in enumerate(line):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                match = _TOP_ID.match(line, i + 1) if line[start:i] == "id" else None
                if depth == 1 and match is not None:
                    try:
                        value = json.loads(match.group(1))
                    except ValueError:
                        return None
                    return value if isinstance(value, int | str) else None
        elif char == '"':
            in_string, start = True, i + 1
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
    return None


def _reason(exc: ValidationError) -> str:
    first = exc.errors()[0]
    loc = ".".join(str(x) for x in first.get("loc", ()))
    return f"{loc}: {first['msg']}" if loc else str(first["msg"])
