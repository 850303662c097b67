"""Raw JSON-RPC lines a careless or hostile client writes to `kgsearch mcp` over stdio
(issue 18, defect 8): every request gets a response, so no client waits forever, and
the server keeps serving after each.

The client here is a plain pipe, not the SDK's: the SDK's client never sends such
lines. A line that is not JSON gets ``-32700`` (with the request's id when it stands
at the top level, else ``null``); JSON that is not a valid message gets ``-32600``
with its id; unknown tool arguments are a tool error, as unknown fields are in REST.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from live_server import child_env

import kgsearch
from kgsearch import Engine, ObjectIn, connect
from kgsearch.testing import FakeEmbedder

ANSWER_SECONDS = 30.0  # a bound that only a missing answer reaches


class RawClient:
    """`kgsearch mcp` over pipes, one JSON-RPC line at a time."""

    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kgsearch", "--db", str(db), "mcp", "--no-worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**child_env(KGSEARCH_EMBED__MODEL="fake:16"), "PATH": "/usr/bin:/bin"},
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, line: str | bytes) -> None:
        assert self.process.stdin is not None
        raw = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
        self.process.stdin.write(raw.rstrip(b"\n") + b"\n")
        self.process.stdin.flush()

    def answer(self) -> dict[str, Any]:
        try:
            reply: dict[str, Any] = json.loads(self.lines.get(timeout=ANSWER_SECONDS))
        except queue.Empty:
            raise AssertionError("no response: the client would wait forever") from None
        return reply

    def request(self, id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.send(json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        return self.answer()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawClient]:
    db = tmp_path_factory.mktemp("stdio") / "g.db"
    with Engine(connect(str(db)), embedder=FakeEmbedder(16)) as engine:
        engine.add_objects([ObjectIn(type="Person", key="ada", properties={"name": "Ada"})])
        engine.embed_pending()
    raw = RawClient(db)
    initialize(raw)
    yield raw
    raw.close()


def initialize(raw: RawClient) -> dict[str, Any]:
    """The MCP handshake; returns the server's ``initialize`` result."""
    init = raw.request(
        0,
        "initialize",
        {
            "protocolVersion": mcp_types.LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    )
    assert "result" in init, init
    raw.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    result: dict[str, Any] = init["result"]
    return result


def call(id: int, arguments: str) -> str:
    """A tools/call line of the search tool with ``arguments`` as raw JSON text."""
    return (
        f'{{"jsonrpc": "2.0", "id": {id}, "method": "tools/call", '
        f'"params": {{"name": "search", "arguments": {arguments}}}}}'
    )


def alive(client: RawClient, id: int) -> None:
    assert client.request(id, "ping", {}) == {"jsonrpc": "2.0", "id": id, "result": {}}


@pytest.mark.parametrize(
    ("line", "code", "id"),
    [
        ("this is not json", -32700, None),
        (b"\xff\xfe{garbage", -32700, None),
        ("[1, 2", -32700, None),
        ("{}", -32600, None),
        ('{"jsonrpc": "2.0", "id": 11}', -32600, 11),
        ('{"jsonrpc": "2.0", "id": "s-12", "method": 5}', -32600, "s-12"),
        (call(13, '{"query": "\\ud800"}'), -32600, 13),  # a lone surrogate
        (call(14, '{"query": "a", "x": ' + "[" * 400 + "]" * 400 + "}"), -32600, 14),
        (call(15, '{"query": "a", "x": ' + "[" * 50_000 + "]" * 50_000 + "}"), -32700, 15),
        (call(16, '{"query": "a", "x": ' + "[" * 50_000), -32700, 16),  # cut off too
    ],
)
def test_every_unreadable_line_gets_a_json_rpc_error(
    client: RawClient, line: str | bytes, code: int, id: int | str | None
) -> None:
    client.send(line)
    reply = client.answer()
    assert (reply["id"], reply["error"]["code"]) == (id, code)
    assert reply["error"]["message"]
    alive(client, 99)


def test_unknown_tool_arguments_are_refused(client: RawClient) -> None:
    reply = client.request(
        21, "tools/call", {"name": "search", "arguments": {"query": "Ada", "limt": 3}}
    )
    result = reply["result"]
    assert result["isError"] is True
    error = json.loads(result["content"][0]["text"])["error"]
    assert error["code"] == "invalid_request" and error["details"] == {"unknown": ["limt"]}


def test_a_deep_argument_the_parser_reads_is_refused_by_the_tool(client: RawClient) -> None:
    deep: Any = {}
    for _ in range(100):
        deep = {"a": deep}
    reply = client.request(
        22,
        "tools/call",
        {
            "name": "add_objects",
            "arguments": {"objects": [{"type": "T", "key": "k", "properties": deep}]},
        },
    )
    assert reply["result"]["isError"] is True
    assert "deeper than 32 levels" in reply["result"]["content"][0]["text"]


# Property: every request gets a response ---------------------------------------------
JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False),
        st.text(max_size=20),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
TOOLS = st.sampled_from(
    ["search", "context", "get_object", "neighbors", "add_objects", "add_text", "nope"]
)
ARGUMENT_NAMES = st.sampled_from(
    ["query", "limit", "id", "type", "key", "objects", "text", "filters", "depth", "zzz"]
)
FUZZ = settings(
    max_examples=40,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
_ids = iter(range(10_000, 10**9))


def answered(
    client: RawClient, line: str | bytes, expect: int | None = None
) -> list[dict[str, Any]]:
    """Send ``line`` then a ping; return the other replies read until the ping's has
    come and, with ``expect``, the reply with that id too (the server answers requests
    concurrently, so a quick ping may overtake a tool call)."""
    client.send(line)
    ping = next(_ids)
    client.send(json.dumps({"jsonrpc": "2.0", "id": ping, "method": "ping"}))
    replies: list[dict[str, Any]] = []
    pinged = False
    while not pinged or (expect is not None and expect not in [r.get("id") for r in replies]):
        reply = client.answer()
        if reply.get("id") == ping:
            pinged = True
        else:
            replies.append(reply)
    return replies


@FUZZ
@given(tool=TOOLS, arguments=st.dictionaries(ARGUMENT_NAMES, JSON_VALUES, max_size=4))
def test_every_tool_call_gets_a_response(
    client: RawClient, tool: str, arguments: dict[str, Any]
) -> None:
    id = next(_ids)
    params = {"name": tool, "arguments": arguments}
    line = json.dumps({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    replies = answered(client, line, expect=id)
    assert [r["id"] for r in replies] == [id]
    assert "result" in replies[0] or "error" in replies[0]


@FUZZ
@given(
    body=st.one_of(
        st.text(max_size=40),
        st.binary(max_size=40),
        JSON_VALUES.map(json.dumps),
        st.builds(
            lambda method, params: {"jsonrpc": "2.0", "method": method, "params": params},
            st.sampled_from(["tools/call", "tools/list", "ping", "nope", ""]),
            JSON_VALUES,
        ),
    ),
    with_id=st.booleans(),
)
def test_every_raw_line_with_an_id_gets_its_response(
    client: RawClient, body: Any, with_id: bool
) -> None:
    id = next(_ids)
    if isinstance(body, dict):
        if with_id:
            body = {**body, "id": id}
        line: str | bytes = json.dumps(body)
    else:
        line = body
    if isinstance(line, bytes):
        line = line.replace(b"\n", b" ").replace(b"\r", b" ")
    else:
        line = line.replace("\n", " ").replace("\r", " ").replace("\u2028", " ")
    expected = id if isinstance(body, dict) and with_id else None
    replies = answered(client, line, expect=expected)
    if expected is not None:
        assert [r["id"] for r in replies] == [id], replies
    for reply in replies:
        assert reply["jsonrpc"] == "2.0" and ("result" in reply or "error" in reply)


def test_calls_in_flight_when_stdin_closes_are_still_answered(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    with Engine(connect(str(db)), embedder=FakeEmbedder(16)) as engine:
        engine.add_objects([ObjectIn(type="Person", key="ada", properties={"name": "Ada"})])
        engine.embed_pending()
    raw = RawClient(db)
    server = initialize(raw)["serverInfo"]
    assert (server["name"], server["version"]) == ("kgsearch", kgsearch.__version__)
    for id in range(1, 4):  # the last calls, then the client closes its end at once
        raw.send(call(id, '{"query": "Ada", "limit": 3}'))
    assert raw.process.stdin is not None
    raw.process.stdin.close()
    assert raw.process.wait(timeout=ANSWER_SECONDS) == 0
    answers = [raw.answer() for _ in range(3)]  # each waits for the reader thread
    raw.close()
    assert sorted(a["id"] for a in answers) == [1, 2, 3]
    assert all("result" in a and not a["result"].get("isError") for a in answers), answers
