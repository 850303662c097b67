"""Adapter parity: the library, CLI ``--json``, REST and MCP return the same JSON payload.

Reads run against one seeded store: the library call (its result as JSON), the CLI
through click's runner, the REST API on a real uvicorn server and the MCP server
over stdio with the SDK client. Writes start from identical copies of the store, one
per surface. Only what legitimately differs between two runs is normalised: search
timings (``executionTime``), row timestamps, and explain's statements down to the
stages that ran them (which statements run depends on what the process has cached).
The CLI has no write commands and no neighbours command, so those operations compare
three surfaces.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from live_server import LiveServer, child_env, client
from mcp import Client, StdioServerParameters
from pydantic_core import to_jsonable_python

from kgsearch import (
    ChunkIn,
    Engine,
    KgsearchError,
    ObjectIn,
    RelationshipIn,
    SourceIn,
    connect,
)
from kgsearch.api.app import create_app
from kgsearch.cli import cli
from kgsearch.mcp.server import tool_payload
from kgsearch.testing import FakeEmbedder

P = "alpha"
ENV = {"KGSEARCH_EMBED__MODEL": "fake:32"}
QUERY = "Ada works for Acme"
NEW_OBJECTS = [{"type": "Person", "key": "grace", "properties": {"name": "Grace Hopper"}}]
NEW_RELS = [
    {
        "type": "KNOWS",
        "source": {"type": "Person", "key": "grace"},
        "target": {"type": "Person", "key": "ada"},
    }
]
NEW_TEXT = "Grace Hopper wrote the first compiler.\n\nAda wrote the first program."


def normalise(value: Any) -> Any:
    """Drop what differs between two identical calls: timings (of the search and of each
    leg), row timestamps and the statements each explained stage ran (cache reads come
    and go)."""
    if isinstance(value, dict):
        return {k: _normalise_field(k, v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


def _normalise_field(name: str, value: Any) -> Any:
    if name in ("executionTime", "created_at", "updated_at"):
        return "<t>"
    if name in ("leg_ms", "legMs"):  # each leg's own time: its legs, not their times
        return sorted(value)
    if name == "statements":
        return sorted(value)  # the stages traced: the same on every surface
    if name == "notes" and isinstance(value, dict):
        # whether a BM25 leg scored from the held postings depends on whether this
        # process has read them yet (a server has, a one-off CLI search has not): the
        # scores are the same either way (tests/store/sqlite/test_sqlite_held_bm25.py)
        kept = {leg: [n for n in notes if not _held_note(n)] for leg, notes in value.items()}
        return {leg: notes for leg, notes in kept.items() if notes}
    return normalise(value)


def _held_note(note: str) -> bool:
    held = note.startswith(("BM25 from the held postings", "best rows checked"))
    return held or note.endswith("re-scored by BM25 over every query word")  # FTS5's path


def seed(path: Path) -> dict[str, str]:
    with Engine(connect(str(path)), embedder=FakeEmbedder(32)) as engine:
        ada, acme = engine.add_objects(
            [
                ObjectIn(type="Person", key="ada", properties={"name": "Ada Lovelace", "age": 36}),
                ObjectIn(type="Org", key="acme", properties={"name": "Acme Corp"}),
            ],
            project=P,
        )
        (rel,) = engine.add_relationships(
            [RelationshipIn(type="WORKS_FOR", source=ada.id, target=acme.id)], project=P
        )
        engine.add_sources([SourceIn(id="doc", title="Memo")], project=P)
        engine.add_chunks(
            [ChunkIn(id="c1", text="Ada Lovelace works at Acme as an analyst.", source_id="doc")],
            project=P,
        )
        engine.embed_pending()
    return {"ada": ada.id, "acme": acme.id, "rel": rel.id}


# (operation, library call, CLI args, REST request, MCP tool call)
def read_ops(ids: dict[str, str]) -> list[tuple[str, Any, Any, Any, Any]]:
    return [
        (
            "search",
            lambda e: e.search(QUERY, limit=5, project=P),
            ["search", QUERY, "--limit", "5"],
            ("POST", "/api/search/unified", {"query": QUERY, "limit": 5}),
            ("search", {"query": QUERY, "limit": 5}),
        ),
        (
            "search_typed",
            lambda e: e.search(QUERY, result_types="graph", type_hint="person", project=P),
            ["search", QUERY, "--result-types", "graph", "--type-hint", "person"],
            (
                "POST",
                "/api/search/unified",
                {"query": QUERY, "resultTypes": "graph", "typeHint": "person"},
            ),
            ("search", {"query": QUERY, "result_types": "graph", "type_hint": "person"}),
        ),
        (
            "context",
            lambda e: e.context(QUERY, max_tokens=60, project=P),
            ["context", QUERY, "--max-tokens", "60"],
            ("POST", "/api/search/context", {"query": QUERY, "maxTokens": 60}),
            ("context", {"query": QUERY, "max_tokens": 60}),
        ),
        (
            "explain",
            lambda e: e.explain(QUERY, limit=5, project=P),
            ["search", QUERY, "--limit", "5", "--explain"],
            ("POST", "/api/search/explain", {"query": QUERY, "limit": 5}),
            ("explain", {"query": QUERY, "limit": 5}),
        ),
        (
            "get_object",
            lambda e: e.get_object(ids["ada"], project=P),
            ["objects", "get", ids["ada"]],
            ("GET", f"/api/graph/objects/{ids['ada']}", None),
            ("get_object", {"id": ids["ada"]}),
        ),
        (
            "get_relationship",
            lambda e: e.get_relationship(ids["rel"], project=P),
            ["relationships", "get", ids["rel"]],
            ("GET", f"/api/graph/relationships/{ids['rel']}", None),
            ("get_relationship", {"id": ids["rel"]}),
        ),
        (
            "embedding_status",
            lambda e: e.embedding_status(project=P),
            ["embed", "status"],
            ("GET", "/api/embeddings/status", None),
            ("embedding_status", {}),
        ),
        (
            "neighbors",
            lambda e: e.neighborhood(ids["ada"], project=P),
            None,
            ("GET", f"/api/graph/objects/{ids['ada']}/neighbors", None),
            ("neighbors", {"id": ids["ada"]}),
        ),
        (
            "not_found",
            lambda e: e.get_object("nope", project=P),
            ["objects", "get", "nope"],
            ("GET", "/api/graph/objects/nope", None),
            ("get_object", {"id": "nope"}),
        ),
    ]


def write_ops() -> list[tuple[str, Any, Any, Any]]:
    return [
        (
            "add_objects",
            lambda e: {"items": e.add_objects([ObjectIn(**o) for o in NEW_OBJECTS], project=P)},
            ("POST", "/api/graph/objects/bulk", {"items": NEW_OBJECTS}),
            ("add_objects", {"objects": NEW_OBJECTS}),
        ),
        (
            "add_relationships",
            lambda e: {
                "items": e.add_relationships(
                    [RelationshipIn.model_validate(r) for r in NEW_RELS], project=P
                )
            },
            ("POST", "/api/graph/relationships/bulk", {"items": NEW_RELS}),
            ("add_relationships", {"relationships": NEW_RELS}),
        ),
        (
            "add_text",
            lambda e: e.add_text(NEW_TEXT, title="Notes", max_chars=100, project=P),
            ("POST", "/api/text", {"text": NEW_TEXT, "title": "Notes", "max_chars": 100}),
            ("add_text", {"text": NEW_TEXT, "title": "Notes", "max_chars": 100, "extract": False}),
        ),
    ]


def library(path: Path, calls: list[Any]) -> list[Any]:
    """Each call's result as JSON (an error as its wire shape, as adapters report it)."""
    results = []
    with Engine(connect(str(path)), embedder=FakeEmbedder(32)) as engine:
        for call in calls:
            try:
                results.append(to_jsonable_python(call(engine)))
            except KgsearchError as exc:
                results.append(exc.to_dict())
    return results


def rest(path: Path, requests: list[Any]) -> list[Any]:
    with Engine(connect(str(path)), embedder=FakeEmbedder(32)) as engine:
        key, _ = engine.create_api_key(P, "read,write,debug")
        server = LiveServer(create_app(engine))
        base = server.start()
        try:
            with client(base, key) as c:
                return [c.request(m, url, json=body).json() for m, url, body in requests]
        finally:
            server.stop()


def mcp(path: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kgsearch", "--db", str(path), "--project", P, "mcp", "--no-worker"],
        env=child_env(**ENV),
    )

    async def run() -> list[Any]:
        with anyio.fail_after(60):
            async with Client(params) as client:
                return [tool_payload(await client.call_tool(n, a)) for n, a in calls]

    return anyio.run(run)


def cli_json(path: Path, args: list[str] | None) -> Any:
    if args is None:
        return None
    result = CliRunner().invoke(cli, ["--db", str(path), "--project", P, "--json", *args], env=ENV)
    return json.loads(result.stdout)


class Payloads:
    """Every operation's payload from every surface."""

    def __init__(self, tmp: Path) -> None:
        db = tmp / "parity.db"
        ids = seed(db)
        ops = read_ops(ids)
        self.read_names = [op[0] for op in ops]
        self.read = {
            "library": library(db, [op[1] for op in ops]),
            "cli": [cli_json(db, op[2]) for op in ops],
            "rest": rest(db, [op[3] for op in ops]),
            "mcp": mcp(db, [op[4] for op in ops]),
        }
        writes = write_ops()
        self.write_names = [op[0] for op in writes]
        copies = {}
        for surface in ("library", "rest", "mcp"):
            copies[surface] = tmp / f"write-{surface}.db"
            shutil.copy(db, copies[surface])
        self.write = {
            "library": library(copies["library"], [op[1] for op in writes]),
            "rest": rest(copies["rest"], [op[2] for op in writes]),
            "mcp": mcp(copies["mcp"], [op[3] for op in writes]),
        }


@pytest.fixture(scope="module")
def payloads(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Payloads]:
    yield Payloads(tmp_path_factory.mktemp("parity"))


@pytest.mark.parametrize("op", [op[0] for op in read_ops({"ada": "", "rel": ""})])
def test_reads_return_the_same_payload_everywhere(payloads: Payloads, op: str) -> None:
    i = payloads.read_names.index(op)
    got = {surface: normalise(values[i]) for surface, values in payloads.read.items()}
    reference = got["rest"]

    assert reference is not None
    for surface, value in got.items():
        if value is not None:
            assert value == reference, f"{surface} differs from rest for {op}"


@pytest.mark.parametrize("op", [op[0] for op in write_ops()])
def test_writes_return_the_same_payload_everywhere(payloads: Payloads, op: str) -> None:
    i = payloads.write_names.index(op)
    got = {surface: normalise(values[i]) for surface, values in payloads.write.items()}

    assert got["library"] == got["rest"] == got["mcp"]


def test_every_surface_answered_every_read(payloads: Payloads) -> None:
    for surface, values in payloads.read.items():
        for name, value in zip(payloads.read_names, values, strict=True):
            missing = surface == "cli" and name == "neighbors"
            assert (value is None) is missing, (surface, name)


def test_errors_have_the_same_shape_everywhere(payloads: Payloads) -> None:
    i = payloads.read_names.index("not_found")

    assert {json.dumps(v[i], sort_keys=True) for v in payloads.read.values()} == {
        json.dumps(
            {
                "error": {
                    "code": "not_found",
                    "message": "object 'nope' not found in project 'alpha'",
                    "details": {},
                }
            },
            sort_keys=True,
        )
    }
