"""The root ``kgsearch`` group: global options, and commands loaded only when used.

This module imports click and nothing heavy: ``kgsearch --help`` lists every command
from :data:`COMMANDS` (name, module, one-line help) without importing a command's
module, and running a command imports only the module that defines it. A test
checks that the one-line helps here match the commands' own.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

__all__ = [
    "COMMANDS",
    "LazyGroup",
    "State",
    "add_global_options",
    "add_json_option",
    "cli",
    "main",
]

COMMANDS: dict[str, tuple[str, str, str]] = {
    # name: (module, attribute, the command's one-line help)
    "ask": (
        "kgsearch.cli.ask",
        "ask",
        "Answer a question from the graph, citing the objects, relationships and passages "
        "the answer rests on ([E1], [R1], [S1]; the references are listed after it).",
    ),
    "citus": (
        "kgsearch.cli.citus",
        "citus",
        "Run a PostgreSQL store on a Citus cluster (docs/scaling.md).",
    ),
    "communities": (
        "kgsearch.cli.communities",
        "communities",
        "Hierarchical Leiden communities and their reports (docs/communities.md).",
    ),
    "config": ("kgsearch.cli.graph", "config", "Show the effective configuration."),
    "context": (
        "kgsearch.cli.local",
        "context",
        "Print RAG prompt context for a question: objects, triplets and snippets.",
    ),
    "documents": (
        "kgsearch.cli.documents",
        "documents",
        "List ingested documents and delete them with everything built from them.",
    ),
    "embed": (
        "kgsearch.cli.embed",
        "embed",
        "Embed rows and inspect the embedding lifecycle (pending → embedded | failed → dead).",
    ),
    "entities": (
        "kgsearch.cli.entities",
        "entities",
        "Find and fix duplicate entities: proposals, merges and undo.",
    ),
    "export": (
        "kgsearch.cli.graph",
        "export_cmd",
        "Export a project to a file that imports back identically.",
    ),
    "extract": (
        "kgsearch.cli.extract",
        "extract",
        "Run and inspect text → graph extraction (pending → extracted | failed → dead).",
    ),
    "import": (
        "kgsearch.cli.graph",
        "import_cmd",
        "Import JSONL, JSON graph or CSV files, all or nothing.",
    ),
    "ingest": (
        "kgsearch.cli.extract",
        "ingest",
        "Ingest documents: chunk them, extract entities and relationships, build the graph, "
        "embed it.",
    ),
    "init": (
        "kgsearch.cli.graph",
        "init",
        "Create (or upgrade) the store and print what it holds.",
    ),
    "keys": (
        "kgsearch.cli.serve",
        "keys",
        "Create, list and revoke API keys (each bound to one project).",
    ),
    "mcp": (
        "kgsearch.cli.serve",
        "mcp",
        "Run the MCP server for agents: search, lookups, neighbours and writes.",
    ),
    "migrate": (
        "kgsearch.cli.migrate",
        "migrate",
        "Copy every project of one store into another, SQLite ⇄ PostgreSQL.",
    ),
    "objects": (
        "kgsearch.cli.rows",
        "objects",
        "List, show and delete objects (graph nodes).",
    ),
    "relationships": (
        "kgsearch.cli.rows",
        "relationships",
        "List, show and delete relationships (graph edges).",
    ),
    "schema": (
        "kgsearch.cli.schema",
        "schema",
        "Show the graph schema (entity and relation types) LLM extraction follows.",
    ),
    "search": (
        "kgsearch.cli.search",
        "search",
        "Search objects, relationships and text by meaning and keywords, fused by RRF.",
    ),
    "serve": (
        "kgsearch.cli.serve",
        "serve",
        "Run the REST API (OpenAPI docs at /docs); requests need an API key.",
    ),
    "stats": (
        "kgsearch.cli.stats",
        "stats",
        "Row counts of the project and what the store was built with.",
    ),
}


class State:
    """Global options given before the command name."""

    def __init__(self, db: str | None, project: str | None, as_json: bool) -> None:
        self.db = db
        self.project = project
        self.as_json = as_json


class LazyGroup(click.Group):
    """A group whose commands are imported from a table (name: module, attribute,
    one-line help; :data:`COMMANDS` for the root) when first used; a loaded command
    gets the global options after its name (:func:`add_global_options`)."""

    def __init__(
        self, *args: Any, lazy: dict[str, tuple[str, str, str]] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = COMMANDS if lazy is None else lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.lazy, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module, attribute, _ = self.lazy[cmd_name]
            command = getattr(importlib.import_module(module), attribute)
            _add_options(command)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """As click's, but a mistyped name is matched against every command, loaded or
        not, so ``kgsearch serch`` suggests ``search``."""
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            raise click.exceptions.NoSuchCommand(
                exc.command_name, possibilities=self.list_commands(ctx), ctx=ctx
            ) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List the commands with the one-line helps of the table, importing none."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            # an unloaded command is stood in for by one with the table's help: click
            # shortens it to the width exactly as it would the real command's
            command = self.commands.get(name) or click.Command(name, help=self.lazy[name][2])
            if not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
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


def _set_global(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    state = ctx.find_object(State)
    if value is not None and state is not None and param.name is not None:
        setattr(state, param.name.removeprefix("global_"), value)


def _set_json(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    state = ctx.find_object(State)
    if value and state is not None:
        state.as_json = True


def _add_options(command: click.Command) -> None:
    """Give a command (and its subcommands) the global options after its name, once."""
    if getattr(command, "_kgsearch_global_options", False):
        return
    add_global_options(command)
    add_json_option(command)
    command._kgsearch_global_options = True  # type: ignore[attr-defined]


def add_global_options(command: click.Command) -> None:
    """Accept ``--db`` and ``--project`` after a command too (``kgsearch search q --db
    x``), unless the command has its own option of that name; a group's subcommands
    get them."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            add_global_options(sub)
        return
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


def add_json_option(command: click.Command) -> None:
    """Accept ``--json`` after a command too (``kgsearch stats --json``)."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            add_json_option(sub)
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


def main() -> None:
    """Console-script entry point."""
    try:
        cli.main(prog_name="kgsearch", standalone_mode=True)
    except click.exceptions.Exit as exc:  # pragma: no cover - click handles normally
        sys.exit(exc.exit_code)
