"""The MCP server over streamable HTTP on loopback, guarded by API keys (SDK client)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from live_server import LiveServer
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from kgsearch import Engine, ObjectIn, connect
from kgsearch.mcp.server import create_server, key_guard, tool_payload
from kgsearch.testing import FakeEmbedder


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with Engine(connect(str(tmp_path / "http.db")), embedder=FakeEmbedder(32)) as engine:
        engine.add_objects(
            [ObjectIn(type="Person", key="ada", properties={"name": "Ada"})], project="alpha"
        )
        engine.add_objects([ObjectIn(type="Person", key="bob")], project="beta")
        engine.embed_pending()
        yield engine


@pytest.fixture
def url(engine: Engine) -> Iterator[str]:
    """An MCP server of project alpha (read scope) behind the key guard."""
    server = create_server(engine, project="alpha", scopes=["read"])
    app = key_guard(server.streamable_http_app(), engine, project="alpha", scopes=["read"])
    live = LiveServer(app)
    yield live.start() + "/mcp"
    live.stop()


def call(url: str, key: str, tool: str, args: dict[str, Any]) -> Any:
    """Connect with the SDK client sending ``key`` and call one tool."""

    async def run() -> Any:
        headers = {"Authorization": f"Bearer {key}"}
        with anyio.fail_after(30):
            async with (
                create_mcp_http_client(headers=headers) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                return tool_payload(await client.call_tool(tool, args))

    return anyio.run(run)


def test_a_key_of_the_project_can_search(url: str, engine: Engine) -> None:
    key, _ = engine.create_api_key("alpha", "read")

    body = call(url, key, "search", {"query": "Ada"})

    assert [r["key"] for r in body["results"]] == ["ada"]


@pytest.mark.parametrize(
    ("project", "scopes", "status"),
    [(None, None, 401), ("beta", "read", 403), ("alpha", "write", 403)],
)
def test_other_keys_are_refused(
    url: str, engine: Engine, project: str | None, scopes: str | None, status: int
) -> None:
    headers = {}
    if project is not None and scopes is not None:
        key, _ = engine.create_api_key(project, scopes)
        headers["Authorization"] = f"Bearer {key}"

    response = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers)

    assert response.status_code == status
    assert set(response.json()["error"]) == {"code", "message", "details"}
