"""The ``kgsearch`` command line through click's CliRunner, on a temporary SQLite file
with the fake embedder (``KGSEARCH_EMBED__MODEL=fake:32``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from kgsearch import connect
from kgsearch.cli import cli
from kgsearch.store.sqlite.schema import SCHEMA_VERSION

GOOD = [
    {
        "kind": "object",
        "type": "Person",
        "key": "ada",
        "properties": {"name": "Ada Lovelace", "role": "CEO"},
    },
    {"kind": "object", "type": "Company", "key": "acme", "properties": {"name": "Acme"}},
    {
        "kind": "relationship",
        "type": "works_for",
        "source": {"type": "Person", "key": "ada"},
        "target": {"type": "Company", "key": "acme"},
    },
    {"kind": "source", "id": "s1", "title": "Memo"},
    {"kind": "chunk", "id": "c1", "source_id": "s1", "text": "Ada Lovelace leads Acme as CEO."},
]


class Cli:
    """Runs ``kgsearch --db <tmp db> ...`` and parses JSON output."""

    def __init__(self, db: Path, directory: Path) -> None:
        self.db = db
        self.directory = directory
        self.runner = CliRunner()

    def __call__(self, *args: str) -> Result:
        return self.runner.invoke(cli, ["--db", str(self.db), *args], catch_exceptions=False)

    def json(self, *args: str) -> Any:
        result = self(*args) if "--json" in args else self("--json", *args)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    def write(self, name: str, records: list[Any]) -> Path:
        path = self.directory / name
        path.write_text(
            "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n",
            encoding="utf-8",
        )
        return path

    def imported(self) -> Cli:
        """The store with GOOD imported."""
        result = self("import", str(self.write("good.jsonl", GOOD)))
        assert result.exit_code == 0, result.output
        return self

    def embedded(self) -> Cli:
        self.imported()
        result = self("embed", "generate")
        assert result.exit_code == 0, result.output
        return self

    def object_id(self, type_: str, key: str) -> str:
        return str(self.json("objects", "get", f"{type_}/{key}")["id"])

    def relationship_id(self) -> str:
        return str(self.json("relationships", "list")["items"][0]["id"])


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cli]:
    monkeypatch.setenv("KGSEARCH_EMBED__MODEL", "fake:32")
    monkeypatch.chdir(tmp_path)
    yield Cli(tmp_path / "graph.db", tmp_path)


# --- init, import, stats ----------------------------------------------------------------


def test_init_creates_an_empty_store(run: Cli) -> None:
    result = run("init")
    assert result.exit_code == 0, result.output
    assert run.db.exists()


def test_init_json_reports_empty_counts(run: Cli) -> None:
    value = run.json("init")
    assert value["counts"] == {
        "objects": 0,
        "relationships": 0,
        "chunks": 0,
        "sources": 0,
        "mentions": 0,
    }


def test_import_jsonl_reports_what_was_imported(run: Cli) -> None:
    path = run.write("good.jsonl", GOOD)
    assert run.json("import", str(path)) == {
        "imported": {
            "objects": 2,
            "relationships": 1,
            "sources": 1,
            "chunks": 1,
            "mentions": 0,
        },
        "project": "default",
    }


def test_import_of_a_bad_file_exits_1_and_lists_every_bad_line(run: Cli) -> None:
    path = run.write(
        "bad.jsonl", [{"kind": "object", "type": "Person"}, "not json", {"kind": "bogus"}]
    )
    result = run("import", str(path))
    assert result.exit_code == 1
    assert f"{path}:1: key: Field required" in result.output
    assert f"{path}:2: invalid JSON" in result.output
    assert f"{path}:3: unknown kind 'bogus'" in result.output
    assert "Traceback" not in result.output


def test_import_of_a_bad_file_writes_nothing(run: Cli) -> None:
    path = run.write("bad.jsonl", [GOOD[0], {"kind": "object", "type": "Person"}])
    run("import", str(path))
    assert run.json("stats")["counts"]["objects"] == 0


def test_import_of_a_bad_file_with_json_prints_the_error_body(run: Cli) -> None:
    path = run.write("bad.jsonl", [{"kind": "object", "type": "Person"}])
    result = run("--json", "import", str(path))
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"] == {
        "code": "import_failed",
        "message": f"1 bad record(s); nothing was imported. First: {path}:1: key: Field required",
        "details": {
            "errors": [{"location": f"{path}:1", "reason": "key: Field required"}],
            "error_count": 1,
        },
    }


def test_stats_json_reports_counts_and_store(run: Cli) -> None:
    run.imported()
    assert run.json("stats") == {
        "project": "default",
        "counts": {"objects": 2, "relationships": 1, "chunks": 1, "sources": 1, "mentions": 0},
        "store": f"sqlite:///{run.db}",
        "schema_version": SCHEMA_VERSION,
        "embedding_model": None,
        "dims": None,
        "projects": ["default"],
    }


@pytest.mark.parametrize(
    "args", [("stats", "--json"), ("embed", "status", "--json"), ("search", "Ada", "--json")]
)
def test_json_flag_after_the_command_works_as_the_help_examples_show(
    run: Cli, args: tuple[str, ...]
) -> None:
    run.imported()
    result = run(*args)
    assert result.exit_code == 0, result.output
    assert isinstance(json.loads(result.stdout), dict)


# --- objects and relationships ----------------------------------------------------------


def test_objects_list_json_pages_objects(run: Cli) -> None:
    run.imported()
    page = run.json("objects", "list")
    assert [(o["type"], o["key"]) for o in page["items"]] == [
        ("Person", "ada"),
        ("Company", "acme"),
    ]
    assert page["next_cursor"] is None


def test_objects_list_filters_by_type(run: Cli) -> None:
    run.imported()
    page = run.json("objects", "list", "--type", "Company")
    assert [o["key"] for o in page["items"]] == ["acme"]


def test_objects_list_table_shows_keys(run: Cli) -> None:
    run.imported()
    result = run("objects", "list")
    assert result.exit_code == 0
    assert "ada" in result.stdout and "acme" in result.stdout


def test_objects_get_by_type_and_key(run: Cli) -> None:
    run.imported()
    obj = run.json("objects", "get", "Person/ada")
    assert (obj["type"], obj["key"], obj["properties"]) == (
        "Person",
        "ada",
        {"name": "Ada Lovelace", "role": "CEO"},
    )


def test_objects_get_by_id(run: Cli) -> None:
    run.imported()
    id = run.object_id("Company", "acme")
    assert (run.json("objects", "get", id)["key"]) == "acme"


def test_objects_get_unknown_exits_1_with_a_clean_message(run: Cli) -> None:
    run.imported()
    result = run("objects", "get", "nope")
    assert (result.exit_code, "Traceback" in result.output) == (1, False)
    assert "object 'nope' not found in project 'default'" in result.output


def test_json_error_output_has_code_message_and_details(run: Cli) -> None:
    run.imported()
    result = run("--json", "objects", "get", "nope")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {
        "error": {
            "code": "not_found",
            "message": "object 'nope' not found in project 'default'",
            "details": {},
        }
    }


def test_objects_delete_hides_the_object(run: Cli) -> None:
    run.imported()
    id = run.object_id("Company", "acme")
    assert run.json("objects", "delete", id) == {"deleted": 1}
    assert run("objects", "get", id).exit_code == 1


def test_objects_delete_takes_the_objects_relationships(run: Cli) -> None:
    run.imported()
    run.json("objects", "delete", run.object_id("Company", "acme"))
    assert run.json("relationships", "list")["items"] == []


def test_relationships_list_json_shows_triplet_text(run: Cli) -> None:
    run.imported()
    page = run.json("relationships", "list")
    assert [(r["type"], r["embedding"]["text"]) for r in page["items"]] == [
        ("works_for", "Ada Lovelace works for Acme")
    ]


def test_relationships_get_by_id(run: Cli) -> None:
    run.imported()
    id = run.relationship_id()
    rel = run.json("relationships", "get", id)
    assert (rel["id"], rel["source_id"], rel["target_id"]) == (
        id,
        run.object_id("Person", "ada"),
        run.object_id("Company", "acme"),
    )


def test_relationships_delete(run: Cli) -> None:
    run.imported()
    id = run.relationship_id()
    assert run.json("relationships", "delete", id) == {"deleted": 1}
    assert run("relationships", "get", id).exit_code == 1


# --- embedding lifecycle ----------------------------------------------------------------


def test_embed_generate_embeds_every_row(run: Cli) -> None:
    run.imported()
    report = run.json("embed", "generate")
    assert (report["processed"], report["embedded"], report["failed"], report["dead"]) == (
        4,
        4,
        0,
        0,
    )


def test_embed_status_json_is_100_percent_after_generate(run: Cli) -> None:
    run.embedded()
    status = run.json("embed", "status")
    assert (status["model"], status["dims"], status["percent_embedded"]) == ("fake:32", 32, 100.0)
    assert (status["total"], status["embedded"], status["pending"]) == (4, 4, 0)


def _bundled_store(run: Cli) -> None:
    """The store as if embedded with the bundled model (recorded, nothing embedded)."""
    run("init")
    store = connect(str(run.db))
    store.set_embedding_model("bundled:all-MiniLM-L6-v2-int8", 384)
    store.close()


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        (None, "queries: query graph (fast_queries, the bundled model's default)"),
        ("false", "queries: document model (fast_queries is off)"),
        ("true", "queries: query graph (fast_queries is on)"),
    ],
)
def test_embed_status_says_how_queries_are_embedded_and_why(
    run: Cli, monkeypatch: pytest.MonkeyPatch, setting: str | None, said: str
) -> None:
    _bundled_store(run)
    if setting is not None:
        monkeypatch.setenv("KGSEARCH_EMBED__FAST_QUERIES", setting)
    light = run("embed", "status")
    # a store section as JSON: only the settings model reads it, so the engine answers
    monkeypatch.setenv("KGSEARCH_STORE", json.dumps({"url": str(run.db)}))
    engine = run("embed", "status")
    assert (light.exit_code, engine.exit_code) == (0, 0), light.output + engine.output
    assert said in light.output.splitlines()
    assert said in engine.output.splitlines()


def test_embed_status_before_generate_shows_pending_rows(run: Cli) -> None:
    run.imported()
    status = run.json("embed", "status")
    assert (status["percent_embedded"], status["pending"]) == (0.0, 4)


def test_embed_preview_prints_the_text_to_embed(run: Cli) -> None:
    run.imported()
    id = run.object_id("Person", "ada")
    assert run.json("embed", "preview", id) == {
        "kind": "object",
        "id": id,
        "text": "[Type: #person] [Role: CEO] Ada Lovelace",
        "graph_aware": True,
        "status": "pending",
    }


def test_embed_preview_plain_output_is_the_text(run: Cli) -> None:
    run.imported()
    result = run("embed", "preview", run.relationship_id())
    assert result.stdout == "Ada Lovelace works for Acme\n"


def test_embed_backfill_dry_run_reports_without_embedding(run: Cli) -> None:
    run.imported()
    assert run.json("embed", "backfill", "--dry-run") == {
        "dry_run": True,
        "would_embed": {"chunks": 1, "objects": 2, "relationships": 1},
        "total": 4,
    }
    assert run.json("embed", "status")["embedded"] == 0


def test_embed_retry_dead_requeues_nothing_when_all_is_well(run: Cli) -> None:
    run.embedded()
    assert run.json("embed", "retry", "--dead") == {"requeued": 0}


# --- search and context -----------------------------------------------------------------


def test_search_json_results_carry_a_type(run: Cli) -> None:
    run.embedded()
    value = run.json("search", "Ada Lovelace")
    assert {r["type"] for r in value["results"]} == {"graph", "relationship", "text"}
    assert value["metadata"]["totalResults"] == len(value["results"])


def test_search_table_output(run: Cli) -> None:
    run.embedded()
    result = run("search", "Ada Lovelace")
    assert result.exit_code == 0
    assert "relationship" in result.stdout
    # Acme shares no word with the query: the relevance floor keeps it out
    assert "3 results in" in result.stdout
    assert "Acme (Company)" not in result.stdout


def test_search_result_types_option(run: Cli) -> None:
    run.embedded()
    value = run.json("search", "Ada", "--result-types", "text")
    assert [(r["type"], r["id"]) for r in value["results"]] == [("text", "c1")]


def test_search_explain_shows_legs_and_fused_order(run: Cli) -> None:
    run.embedded()
    result = run("search", "Ada", "--explain")
    assert result.exit_code == 0
    assert "leg objects:bm25" in result.stdout
    assert "fused order" in result.stdout
    assert "SELECT" in result.stdout


def test_search_explain_json_has_legs_and_fused(run: Cli) -> None:
    run.embedded()
    value = run.json("search", "Ada", "--explain")
    assert sorted(value) == [
        "fused",
        "leg_ms",
        "legs",
        "metadata",
        "notes",
        "request",
        "statements",
    ]
    assert set(value["leg_ms"]) == set(value["legs"])  # each leg's own time
    assert any("objects" in s["sql"] for s in value["statements"]["objects:bm25"])
    assert sorted(value["legs"]) == [  # the graph holds chunks: graph:evidence too
        "chunks:bm25",
        "chunks:vector",
        "graph:evidence",
        "objects:bm25",
        "objects:name",
        "objects:vector",
        "relationships:anchored",
        "relationships:bm25",
        "relationships:vector",
    ]


def test_search_invalid_request_is_a_json_error(run: Cli) -> None:
    run.embedded()
    result = run("--json", "search", "Ada", "--reranker", "node_distance")
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert (sorted(error), error["code"]) == (["code", "details", "message"], "invalid_request")


def test_context_max_tokens_50(run: Cli) -> None:
    run.embedded()
    result = run("context", "Ada Lovelace", "--max-tokens", "50")
    assert result.exit_code == 0
    # the graph holds a document: its passage leads (with its source's title), then
    # the relationship anchored on the object the query names
    assert result.stdout == (
        "- (Memo) Ada Lovelace leads Acme as CEO.\n"
        "- Ada Lovelace works for Acme\n"
        "- **Person**: Ada Lovelace — role=CEO\n"
    )  # Acme alone shares no word with the query: below the relevance floor


def test_context_json_respects_the_budget(run: Cli) -> None:
    run.embedded()
    value = run.json("context", "Ada Lovelace", "--max-tokens", "5")
    assert value["tokens"] <= 5
    assert value["context"] == "- Ada Lovelace works for Acme"


# --- config -----------------------------------------------------------------------------


def test_config_show_masks_the_api_key(run: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGSEARCH_EMBED__API_KEY", "sk-very-secret")
    result = run("config", "show")
    assert result.exit_code == 0
    assert "sk-very-secret" not in result.output
    assert json.loads(result.stdout)["embed"]["api_key"] == "********"


def test_config_show_masks_the_store_password(run: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGSEARCH_STORE__URL", "postgresql://kg:pg-very-secret@db:5432/kg")
    monkeypatch.chdir(run.directory)
    from_env = CliRunner().invoke(cli, ["--json", "config", "show"], catch_exceptions=False)
    assert json.loads(from_env.stdout)["store"]["url"] == "postgresql://kg:********@db:5432/kg"
    flagged = run("--db", "postgresql://kg:pg-very-secret@db/kg", "config", "show")
    assert flagged.exit_code == 0
    assert "pg-very-secret" not in flagged.output
    assert "kg:********@db/kg" in flagged.output


def test_config_show_reflects_flags_and_env(run: Cli) -> None:
    value = run.json("--project", "demo", "config", "show")
    assert (value["store"], value["embed"]["model"]) == (
        {"url": str(run.db), "project": "demo", "read_url": None},
        "fake:32",
    )


def test_config_path_names_the_toml_file(run: Cli) -> None:
    result = run("config", "path")
    assert result.stdout == f"{run.directory.resolve() / 'kgsearch.toml'}  (not present)\n"


def test_config_path_follows_kgsearch_config(run: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    path = run.directory / "custom.toml"
    path.write_text("[search]\nlimit = 5\n", encoding="utf-8")
    monkeypatch.setenv("KGSEARCH_CONFIG", str(path))
    assert run("config", "path").stdout == f"{path.resolve()}\n"


# --- help -------------------------------------------------------------------------------


def _commands(group: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    if isinstance(group, click.Group):
        ctx = click.Context(group)
        for name in group.list_commands(ctx):  # the root's commands load when asked
            command = group.get_command(ctx, name)
            assert command is not None
            yield from _commands(command, (*path, name))


COMMANDS = list(_commands(cli))


def test_the_command_tree_is_walked() -> None:
    assert ("embed", "generate") in COMMANDS and ("objects", "get") in COMMANDS


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) or "kgsearch" for p in COMMANDS])
def test_every_command_has_help_with_an_example(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Example:" in result.output
