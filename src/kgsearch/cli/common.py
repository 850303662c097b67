"""Shared CLI plumbing: the root group, global options, engine building, output."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.table import Table

from kgsearch.config import Settings
from kgsearch.engine import Engine
from kgsearch.errors import ConfigError, KgsearchError, NotFound

__all__ = [
    "State",
    "add_global_options",
    "add_json_option",
    "cli",
    "console",
    "emit",
    "engine_from",
    "handle_errors",
    "missing_sqlite_file",
    "out",
    "pass_state",
    "resumable",
    "row_id",
    "table",
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
    envvar=["KGSEARCH_DB", "KGSEARCH_STORE__URL"],
    help="Store URL or SQLite file (default: ./kgsearch.db; env KGSEARCH_DB).",
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

    Global options (--db, --project, --json) go before or after the command.

    Example: kgsearch --db graph.db --project demo stats --json
    """
    ctx.obj = State(db, project, as_json)
    if not out.is_terminal:  # piped: wide enough that tables wrap rather than cut
        columns = os.environ.get("COLUMNS", "")
        out.width = max(int(columns) if columns.isdigit() else 0, _PIPED_WIDTH)


_PIPED_WIDTH = 160
"""Columns of tables written to a pipe or a file (no terminal to measure)."""


def table(*headers: str, title: str | None = None, show_header: bool = True) -> Table:
    """A table whose long cells fold onto more lines instead of being cut."""
    result = Table(title=title, show_header=show_header)
    for header in headers:
        result.add_column(header, overflow="fold")
    return result


def _set_global(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    state = ctx.find_object(State)
    if value is not None and state is not None and param.name is not None:
        setattr(state, param.name.removeprefix("global_"), value)


def add_global_options(group: click.Group) -> None:
    """Accept ``--db`` and ``--project`` after any subcommand too
    (``kgsearch search q --db x``), unless the command has its own option of that name."""
    for command in group.commands.values():
        if isinstance(command, click.Group):
            add_global_options(command)
            continue
        taken = {opt for p in command.params for opt in getattr(p, "opts", [])}
        for opts, name, text in (
            (["--db"], "global_db", "Store URL or SQLite file (as before the command)."),
            (["--project", "-p"], "global_project", "Project (as before the command)."),
        ):
            free = [o for o in opts if o not in taken]
            if free and free[0].startswith("--"):
                command.params.append(
                    click.Option(
                        free,
                        name,
                        expose_value=False,
                        callback=_set_global,
                        hidden=True,
                        help=text,
                    )
                )


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
    state: State,
    *,
    model: str | None = None,
    settings: Settings | None = None,
    create: bool = False,
) -> Engine:
    """Build the engine for a command (from ``settings`` when a command overrides some).

    Only commands that write (``create=True``: init, import, ingest, serve…) may make
    a new SQLite file; the others refuse a path where there is none, so a mistyped
    ``--db`` is an error rather than a new empty store.

    Raises:
        NotFound: ``create`` is false and the SQLite file does not exist.
    """
    settings = settings or state.settings()
    url = state.db or settings.store.url
    if not create:
        missing = missing_sqlite_file(url)
        if missing is not None:
            raise NotFound(
                f"no store at {missing}: check --db (or KGSEARCH_DB), or create one with "
                "`kgsearch import FILE` or `kgsearch ingest DOCS`; after `make demo` "
                "the demo store is --db .demo/kgsearch.db",
                details={"db": str(missing)},
            )
    return Engine.from_settings(settings, project=state.project, store_url=url, model=model)


def missing_sqlite_file(url: str) -> str | None:
    """The SQLite file ``url`` names, when it is a file that does not exist."""
    if url == ":memory:" or ("://" in url and not url.startswith("sqlite:///")):
        return None
    path = url.removeprefix("sqlite:///")
    return None if not path or os.path.exists(path) else path


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


def row_id(engine: Engine, ref: str) -> str:
    """The id a reference names: an id as it is, or an object's ``TYPE/KEY``.

    Every command that takes a row accepts both (``objects get/delete``, ``embed
    preview``…). An id containing ``/`` still works: ``TYPE/KEY`` is tried first.

    Raises:
        NotFound: ``TYPE/KEY`` names no object and is not an id either.
    """
    if "/" not in ref:
        return ref
    type_, key = ref.split("/", 1)
    try:
        return engine.get_object_by_key(type_, key).id
    except NotFound:
        return ref


@contextmanager
def resumable(what: str, again: str) -> Iterator[None]:
    """On Ctrl-C, say that the work done so far is saved and how to resume it
    (every batch commits on its own), then exit 130 without a traceback."""
    try:
        yield
    except KeyboardInterrupt:
        console.print(
            f"\n[yellow]interrupted:[/] the {what} finished so far is saved; "
            f"run `{again}` again to continue with the rest",
            soft_wrap=True,
        )
        raise click.exceptions.Exit(130) from None
