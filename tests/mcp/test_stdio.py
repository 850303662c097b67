"""The MCP server over stdio (`kgsearch mcp`), driven by the official SDK's own client.

One server process is started per scenario (a module-scoped session runs every call
and the tests check its answers), with the fake embedder selected through settings,
over a store seeded and embedded by the library.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from live_server import child_env
from mcp import Client, StdioServerParameters

from kgsearch import ChunkIn, Engine, ObjectIn, RelationshipIn, SourceIn, connect
from kgsearch.mcp.server import tool_payload
from kgsearch.testing import FakeEmbedder

TOOLS = [
    "add_objects",
    "add_relationships",
    "add_text",
    "ask",
    "build_communities",
    "communities",
    "community",
    "context",
    "delete_document",
    "embedding_status",
    "entity_candidates",
    "explain",
    "extract_preview",
    "extraction_status",
    "get_object",
    "get_relationship",
    "merge_entities",
    "neighbors",
    "object_communities",
    "search",
    "split_entity",
]


def seed(path: Path) -> dict[str, str]:
    """A small embedded graph in project alpha; returns ids by name."""
    with Engine(connect(str(path)), embedder=FakeEmbedder(32)) as engine:
        ada, acme = engine.add_objects(
            [
                ObjectIn(type="Person", key="ada", properties={"name": "Ada Lovelace"}),
                ObjectIn(type="Org", key="acme", properties={"name": "Acme Corp"}),
            ],
            project="alpha",
        )
        (rel,) = engine.add_relationships(
            [RelationshipIn(type="WORKS_FOR", source=ada.id, target=acme.id)], project="alpha"
        )
        engine.add_sources([SourceIn(id="doc", title="Notes")], project="alpha")
        engine.add_chunks(
            [ChunkIn(id="c1", text="Ada wrote the first program.", source_id="doc")],
            project="alpha",
        )
        engine.embed_pending()
        return {"ada": ada.id, "acme": acme.id, "rel": rel.id}


def session(
    db: Path, calls: Callable[[Client], Awaitable[dict[str, Any]]], *args: str
) -> dict[str, Any]:
    """Start `kgsearch mcp` over stdio, run ``calls`` with a connected client, stop it."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kgsearch", "--db", str(db), "--project", "alpha", "mcp", *args],
        env=child_env(KGSEARCH_EMBED__MODEL="fake:32"),
    )

    async def run() -> dict[str, Any]:
        with anyio.fail_after(60):
            async with Client(params) as client:
                return await calls(client)

    return anyio.run(run)


async def _full_session(client: Client) -> dict[str, Any]:
    out: dict[str, Any] = {"tools": [t.name for t in (await client.list_tools()).tools]}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": "Ada works for Acme", "include_debug": True}),
        ("context", {"query": "Ada works for Acme", "max_tokens": 100}),
        (
            "context_sections",
            {"query": "Ada works for Acme", "recipe": "mix", "style": "sections"},
        ),
        ("explain", {"query": "Ada"}),
        ("ask_offline", {"question": "who does Ada work for", "no_llm": True}),
        ("ask_no_model", {"question": "who does Ada work for"}),
        ("get_object_by_key", {"type": "Person", "key": "ada"}),
        ("embedding_status", {}),
        ("add_objects", {"objects": [{"type": "Person", "key": "grace"}]}),
        (
            "add_relationships",
            {
                "relationships": [
                    {
                        "type": "KNOWS",
                        "source": {"type": "Person", "key": "grace"},
                        "target": {"type": "Person", "key": "ada"},
                    }
                ]
            },
        ),
        ("add_text", {"text": "Grace wrote a compiler.", "title": "More notes", "extract": False}),
        ("extraction_status", {}),
        ("missing_object", {"id": "nope"}),
        ("long_query", {"query": "x" * 801}),
        ("bad_limit", {"query": "x", "limit": 101}),
        ("unknown_tool", {}),
    ]
    for name, args in calls:
        tool = {
            "get_object_by_key": "get_object",
            "missing_object": "get_object",
            "long_query": "search",
            "bad_limit": "search",
            "unknown_tool": "no_such_tool",
            "context_sections": "context",
            "ask_offline": "ask",
            "ask_no_model": "ask",
        }.get(name, name)
        result = await client.call_tool(tool, args)
        out[name] = (result.is_error, tool_payload(result))
    return out


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("mcp") / "mcp.db"
    return path, seed(path)


@pytest.fixture(scope="module")
def full(db: tuple[Path, dict[str, str]]) -> dict[str, Any]:
    return session(db[0], _full_session, "--no-worker")


def test_the_server_lists_every_tool(full: dict[str, Any]) -> None:
    assert sorted(full["tools"]) == TOOLS


def test_search_returns_the_unified_response(full: dict[str, Any]) -> None:
    error, body = full["search"]

    assert error is False
    assert {r["type"] for r in body["results"]} == {"graph", "relationship", "text"}
    assert body["metadata"]["fusionStrategy"] == "rrf"
    assert "score_distribution" in body["debug"]


def test_context_sections_cite_their_rows(
    full: dict[str, Any], db: tuple[Path, dict[str, str]]
) -> None:
    error, body = full["context_sections"]

    assert error is False
    assert "## Entities" in body["context"] and "## Relationships" in body["context"]
    assert body["citations"]["E1"] in db[1].values()
    assert all(f"[{c}]" in body["context"] for c in body["citations"])


def test_context_returns_prompt_lines(full: dict[str, Any]) -> None:
    error, body = full["context"]

    assert error is False
    assert "- Ada Lovelace works for Acme Corp" in body["context"].splitlines()


def test_explain_returns_the_legs(full: dict[str, Any]) -> None:
    assert "objects:vector" in full["explain"][1]["legs"]
    assert any("objects" in s["sql"] for s in full["explain"][1]["statements"]["objects:bm25"])


def test_ask_offline_answers_with_cited_top_facts(
    full: dict[str, Any], db: tuple[Path, dict[str, str]]
) -> None:
    error, body = full["ask_offline"]

    assert (error, body["offline"]) == (False, True)
    assert "Ada Lovelace works for Acme Corp [R1]" in body["answer"]
    refs = {r["cite"]: r["id"] for r in body["references"]}
    assert refs["R1"] == db[1]["rel"]


def test_ask_with_no_model_configured_is_a_clear_error(full: dict[str, Any]) -> None:
    error, body = full["ask_no_model"]

    assert error is True
    assert body["error"]["code"] == "invalid_request"
    assert "no_llm" in body["error"]["message"] or "--no-llm" in body["error"]["message"]


def test_get_object_by_type_and_key(full: dict[str, Any], db: tuple[Path, dict[str, str]]) -> None:
    error, body = full["get_object_by_key"]

    assert (error, body["id"], body["project"]) == (False, db[1]["ada"], "alpha")


def test_embedding_status_counts_the_project(full: dict[str, Any]) -> None:
    body = full["embedding_status"][1]

    assert {r["project"] for r in body["rows"]} == {"alpha"}
    assert body["percent_embedded"] == 100.0


def test_extraction_status_counts_nothing_before_any_extraction(full: dict[str, Any]) -> None:
    error, body = full["extraction_status"]

    assert (error, body["counts"], body["entities"]) == (
        False,
        {"pending": 0, "running": 0, "done": 0, "failed": 0, "dead": 0},
        0,
    )


def test_writes_store_pending_rows(full: dict[str, Any]) -> None:
    objects = full["add_objects"][1]["items"]
    rels = full["add_relationships"][1]["items"]
    text = full["add_text"][1]

    assert [(o["key"], o["embedding"]["status"]) for o in objects] == [("grace", "pending")]
    assert rels[0]["embedding"]["text"] == "grace knows Ada Lovelace"
    assert (text["source"]["title"], text["chunks"][0]["text"]) == (
        "More notes",
        "Grace wrote a compiler.",
    )


@pytest.mark.parametrize(
    ("call", "code"),
    [
        ("missing_object", "not_found"),
        ("long_query", "invalid_request"),
        ("bad_limit", "invalid_request"),
        ("unknown_tool", "not_found"),
    ],
)
def test_errors_carry_the_rest_error_shape(full: dict[str, Any], call: str, code: str) -> None:
    error, body = full[call]

    assert error is True
    assert set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code


def test_a_read_only_server_refuses_writes_and_debug(db: tuple[Path, dict[str, str]]) -> None:
    async def calls(client: Client) -> dict[str, Any]:
        write = await client.call_tool("add_text", {"text": "nope"})
        debug = await client.call_tool("search", {"query": "Ada", "include_debug": True})
        read = await client.call_tool("search", {"query": "Ada"})
        return {"write": tool_payload(write), "debug": tool_payload(debug), "read": read.is_error}

    out = session(db[0], calls, "--scopes", "read", "--no-worker")

    assert out["write"]["error"]["code"] == "forbidden"
    assert out["debug"]["error"]["details"] == {"required_scope": "debug", "scopes": ["read"]}
    assert out["read"] is False
