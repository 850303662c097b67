"""The ``kgsearch embed`` group: ``status`` here, light; the commands that build the
engine (generate, backfill, worker, preview, retry) are in
:mod:`kgsearch.cli.embedding`, imported when one of them runs.

``embed status`` on a SQLite store of the current schema is counted read-only without
the engine (:mod:`kgsearch.cli.readonly`); elsewhere the engine counts it.
"""

from __future__ import annotations

import click

from kgsearch.cli.output import State, emit, handle_errors, pass_state
from kgsearch.cli.readonly import embedding_status_read_only
from kgsearch.cli.remote import queries_of
from kgsearch.cli.render import render_status
from kgsearch.cli.root import LazyGroup

__all__ = ["SUBCOMMANDS", "embed"]

SUBCOMMANDS: dict[str, tuple[str, str, str]] = {
    # name: (module, attribute, the command's one-line help)
    "backfill": (
        "kgsearch.cli.embedding",
        "backfill",
        "Embed rows that have no current embedding, batch by batch; safe to kill and resume.",
    ),
    "generate": (
        "kgsearch.cli.embedding",
        "generate",
        "Embed every pending row (and rows whose text changed) with the configured model.",
    ),
    "preview": (
        "kgsearch.cli.embedding",
        "preview",
        "Print the exact text that is (or would be) embedded for a row (an id, or an "
        "object's TYPE/KEY), without embedding.",
    ),
    "retry": (
        "kgsearch.cli.embedding",
        "retry",
        "Re-queue failed rows now (and dead ones with --dead); run `embed generate` next.",
    ),
    "worker": (
        "kgsearch.cli.embedding",
        "worker",
        "Run a long-lived embedding worker; start as many as you like, on any machines.",
    ),
}


@click.group(cls=LazyGroup, lazy=SUBCOMMANDS)
def embed() -> None:
    """Embed rows and inspect the embedding lifecycle (pending → embedded | failed → dead).

    Example: kgsearch embed generate && kgsearch embed status
    """


@embed.command("status")
@pass_state
@handle_errors
def status(state: State) -> None:
    """Counts by status per project and kind, percent embedded, stale, failures, latency,
    and how searches embed their queries (the bundled model's int8 query graph or its
    document model, and why; as /health's "queries").

    Example: kgsearch embed status --json
    """
    found = embedding_status_read_only(state)
    if found is not None:
        emit(state, found, lambda v: render_status(v, queries_of(v["model"])))
        return
    from kgsearch.cli.embedding import status_in_process

    status_in_process(state)
