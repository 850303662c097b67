"""CLI command ``search``: through a running server when there is one, else in process.

This module stays light (click, rich, the stdlib HTTP client): answering through a
server (:mod:`kgsearch.cli.remote`) never imports the engine or the model; the
in-process search (:mod:`kgsearch.cli.local`) is imported only when it runs.
"""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape

from kgsearch.cli.output import State, console, emit, handle_errors, pass_state
from kgsearch.cli.query import build_request, render_results, search_options
from kgsearch.cli.remote import SERVER_ENV, search_via_server

__all__ = ["search"]


@click.command()
@click.argument("query")
@search_options
@click.option("--debug", is_flag=True, help="Include score distributions and leg counts.")
@click.option(
    "--explain",
    "explain",
    is_flag=True,
    help="Show each leg's ranked hits and scores, the fused order and the SQL each stage ran.",
)
@click.option("--ids", is_flag=True, help="With --explain: row ids instead of names.")
@click.option(
    "--server",
    envvar=SERVER_ENV,
    metavar="URL",
    help="Send the search to this kgsearch server (env KGSEARCH_SERVER; default: the "
    "running `kgsearch serve` of the same store, if any).",
)
@click.option(
    "--in-process", is_flag=True, help="Search in this process even if a server is running."
)
@pass_state
@handle_errors
def search(
    state: State,
    /,
    query: str,
    debug: bool,
    explain: bool,
    ids: bool,
    server: str | None,
    in_process: bool,
    **options: Any,
) -> None:
    """Search objects, relationships and text by meaning and keywords, fused by RRF.

    The table shows each hit's id (for `objects get`, `embed preview`…) and its
    relevance relative to the top hit (1.00); --json has the raw fused scores.

    When a `kgsearch serve` of the same store is running (or --server names one),
    the search is sent to it, which spares loading the model; if it does not answer,
    the search runs here. A server started with API keys needs KGSEARCH_API_KEY.

    Example: kgsearch search "who directed Jesse James" --type-hint movie
    """
    request = build_request(query, **options)
    if not (explain or in_process):
        found, where = search_via_server(
            request, db=state.db, project=state.project, debug=debug, server=server
        )
        if found is not None:
            emit(state, found, render_results)
            return
        if server is not None:
            console.print(f"[yellow]note:[/] searching in process ({escape(where or '')})")
    from kgsearch.cli.local import search_in_process

    search_in_process(state, request, debug=debug, explain=explain, ids=ids)
