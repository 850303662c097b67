"""A tool call the client gives up on drops its model call (its connection closed, the
thread and the LLM lane given back), instead of running on for nobody.

In-memory MCP client session over a real SQLite store; the chat model is the real
OpenAI-compatible client pointed at a loopback provider that holds answers for a
minute and notes when a request it holds is dropped. The client abandons the call
after a second (the SDK then sends ``notifications/cancelled``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from fault_provider import FaultyProvider
from mcp import Client

from kgsearch import Engine, ObjectIn, connect
from kgsearch.config import LLMSettings
from kgsearch.mcp.server import create_server, tool_payload
from kgsearch.testing import FakeEmbedder


@pytest.fixture
def faulty() -> Iterator[FaultyProvider]:
    served = FaultyProvider(slow_seconds=60.0)
    yield served
    served.stop()


def test_a_cancelled_ask_drops_its_model_call(tmp_path: Path, faulty: FaultyProvider) -> None:
    settings = LLMSettings(model="openai:fault", base_url=faulty.url, cache=False, max_retries=0)
    engine = Engine(
        connect(str(tmp_path / "c.db")), embedder=FakeEmbedder(32), llm_settings=settings
    )
    engine.add_objects([ObjectIn(type="Person", key="ada", properties={"name": "Ada Lovelace"})])
    engine.embed_pending()
    server = create_server(engine, project="default", scopes=("read", "llm"))
    faulty.set_chat_mode("slow")  # 60 s per answer

    async def run() -> tuple[bool, float, bool, object]:
        async with Client(server) as client:
            with anyio.move_on_after(1.0) as gave_up:
                await client.call_tool("ask", {"question": "who is Ada"})
            gone = time.monotonic()
            while not faulty.dropped and time.monotonic() < gone + 3.0:
                await anyio.sleep(0.05)
            # the one LLM lane slot is free again: the next answer does not wait
            faulty.set_chat_mode("ok")
            with anyio.fail_after(10):
                answered = await client.call_tool("ask", {"question": "who is Ada"})
        return gave_up.cancelled_caught, gone, answered.is_error, tool_payload(answered)

    with engine:
        cancelled, gone, failed, payload = anyio.run(run)

    assert cancelled, "the model answered within a second: nothing was cancelled"
    assert faulty.dropped, "the model call ran on for nobody"
    assert faulty.dropped[0] - gone < 2.0
    assert not failed, payload
