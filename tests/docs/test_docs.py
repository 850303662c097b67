"""Docs are tests: the CLI reference is current, every command is documented, and the
store plugin example of docs/stores.md runs the conformance suite."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click

from kgsearch.cli import cli
from kgsearch.config import (
    EmbedSettings,
    ExtractSettings,
    LLMSettings,
    SearchSettings,
    StoreSettings,
)

ROOT = Path(__file__).resolve().parents[2]


def _commands(command: click.Command, path: str) -> list[str]:
    names = [path]
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):  # the root's commands load when asked
            sub = command.get_command(ctx, name)
            assert sub is not None
            names += _commands(sub, f"{path} {name}")
    return names


def test_cli_reference_is_current() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_cli_docs.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_every_command_is_in_the_cli_reference() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    missing = [c for c in _commands(cli, "kgsearch") if f"## `{c}`" not in text]
    assert missing == []


def test_every_setting_is_documented() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    fields = [
        f"{section}.{info.alias or name}"
        for section, model in (
            ("store", StoreSettings),
            ("embed", EmbedSettings),
            ("search", SearchSettings),
            ("llm", LLMSettings),
            ("extract", ExtractSettings),
        )
        for name, info in model.model_fields.items()
    ]
    assert [f for f in fields if f"`{f}`" not in text] == []


def test_readme_names_the_two_setup_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make demo" in text
    assert "make test" in text


def python_blocks(text: str) -> list[str]:
    """The fenced ```python blocks of a Markdown text."""
    return [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]


def test_the_store_plugin_example_runs_the_conformance_suite(tmp_path: Path) -> None:
    """docs/stores.md's conftest and test module, on a stand-in third-party store."""
    blocks = python_blocks((ROOT / "docs" / "stores.md").read_text(encoding="utf-8"))
    [conftest] = [b for b in blocks if "def store_factory(tmp_path" in b]
    [module] = [b for b in blocks if b.startswith("from kgsearch.testing.conformance import")]
    (tmp_path / "conftest.py").write_text(conftest, encoding="utf-8")
    (tmp_path / "test_conformance.py").write_text(module, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # not ours
    (tmp_path / "my_store.py").write_text(
        "from kgsearch.store.sqlite import SQLiteStore as MyStore\n", encoding="utf-8"
    )
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    some = " or ".join(  # the whole suite runs on our own stores
        [
            "test_meta_values_round_trip",
            "test_the_cache_returns_what_was_put",
            "test_reopening_a_store_applies_no_migration_and_keeps_data",
        ]
    )

    ran = subprocess.run(
        [*command, "-k", some, "test_conformance.py"], cwd=tmp_path, capture_output=True, text=True
    )

    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert re.match(r"3 passed, \d{3} deselected in ", ran.stdout.splitlines()[-1]), ran.stdout
