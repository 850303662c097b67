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

import kgsearch
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


def test_every_command_of_the_cli_package_is_in_the_table() -> None:
    # a command defined in kgsearch.cli but missing from the table would be unreachable
    import kgsearch.cli as package

    commands: dict[int, click.Command] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"kgsearch.cli.{info.name}")
        for value in vars(module).values():
            if isinstance(value, click.Command) and value is not cli:
                commands[id(value)] = value
    nested = {
        id(sub)
        for command in commands.values()
        if isinstance(command, click.Group)
        for sub in command.commands.values()
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
    data = root / "graph.jsonl"
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
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    db = root / "light.db"
    for args in (["import", str(data)], ["embed", "generate"]):
        done = subprocess.run(
            [sys.executable, "-m", "kgsearch", "--db", str(db), *args],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    return db


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
