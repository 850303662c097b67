"""The MCP text → graph tools in process (the SDK's client over an in-memory
transport): ``add_text`` extracts with the fake extractor, ``extraction_status`` and
``extract_preview`` read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from kgsearch import Engine, ObjectIn, connect
from kgsearch.config import ExtractSettings
from kgsearch.errors import InvalidRequest
from kgsearch.extract.schema import Extractor
from kgsearch.keys import Scope
from kgsearch.mcp.server import create_server, tool_payload
from kgsearch.testing import FakeEmbedder, FakeExtractor

DOC = (
    "Ada Lovelace worked with Charles Babbage on the Analytical Engine.\n\n"
    "Charles Babbage designed the Difference Engine in London."
)
NONE = {"pending": 0, "running": 0, "done": 0, "failed": 0, "dead": 0}


def make_engine(path: Path, extractor: FakeExtractor | None) -> Engine:
    """An engine over ``path`` whose extractor is ``extractor`` (None: none exists)."""

    def extractors(name: str, domain: str) -> Extractor:
        if extractor is None:
            raise InvalidRequest(f"unknown extractor {name!r}")
        return extractor

    return Engine(
        connect(str(path)),
        embedder=FakeEmbedder(32),
        extractors=extractors,
        extract_settings=ExtractSettings(backoff_seconds=0, max_attempts=2),
    )


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with make_engine(tmp_path / "mcp.db", FakeExtractor()) as engine:
        yield engine


def calls(
    engine: Engine,
    *steps: tuple[str, dict[str, Any]],
    scopes: tuple[Scope, ...] = ("read", "write"),
) -> list[tuple[bool, Any]]:
    """Call tools in order on a server of project alpha; (is_error, payload) each."""
    server = create_server(engine, project="alpha", scopes=scopes)

    async def run() -> list[tuple[bool, Any]]:
        out = []
        with anyio.fail_after(30):
            async with Client(server) as client:
                for tool, args in steps:
                    result = await client.call_tool(tool, args)
                    out.append((result.is_error, tool_payload(result)))
        return out

    return anyio.run(run)


def test_add_text_stores_and_extracts(engine: Engine) -> None:
    [(error, body)] = calls(engine, ("add_text", {"text": DOC, "title": "Notes", "max_chars": 100}))

    assert error is False
    assert (body["source"]["title"], len(body["chunks"]), body["queued"]) == ("Notes", 2, 2)
    assert (body["extraction"]["extracted"], body["extraction"]["failed"]) == (2, 0)
    assert body["extraction"]["entities"] == 6
    assert body["extraction"]["relationships"] == 4


def test_what_add_text_extracted_is_in_the_graph(engine: Engine) -> None:
    (_, (error, found), (_, status)) = calls(
        engine,
        ("add_text", {"text": DOC, "max_chars": 100}),
        ("get_object", {"type": "thing", "key": "charles babbage"}),
        ("extraction_status", {}),
    )

    assert (error, found["properties"]["name"]) == (False, "Charles Babbage")
    assert status["counts"] == {**NONE, "done": 2}
    assert (status["entities"], status["relationships"]) == (6, 4)


def test_add_text_without_extract_only_stores(engine: Engine) -> None:
    ((error, body), (_, status)) = calls(
        engine, ("add_text", {"text": DOC, "extract": False}), ("extraction_status", {})
    )

    assert (error, sorted(body)) == (False, ["chunks", "source"])
    assert status["counts"] == NONE


def test_a_failed_chunk_is_reported_and_left_queued(engine: Engine) -> None:
    ((_, body), (_, status)) = calls(
        engine, ("add_text", {"text": "Ada said UNPARSEABLE."}), ("extraction_status", {})
    )

    assert (body["extraction"]["failed"], body["extraction"]["extracted"]) == (1, 0)
    assert status["counts"] == {**NONE, "failed": 1}
    assert next(iter(status["failures"].values())).startswith("reply could not be parsed")


def test_without_an_extractor_add_text_fails_before_storing(tmp_path: Path) -> None:
    with make_engine(tmp_path / "none.db", None) as engine:
        [(error, body)] = calls(engine, ("add_text", {"text": DOC}))

        assert (error, body["error"]["code"]) == (True, "invalid_request")
        assert engine.stats(project="alpha").counts.get("chunks", 0) == 0


def test_extract_preview_returns_the_extraction_and_writes_nothing(engine: Engine) -> None:
    ((error, body), (_, status)) = calls(
        engine,
        ("extract_preview", {"text": "Ada Lovelace met Grace Hopper."}),
        ("extraction_status", {}),
        scopes=("read",),
    )

    assert error is False
    assert [e["name"] for e in body["graph"]["entities"]] == ["Ada Lovelace", "Grace Hopper"]
    assert status["counts"] == NONE
    assert engine.stats(project="alpha").counts.get("chunks", 0) == 0


@pytest.mark.parametrize("text", ["", "   \n"])
def test_extract_preview_of_blank_text_is_invalid(engine: Engine, text: str) -> None:
    [(error, body)] = calls(engine, ("extract_preview", {"text": text}))

    assert (error, body["error"]["code"]) == (True, "invalid_request")


def test_a_read_only_server_refuses_add_text(engine: Engine) -> None:
    [(error, body)] = calls(engine, ("add_text", {"text": DOC}), scopes=("read",))

    assert (error, body["error"]["code"]) == (True, "forbidden")
    assert engine.stats(project="alpha").counts.get("chunks", 0) == 0


def test_delete_document_takes_what_it_built(engine: Engine) -> None:
    ((_, added), (error, deleted), (_, status), (_, gone)) = calls(
        engine,
        ("add_text", {"text": DOC, "max_chars": 100, "source_id": "notes"}),
        ("delete_document", {"source_id": "notes"}),
        ("extraction_status", {}),
        ("delete_document", {"source_id": "notes"}),
    )

    assert error is False and added["source"]["id"] == "notes"
    assert (deleted["sources"], deleted["chunks"], deleted["objects_deleted"]) == (1, 2, 5)
    assert deleted["relationships_deleted"] == 4
    assert status["counts"] == NONE and status["entities"] == 0
    assert engine.list_rows("object").items == [] and gone["sources"] == 0


def test_entity_tools_propose_merge_and_split(engine: Engine) -> None:
    ada, twin = engine.add_objects(
        [ObjectIn(type="person", key="Ada Lovelace"), ObjectIn(type="person", key="ada lovelace.")],
        project="alpha",
    )
    (_, proposed), (merge_error, merged), (_, after), (split_error, _) = calls(
        engine,
        ("entity_candidates", {}),
        ("merge_entities", {"keep": ada.id, "merge": [twin.id]}),
        ("entity_candidates", {}),
        ("split_entity", {"keep": ada.id, "merged": twin.id}),
    )

    assert proposed["total"] == 1 and proposed["proposals"][0]["reason"] == "exact"
    assert merge_error is False and merged["objects"] == [twin.id]
    assert after["total"] == 0
    assert split_error is False
    assert engine.get_object(twin.id, project="alpha").key == "ada lovelace."
