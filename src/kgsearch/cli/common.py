"""Shared CLI plumbing: the root group, global options, engine building, output."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click
from pydantic import BaseModel, ValidationError
from rich.console import Console

from kgsearch.config import Settings
from kgsearch.engine import Engine
from kgsearch.errors import ConfigError, KgsearchError

__all__ = [
    "State",
    "add_json_option",
    "cli",
    "console",
    "emit",
    "engine_from",
    "handle_errors",
    "out",
    "pass_state",
]

F = TypeVar("F", bound=Callable[..., Any])
console = Console(stderr=True)
out = Console()


class State:
    """Global options given before the command name."""

    def __init__(self, db: str | None, project: str | None, as_json: bool) -> None:
        self.db = db
        self.project = project
        self.as_json = as_json

    def settings(self) -> Settings:
        """Load settings, turning validation errors into a clean message."""
        try:
            return Settings()
        except ValidationError as exc:
            raise ConfigError(f"invalid settings: {exc}") from None


pass_state = click.make_pass_decorator(State)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--db",
    envvar="KGSEARCH_STORE__URL",
    help="Store URL or SQLite file (default: ./kgsearch.db; env KGSEARCH_STORE__URL).",
)
@click.option("--project", "-p", help="Project (tenant) to work in (default: 'default').")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.version_option(package_name="kgsearch")
@click.pass_context
def cli(ctx: click.Context, db: str | None, project: str | None, as_json: bool) -> None:
    """kgsearch: make a knowledge graph searchable by meaning.

    \b
    Quick start:
      kgsearch import data/sample/metaqa-movies.jsonl
      kgsearch embed generate
      kgsearch search "who directed Jesse James"

    Example: kgsearch --db graph.db --project demo stats --json
    """
    ctx.obj = State(db, project, as_json)


def _set_json(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    state = ctx.find_object(State)
    if value and state is not None:
        state.as_json = True


def add_json_option(group: click.Group) -> None:
    """Accept ``--json`` after any subcommand too (``kgsearch stats --json``)."""
    for command in group.commands.values():
        if isinstance(command, click.Group):
            add_json_option(command)
        elif not any(p.name == "as_json_flag" for p in command.params):
            command.params.append(
                click.Option(
                    ["--json", "as_json_flag"],
                    is_flag=True,
                    expose_value=False,
                    callback=_set_json,
                    help="Print machine-readable JSON.",
                )
            )


def engine_from(
    state: State, *, model: str | None = None, settings: Settings | None = None
) -> Engine:
    """Build the engine for a command (from ``settings`` when a command overrides some)."""
    return Engine.from_settings(
        settings or state.settings(), project=state.project, store_url=state.db, model=model
    )


@contextmanager
def _errors(state: State | None) -> Iterator[None]:
    try:
        yield
    except KgsearchError as exc:
        if state is not None and state.as_json:
            click.echo(json.dumps(exc.to_dict(), ensure_ascii=False, default=str))
            raise click.exceptions.Exit(1) from None
        message = f"{exc.message}"
        errors = exc.details.get("errors")
        if isinstance(errors, list):
            shown = "\n".join(f"  {e['location']}: {e['reason']}" for e in errors[:20])
            more = exc.details.get("error_count", len(errors)) - min(len(errors), 20)
            message += "\n" + shown + (f"\n  … and {more} more" if more > 0 else "")
        raise click.ClickException(message) from None


def handle_errors(func: F) -> F:
    """Map KgsearchError to a clean exit (JSON error body with --json)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        state = ctx.find_object(State)
        with _errors(state):
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def emit(state: State, value: Any, render: Callable[[Any], None] | None = None) -> None:
    """Print ``value`` as JSON with --json, else with ``render`` (or as JSON)."""
    if state.as_json or render is None:
        click.echo(
            json.dumps(
                _plain(value), ensure_ascii=False, indent=None if state.as_json else 2, default=str
            )
        )
    else:
        render(value)


def stdout_is_tty() -> bool:
    """Whether progress bars should be drawn."""
    return sys.stderr.isatty()
