"""``kgsearch citus distribute`` and the issue 33 session through the coordinator: a
fresh store laid out by the command, then import, embed generate (a worker for every
project), search and ask-free reads by the CLI, as one would on a real cluster."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from citus_cluster import CitusStoreFactory
from click.testing import CliRunner, Result

from kgsearch.cli import cli
from kgsearch.store.postgres import PostgresStore
from kgsearch.store.postgres.schema import DISTRIBUTED_TABLES, REFERENCE_TABLES

MOVIES = [("Jesse James", "Henry King"), ("The Grapes of Wrath", "John Ford")]


def records() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for movie, director in MOVIES:
        out.append({"kind": "object", "type": "Movie", "key": movie})
        out.append({"kind": "object", "type": "Person", "key": director})
        out.append(
            {
                "kind": "relationship",
                "type": "directed_by",
                "source": {"type": "Movie", "key": movie},
                "target": {"type": "Person", "key": director},
            }
        )
    return out


@pytest.fixture
def run(citus_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``kgsearch --db <a new schema on the coordinator> …``, in process."""
    monkeypatch.setenv("KGSEARCH_EMBED__MODEL", "fake:32")
    factory = CitusStoreFactory(citus_url, PostgresStore)  # a schema never laid out
    url = factory.new_url()

    def invoke(*args: str) -> Result:
        return CliRunner().invoke(cli, ["--db", url, *args], catch_exceptions=False)

    yield invoke
    factory.close_all()


def test_distribute_lays_out_a_fresh_store_and_says_so_per_table(run: Any) -> None:
    first = run("--json", "citus", "distribute", "--shard-count", "4")
    assert first.exit_code == 0, first.output
    tables = {t["table"]: t for t in json.loads(first.stdout)["tables"]}
    assert set(tables) == set(DISTRIBUTED_TABLES) | set(REFERENCE_TABLES)
    assert tables["communities"] == {
        "table": "communities",
        "layout": "distributed",
        "column": "project",
        "changed": True,
    }
    assert tables["cache"]["column"] == "namespace"
    assert tables["api_keys"]["layout"] == "reference"
    again = run("citus", "distribute")
    assert again.exit_code == 0, again.output
    assert "laid out" not in again.stdout and "already" in again.stdout


def test_import_embed_and_search_run_through_the_coordinator(run: Any, tmp_path: Path) -> None:
    assert run("citus", "distribute").exit_code == 0
    data = tmp_path / "movies.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in records()) + "\n", encoding="utf-8")
    imported = run("--json", "import", str(data))
    assert imported.exit_code == 0, imported.output
    assert json.loads(imported.stdout)["imported"]["objects"] == 4
    embedded = run("embed", "generate")  # every project: one claim per project on Citus
    assert embedded.exit_code == 0, embedded.output
    status = run("--json", "embed", "status")
    assert status.exit_code == 0, status.output
    found = run("--json", "search", "who directed Jesse James", "--limit", "3")
    assert found.exit_code == 0, found.output
    keys = [r.get("key") for r in json.loads(found.stdout)["results"]]
    assert "Jesse James" in keys


def test_distribute_refuses_a_sqlite_store(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "kg.db"), "citus", "distribute"])
    assert result.exit_code == 1
    assert "needs a PostgreSQL store" in result.output


def test_distribute_spread_lays_out_big_tables_by_row_id_and_keeps_it(
    run: Any, tmp_path: Path
) -> None:
    first = run("--json", "citus", "distribute", "--spread")
    assert first.exit_code == 0, first.output
    columns = {t["table"]: t["column"] for t in json.loads(first.stdout)["tables"]}
    assert (columns["relationships"], columns["chunks"], columns["objects"]) == (
        "id",
        "id",
        "project",
    )
    again = run("--json", "citus", "distribute")  # without --spread: kept as it is
    assert [t for t in json.loads(again.stdout)["tables"] if t["changed"]] == []
    data = tmp_path / "movies.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in records()) + "\n", encoding="utf-8")
    assert run("import", str(data)).exit_code == 0
    assert run("embed", "generate").exit_code == 0
    found = run("--json", "search", "who directed Jesse James", "--limit", "3")
    assert found.exit_code == 0, found.output
    assert "Jesse James" in [r.get("key") for r in json.loads(found.stdout)["results"]]


def test_distribute_spread_refuses_a_store_distributed_by_project(run: Any) -> None:
    assert run("citus", "distribute").exit_code == 0
    refused = run("citus", "distribute", "--spread")
    assert refused.exit_code == 1
    assert "kgsearch migrate" in refused.output
