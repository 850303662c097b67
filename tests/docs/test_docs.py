"""Docs are tests: the CLI reference is current, every command is documented."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from kgsearch.cli import cli
from kgsearch.config import EmbedSettings, SearchSettings, StoreSettings

ROOT = Path(__file__).resolve().parents[2]


def _commands(command: click.Command, path: str) -> list[str]:
    names = [path]
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
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
        f"{section}.{name}"
        for section, model in (
            ("store", StoreSettings),
            ("embed", EmbedSettings),
            ("search", SearchSettings),
        )
        for name in model.model_fields
    ]
    assert [f for f in fields if f"`{f}`" not in text] == []


def test_readme_names_the_two_setup_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make demo" in text
    assert "make test" in text
