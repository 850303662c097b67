"""CLI output and errors: the consoles, tables, JSON, clean error exits.

Light on purpose (click and :mod:`kgsearch.errors`, no engine, no pydantic): a
command that answers without the engine (``kgsearch search`` through a running
server, ``kgsearch stats`` read-only) renders with these alone. rich is imported when
the consoles ``out`` (stdout) and ``console`` (stderr) are first used or imported
from here, or a table is made: ``--json`` output goes through click and needs none.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kgsearch.cli.root import State
from kgsearch.errors import KgsearchError, NotFound

__all__ = [
    "State",
    "emit",
    "handle_errors",
    "missing_sqlite_file",
    "no_store",
    "pass_state",
    "resumable",
    "table",
]

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

F = TypeVar("F", bound=Callable[..., Any])
_consoles: dict[str, Console] = {}


def __getattr__(name: str) -> Console:
    """``out`` (stdout) and ``console`` (stderr): rich consoles made on first use."""
    if name not in ("out", "console"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    found = _consoles.get(name)
    if found is None:
        from rich.console import Console

        found = _consoles[name] = Console(stderr=name == "console")
        if name == "out":
            _fit(found)
    return found


def _fit(out: Console) -> None:
    """Fit the output to a pipe: wide enough that tables wrap rather than cut."""
    if not out.is_terminal:
        columns = os.environ.get("COLUMNS", "")
        out.width = max(int(columns) if columns.isdigit() else 0, _PIPED_WIDTH)


def pass_state(func: F) -> F:
    """Pass the global options (:class:`State`) as the first argument; also fit the
    output to a pipe: wide enough that tables wrap rather than cut."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        state = ctx.find_object(State)
        if state is None:  # pragma: no cover - the root group always sets it
            raise RuntimeError("kgsearch commands run under the kgsearch group")
        if "out" in _consoles:  # else fitted when it is made
            _fit(_consoles["out"])
        return ctx.invoke(func, state, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


_PIPED_WIDTH = 160
"""Columns of tables written to a pipe or a file (no terminal to measure)."""


def table(*headers: str, title: str | None = None, show_header: bool = True) -> Table:
    """A table whose long cells fold onto more lines instead of being cut."""
    from rich.table import Table

    result = Table(title=title, show_header=show_header)
    for header in headers:
        result.add_column(header, overflow="fold")
    return result


def missing_sqlite_file(url: str) -> str | None:
    """The SQLite file ``url`` names, when it is a file that does not exist."""
    if url == ":memory:" or ("://" in url and not url.startswith("sqlite:///")):
        return None
    path = url.removeprefix("sqlite:///")
    return None if not path or os.path.exists(path) else path


def no_store(path: str) -> NotFound:
    """The error of a command that reads a SQLite file that does not exist."""
    return NotFound(
        f"no store at {path}: check --db (or KGSEARCH_DB), or create one with "
        "`kgsearch import FILE` or `kgsearch ingest DOCS`; after `make demo` "
        "the demo store is --db .demo/kgsearch.db",
        details={"db": str(path)},
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
        # the importer's errors name a place in a file; a request's (pydantic's) are
        # already summed up in the message
        if isinstance(errors, list) and all(
            isinstance(e, dict) and "location" in e for e in errors
        ):
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
    if hasattr(value, "model_dump"):  # a pydantic model (pydantic itself is not imported)
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


@contextmanager
def resumable(what: str, again: str) -> Iterator[None]:
    """On Ctrl-C, say that the work done so far is saved and how to resume it
    (every batch commits on its own), then exit 130 without a traceback."""
    try:
        yield
    except KeyboardInterrupt:
        __getattr__("console").print(
            f"\n[yellow]interrupted:[/] the {what} finished so far is saved; "
            f"run `{again}` again to continue with the rest",
            soft_wrap=True,
        )
        raise click.exceptions.Exit(130) from None
