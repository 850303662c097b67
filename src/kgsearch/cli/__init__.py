"""The ``kgsearch`` command line: a thin click adapter over :class:`kgsearch.Engine`.

Each command builds the engine from settings and flags, calls one engine method,
renders the result (a table on a terminal, JSON with ``--json``) and turns any
:class:`kgsearch.KgsearchError` into a clean message and exit code 1.
"""

from __future__ import annotations

import sys

import click

from kgsearch.cli.ask import ask
from kgsearch.cli.common import add_global_options, add_json_option, cli
from kgsearch.cli.communities import communities
from kgsearch.cli.documents import documents
from kgsearch.cli.embed import embed
from kgsearch.cli.entities import entities
from kgsearch.cli.extract import extract, ingest
from kgsearch.cli.graph import (
    config,
    export_cmd,
    import_cmd,
    init,
    objects,
    relationships,
    stats,
)
from kgsearch.cli.migrate import migrate
from kgsearch.cli.search import context, search
from kgsearch.cli.serve import keys, mcp, serve

__all__ = ["cli", "main"]

for command in (
    init,
    import_cmd,
    ingest,
    extract,
    documents,
    entities,
    communities,
    export_cmd,
    objects,
    relationships,
    stats,
    config,
    embed,
    search,
    context,
    ask,
    serve,
    mcp,
    keys,
    migrate,
):
    cli.add_command(command)
add_json_option(cli)
add_global_options(cli)


def main() -> None:
    """Console-script entry point."""
    try:
        cli.main(prog_name="kgsearch", standalone_mode=True)
    except click.exceptions.Exit as exc:  # pragma: no cover - click handles normally
        sys.exit(exc.exit_code)
