"""``kgsearch communities build|status|list|show`` and the MCP community tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from click.testing import CliRunner
from mcp import Client

from kgsearch import Engine, connect
from kgsearch.cli import cli
from kgsearch.mcp.server import create_server, tool_payload
from kgsearch.model import ObjectIn, ObjectRef, RelationshipIn
from kgsearch.testing import FakeEmbedder


def _fill(engine: Engine, project: str) -> None:
    names = ["Ada", "Bob", "Cy"]
    engine.add_objects([ObjectIn(type="person", key=n) for n in names], project=project)
    engine.add_relationships(
        [
            RelationshipIn(
                type="KNOWS",
                source=ObjectRef(type="person", key=a),
                target=ObjectRef(type="person", key=b),
            )
            for a, b in (("Ada", "Bob"), ("Bob", "Cy"), ("Ada", "Cy"))
        ],
        project=project,
    )


def _cli(db: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--db", str(db), "--json", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_cli_build_status_list_show(tmp_path: Path) -> None:
    db = tmp_path / "kg.db"
    with Engine(connect(str(db)), embedder=FakeEmbedder(32)) as engine:
        _fill(engine, "default")
    built = _cli(db, "communities", "build")
    assert built["build"]["communities"] == 1 and built["reports"] == 1
    status = _cli(db, "communities", "status")
    assert status["reports"] == 1 and status["by_level"] == {"0": 1}
    listed = _cli(db, "communities", "list")
    cid = listed["items"][0]["id"]
    shown = _cli(db, "communities", "show", cid)
    assert shown["report"]["title"] == listed["items"][0]["title"]
    plain = CliRunner().invoke(cli, ["--db", str(db), "communities", "show", "c0-nope"])
    assert plain.exit_code == 1 and "no community" in plain.output
    assert "Traceback" not in plain.output


def test_mcp_community_tools(tmp_path: Path) -> None:
    with Engine(connect(str(tmp_path / "m.db")), embedder=FakeEmbedder(32)) as engine:
        _fill(engine, "alpha")
        server = create_server(engine, project="alpha", scopes=("read", "write"))
        readonly = create_server(engine, project="alpha", scopes=("read",))

        async def run() -> list[tuple[bool, Any]]:
            out: list[tuple[bool, Any]] = []
            first: list[tuple[str, dict[str, Any]]] = [
                ("build_communities", {}),
                ("communities", {}),
            ]
            with anyio.fail_after(30):
                async with Client(server) as client:
                    for tool, args in first:
                        result = await client.call_tool(tool, args)
                        out.append((result.is_error, tool_payload(result)))
                    cid = out[-1][1]["items"][0]["id"]
                    for tool, args in (
                        ("community", {"community_id": cid}),
                        ("community", {"community_id": "c0-nope"}),
                    ):
                        result = await client.call_tool(tool, args)
                        out.append((result.is_error, tool_payload(result)))
                async with Client(readonly) as client:
                    result = await client.call_tool("build_communities", {})
                    out.append((result.is_error, tool_payload(result)))
            return out

        (e1, built), (e2, listed), (e3, one), (e4, missing), (e5, refused) = anyio.run(run)
    assert not (e1 or e2 or e3) and built["reports"] == 1 and listed["total"] == 1
    assert one["report"]["title"] and len(one["community"]["members"]) == 3
    assert e4 and missing["error"]["code"] == "not_found"
    assert e5 and refused["error"]["code"] == "forbidden"
