"""REST and MCP over a store on the Citus cluster: the REST route suite of
tests/api/test_routes.py re-run with its engine over a distributed store, and an MCP
client searching and reading through the streamable HTTP server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from api.conftest import *  # noqa: F403
from api.test_routes import *  # noqa: F403
from live_server import LiveServer
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from kgsearch import Engine, ObjectIn
from kgsearch.mcp.server import create_server, key_guard, tool_payload
from kgsearch.testing import FakeEmbedder


@pytest.fixture  # type: ignore[no-redef]
def api_engine(store_factory: Any) -> Iterator[Engine]:
    """The route tests' engine, over a distributed store."""
    engine = Engine(store_factory(), embedder=FakeEmbedder(32))
    yield engine
    engine.close()


def test_mcp_search_and_get_object_run_through_the_coordinator(store_factory: Any) -> None:
    engine = Engine(store_factory(), embedder=FakeEmbedder(32))
    engine.add_objects(
        [ObjectIn(type="Person", key="ada", properties={"name": "Ada Lovelace"})],
        project="alpha",
    )
    engine.add_objects([ObjectIn(type="Person", key="ada")], project="beta")
    engine.embed_pending()
    key, _ = engine.create_api_key("alpha", "read")
    server = create_server(engine, project="alpha", scopes=["read"])
    live = LiveServer(
        key_guard(server.streamable_http_app(), engine, project="alpha", scopes=["read"])
    )
    url = live.start() + "/mcp"

    async def run() -> tuple[Any, Any]:
        with anyio.fail_after(60):
            async with (
                create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                found = tool_payload(await client.call_tool("search", {"query": "Ada"}))
                got = tool_payload(
                    await client.call_tool("get_object", {"type": "Person", "key": "ada"})
                )
                return found, got

    try:
        found, got = anyio.run(run)
    finally:
        live.stop()
        engine.close()
    assert [r["key"] for r in found["results"]] == ["ada"]  # project beta's ada left out
    assert got["properties"] == {"name": "Ada Lovelace"}
