"""The CLI loads a command's module only when it runs, and ``import kgsearch`` is cheap:
the lazy command table must match the commands themselves, and the top-level help
must list them all without importing them."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from cli_store import cli_built_store, older_store, run_cli
from click.testing import CliRunner

import kgsearch
from kgsearch.cli.embed import SUBCOMMANDS
from kgsearch.cli.query import RECIPE_NAMES
from kgsearch.cli.root import COMMANDS, cli
from kgsearch.search.request import RECIPES


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_lazy_table_matches_each_command(name: str) -> None:
    module, attribute, short_help = COMMANDS[name]

    command = getattr(importlib.import_module(module), attribute)

    assert isinstance(command, click.Command)
    assert command.name == name
    assert command.get_short_help_str(limit=10_000) == short_help


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_the_lazy_embed_table_matches_each_subcommand(name: str) -> None:
    module, attribute, short_help = SUBCOMMANDS[name]

    command = getattr(importlib.import_module(module), attribute)

    assert isinstance(command, click.Command)
    assert command.name == name
    assert command.get_short_help_str(limit=10_000) == short_help


def test_embed_help_lists_its_subcommands_and_they_get_the_global_options() -> None:
    from kgsearch.cli.embed import embed

    listed = CliRunner().invoke(cli, ["embed", "--help"]).output.split("Commands:")[1]

    assert [line.split()[0] for line in listed.strip().splitlines()] == sorted(
        [*SUBCOMMANDS, "status"]
    )
    ctx = cli.make_context("kgsearch", ["--help"], resilient_parsing=True)
    generate = embed.get_command(ctx, "generate")
    assert generate is not None
    assert {"db", "as_json_flag"} <= {p.name for p in generate.params}


def test_every_command_of_the_cli_package_is_in_the_table() -> None:
    # a command defined in kgsearch.cli but missing from the table would be unreachable
    import kgsearch.cli as package

    commands: dict[int, click.Command] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"kgsearch.cli.{info.name}")
        for value in vars(module).values():
            if isinstance(value, click.Command) and value is not cli:
                commands[id(value)] = value
    ctx = cli.make_context("kgsearch", ["--help"], resilient_parsing=True)
    nested = {
        id(command.get_command(ctx, name))  # a lazy group's subcommands are loaded here
        for command in commands.values()
        if isinstance(command, click.Group)
        for name in command.list_commands(ctx)
    }
    top = {c.name for key, c in commands.items() if key not in nested}

    assert top == set(COMMANDS)


_HELP_THEN_LOAD = """
import sys
from click.testing import CliRunner
from kgsearch.cli import cli
before = CliRunner().invoke(cli, ["--help"]).output
loaded = sorted(m for m in sys.modules if m.startswith("kgsearch"))
heavy = sorted(m for m in ("pydantic", "numpy", "rich", "httpx") if m in sys.modules)
ctx = cli.make_context("kgsearch", ["--help"], resilient_parsing=True)
for name in cli.list_commands(ctx):
    cli.get_command(ctx, name)
after = CliRunner().invoke(cli, ["--help"]).output
print(json.dumps({"before": before, "after": after, "loaded": loaded, "heavy": heavy}))
"""


def test_top_level_help_lists_every_command_without_importing_any() -> None:
    code = "import json\n" + _HELP_THEN_LOAD
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    found = json.loads(done.stdout)

    assert found["loaded"] == ["kgsearch", "kgsearch.cli", "kgsearch.cli.root"]
    assert found["heavy"] == []
    # the same help once every command is loaded (its one-line help is the real one)
    assert found["before"] == found["after"]
    listed = found["before"].split("Commands:")[1]
    assert [line.split()[0] for line in listed.strip().splitlines()] == sorted(COMMANDS)


def test_a_command_gets_the_global_options_after_its_name_once() -> None:
    ctx = cli.make_context("kgsearch", ["--help"], resilient_parsing=True)
    first = cli.get_command(ctx, "stats")
    again = cli.get_command(ctx, "stats")

    assert first is again
    assert first is not None
    names = [p.name for p in first.params]
    assert names.count("db") == names.count("as_json_flag") == 1


def test_the_cli_recipe_names_are_the_search_recipes() -> None:
    assert list(RECIPE_NAMES) == sorted(RECIPES)


def test_kgsearch_exports_its_names_lazily() -> None:
    code = (
        "import sys, kgsearch\n"
        "print(sorted(m for m in sys.modules if m.startswith('kgsearch')))\n"
        "from kgsearch import Engine, SearchRequest\n"
        "print(Engine.__module__, SearchRequest.__module__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )

    assert done.stdout.splitlines() == [
        "['kgsearch']",
        "kgsearch.engine kgsearch.search.request",
    ]


def test_every_public_name_resolves_and_unknown_names_raise() -> None:
    for name in kgsearch.__all__:
        assert getattr(kgsearch, name) is not None
    assert set(kgsearch.__all__) <= set(dir(kgsearch))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = kgsearch.Nope


_RUN_THEN_LIST = """
import json, sys
from kgsearch.cli.root import main
sys.argv = ["kgsearch", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
native = ("onnxruntime", "usearch", "numkong", "tokenizers")
print(json.dumps(sorted(m for m in native if m in sys.modules)))
"""


@pytest.fixture(scope="module")
def embedded_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite store whose rows are embedded with the bundled model (the default)."""
    root = tmp_path_factory.mktemp("light")
    rows = [
        {"kind": "object", "type": "Person", "key": "ada", "properties": {"name": "Ada"}},
        {"kind": "object", "type": "Org", "key": "acme", "properties": {"name": "Acme"}},
        {
            "kind": "relationship",
            "type": "WORKS_FOR",
            "source": {"type": "Person", "key": "ada"},
            "target": {"type": "Org", "key": "acme"},
        },
    ]
    return cli_built_store(root, rows, "light.db")


@pytest.mark.parametrize(
    "args",
    [
        ["stats"],
        ["--json", "stats"],
        ["objects", "list"],
        ["objects", "get", "Person/ada"],
        ["relationships", "list"],
        ["embed", "status"],
        ["config", "show"],
    ],
)
def test_a_light_command_loads_neither_the_model_nor_the_vector_index(
    embedded_store: Path, args: list[str]
) -> None:
    # onnxruntime (the model's runtime, ~0.2 s), tokenizers, and usearch/numkong (the
    # vector index and int8 scan) are imported only when a text is embedded or a large
    # collection is searched; reading counts and rows needs none of them
    done = subprocess.run(
        [sys.executable, "-c", _RUN_THEN_LIST, "--db", str(embedded_store), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_a_search_in_process_does_load_the_model(embedded_store: Path) -> None:
    # the other side of the test above: the same probe sees the model when it is used
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _RUN_THEN_LIST,
            "--db",
            str(embedded_store),
            "search",
            "Ada",
            "--in-process",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert {"onnxruntime", "tokenizers"} <= set(json.loads(done.stdout.splitlines()[-1]))


LIGHT = ("kgsearch.engine", "kgsearch.config", "numpy", "onnxruntime", "pydantic")
LIGHT_COMMANDS = [
    ["stats"],
    ["--json", "stats"],
    ["-p", "other", "stats"],
    ["--json", "-p", "nope", "stats"],
    ["embed", "status"],
    ["--json", "embed", "status"],
    ["-p", "other", "embed", "status"],
    ["--json", "-p", "other", "embed", "status"],
]


@pytest.fixture(scope="module")
def projects_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with two projects, some rows embedded (fake model), one deleted, and
    a changed text (stale)."""
    from kgsearch.embed.fake import FakeEmbedder
    from kgsearch.engine import Engine
    from kgsearch.model import ObjectIn
    from kgsearch.store import connect

    db = tmp_path_factory.mktemp("projects") / "projects.db"
    with Engine(connect(str(db)), embedder=FakeEmbedder(16)) as engine:
        people = [ObjectIn(type="Person", key=k, properties={"name": k}) for k in "abcde"]
        engine.add_objects(people)
        engine.add_objects(people[:2], project="other")
        engine.embed_pending()
        engine.add_objects([ObjectIn(type="Person", key="a", properties={"name": "A2"})])
        engine.add_objects([ObjectIn(type="Org", key="z", properties={"name": "z"})])
        engine.delete("object", [engine.get_object_by_key("Person", "e").id])
    return db


@pytest.mark.parametrize("args", LIGHT_COMMANDS)
def test_stats_and_embed_status_read_a_sqlite_store_without_the_engine(
    projects_store: Path, args: list[str]
) -> None:
    code, light, heavy, err = run_cli("light", "--db", str(projects_store), *args)
    engine_code, engine, engine_heavy, _ = run_cli("engine", "--db", str(projects_store), *args)

    assert code == engine_code == 0, err
    assert not set(LIGHT) & set(heavy)
    assert {"kgsearch.engine", "pydantic"} <= set(engine_heavy)  # the comparison is real
    assert light == engine
    # rich draws the table; JSON goes through click alone
    assert ("rich" in heavy) == ("--json" not in args)
    if "--json" in args:
        json.loads(light)


def test_the_light_figures_are_not_empty(projects_store: Path) -> None:
    _, stats, _, _ = run_cli("light", "--db", str(projects_store), "--json", "stats")
    _, status, _, _ = run_cli("light", "--db", str(projects_store), "--json", "embed", "status")

    found = json.loads(stats)
    assert found["counts"]["objects"] == 5  # a..d and z in default; e deleted
    assert found["projects"] == ["default", "other"]
    report = json.loads(status)
    assert report["stale"] == 1 and report["pending"] == 2 and report["embedded"] == 5


def test_an_empty_store_reads_the_same_both_ways(tmp_path: Path) -> None:
    from kgsearch.store.sqlite import SQLiteStore

    db = tmp_path / "empty.db"
    SQLiteStore(str(db)).close()
    for args in (
        ["stats"],
        ["--json", "stats"],
        ["embed", "status"],
        ["--json", "embed", "status"],
    ):
        code, light, heavy, err = run_cli("light", "--db", str(db), *args)
        assert code == 0, err
        assert not set(LIGHT) & set(heavy)
        assert (code, light) == run_cli("engine", "--db", str(db), *args)[:2]


@pytest.mark.parametrize("args", [["stats"], ["--json", "stats"], ["embed", "status"]])
def test_a_missing_store_is_a_clear_error_and_nothing_is_created(
    tmp_path: Path, args: list[str]
) -> None:
    db = tmp_path / "missing.db"

    code, light, heavy, err = run_cli("light", "--db", str(db), *args)
    engine_code, engine, _, engine_err = run_cli("engine", "--db", str(db), *args)

    assert code == engine_code == 1
    assert (light, err) == (engine, engine_err)
    assert f"no store at {db}" in light + err
    assert not set(LIGHT) & set(heavy)
    assert list(tmp_path.iterdir()) == []


def test_a_store_at_an_older_schema_is_migrated_by_the_engine(tmp_path: Path) -> None:
    from kgsearch.store.sqlite.schema import MIGRATIONS

    db = tmp_path / "old.db"
    older_store(db, drop=1)

    code, output, heavy, err = run_cli("light", "--db", str(db), "--json", "stats")

    assert code == 0, err
    assert "kgsearch.engine" in heavy  # not counted read-only: the engine migrated it
    assert json.loads(output)["schema_version"] == len(MIGRATIONS)


def test_a_store_of_a_newer_kgsearch_is_explained_by_the_engine(tmp_path: Path) -> None:
    from kgsearch.store.sqlite import SQLiteStore

    db = tmp_path / "new.db"
    with SQLiteStore(str(db)) as store:
        store.db.execute("INSERT INTO migrations VALUES ('m999_future', '')")

    code, output, _, err = run_cli("light", "--db", str(db), "embed", "status")

    assert code == 1
    assert "written by a newer kgsearch" in output + err


def test_the_light_path_picks_the_store_and_project_as_the_settings_do(
    projects_store: Path, tmp_path: Path
) -> None:
    # flags > environment (any case) > kgsearch.toml > defaults, as pydantic-settings
    toml = tmp_path / "kgsearch.toml"
    toml.write_text(f'[store]\nurl = "{projects_store}"\nproject = "other"\n', encoding="utf-8")
    cases: list[tuple[list[str], dict[str, str]]] = [
        ([], {}),  # the TOML file's store and project
        ([], {"kgsearch_store__project": "default"}),  # environment over the file
        (["-p", "nope"], {"KGSEARCH_STORE__PROJECT": "default"}),  # flag over environment
        ([], {"kgsearch_store__url": str(tmp_path / "missing.db")}),  # lower-case variable
        (["--db", str(projects_store)], {"KGSEARCH_DB": str(tmp_path / "missing.db")}),
    ]
    for args, env in cases:
        light = run_cli("light", "--json", *args, "stats", cwd=tmp_path, env=env)
        engine = run_cli("engine", "--json", *args, "stats", cwd=tmp_path, env=env)
        assert light[:2] == engine[:2], (args, env, light, engine)
        assert not set(LIGHT) & set(light[2]), (args, env)
    shown = json.loads(run_cli("light", "--json", "stats", cwd=tmp_path)[1])
    assert shown["project"] == "other"


def test_settings_only_the_model_can_read_go_to_the_engine(
    projects_store: Path, tmp_path: Path
) -> None:
    toml = tmp_path / "kgsearch.toml"
    for text in (
        f'[store]\nurl = "{projects_store}"\nport = 1\n',
        "[store\n",
        "[store]\nurl = 3\n",
    ):
        toml.write_text(text, encoding="utf-8")
        light = run_cli("light", "--json", "stats", cwd=tmp_path)
        engine = run_cli("engine", "--json", "stats", cwd=tmp_path)
        assert light[:2] == engine[:2]
        assert light[0] == 1 and "invalid settings" in light[1]
