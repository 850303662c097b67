"""CLI commands that serve the engine: ``serve`` (REST), ``mcp`` and ``keys``.

The server libraries are optional (``pip install 'kgsearch[server]'``); they are
imported inside the commands, so every other command works without them.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import threading
import time
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from kgsearch.cli.common import (
    State,
    emit,
    engine_from,
    handle_errors,
    load_settings,
    out,
    pass_state,
)
from kgsearch.cli.remote import announce, client_url, store_identity, withdraw
from kgsearch.cli.serve_workers import (
    MAX_WORKERS,
    OPTIONS_ENV,
    ProcessOptions,
    listening_socket,
    model_threads,
    one_blas_thread,
    usable_cpus,
)
from kgsearch.errors import MissingDependency
from kgsearch.keys import ApiKey, KeyLimits, is_loopback, parse_scopes
from kgsearch.lifecycle.budget import BudgetLimits, UsageReport

__all__ = ["keys", "mcp", "serve"]

_INSTALL = "pip install 'kgsearch[server]'"


def _require(module: str) -> None:
    try:
        __import__(module)
    except ImportError as exc:
        raise MissingDependency(
            f"this command needs {module}, part of the server extra: {_INSTALL}"
        ) from exc


AUTO_WORKERS = 0
"""``--workers auto`` as parsed: resolved by :func:`_processes` once the store is known."""


if TYPE_CHECKING:  # generic from click 8.2 on; the floor is 8.1
    _IntParam = click.ParamType[int]
else:
    _IntParam = click.ParamType


class WorkerCount(_IntParam):
    """``--workers``: a number of processes, or ``auto`` (:data:`AUTO_WORKERS`)."""

    name = "N|auto"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            count = value
        elif str(value).strip().lower() == "auto":
            return AUTO_WORKERS
        else:
            try:
                count = int(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is neither a whole number nor 'auto'", param, ctx)
        if not 1 <= count <= MAX_WORKERS:
            self.fail(f"{count} is not between 1 and {MAX_WORKERS} (or 'auto')", param, ctx)
        return count


def _processes(workers: int, url: str) -> int:
    """The processes to start: ``workers``, or for ``auto`` one per usable CPU; one for
    an in-memory store, which no other process sees (a number above 1 is refused)."""
    if url == ":memory:" and workers == AUTO_WORKERS:
        return 1
    if workers == AUTO_WORKERS:
        return usable_cpus()
    if workers > 1 and url == ":memory:":
        raise click.UsageError(
            f"--workers {workers} needs a store the processes share: an in-memory store "
            "lives in one process (use a SQLite file or PostgreSQL)"
        )
    return workers


def _check_keyless(no_auth: bool, host: str) -> None:
    if no_auth and not is_loopback(host):
        raise click.UsageError(
            f"--no-auth only serves loopback addresses (127.0.0.1, ::1), not {host!r}"
        )


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--no-auth",
    is_flag=True,
    help="Keyless mode for local use: loopback only, every scope, project from the "
    "X-Kgsearch-Project header.",
)
@click.option(
    "--max-body",
    default=1_048_576,
    show_default=True,
    type=click.IntRange(1024),
    help="Largest request body in bytes.",
)
@click.option(
    "--worker/--no-worker",
    default=True,
    show_default=True,
    help="Embed new rows in the background as they arrive.",
)
@click.option(
    "--threads",
    type=click.IntRange(1, 256),
    help="Requests handled at once (default: CPU count; search is CPU-bound).",
)
@click.option(
    "--llm-threads",
    default=4,
    show_default=True,
    type=click.IntRange(1, 256),
    help="Requests waiting for the chat model at once (answers, --keywords llm), on a "
    "pool of their own so a slow model never holds a search thread.",
)
@click.option(
    "--warm/--no-warm",
    default=True,
    show_default=True,
    help="Load the embedding model and the vectors at start, in the background, so the "
    "first search does not wait for them (/health tells when: warm = ready).",
)
@click.option(
    "--read-url",
    help="postgresql://… of a read replica of the store: searches and listings read "
    "there, writes and workers use the store (default: store.read_url).",
)
@click.option(
    "--workers",
    default="1",
    show_default=True,
    type=WorkerCount(),
    help="Server processes on one port (a listening socket each), each with its own engine "
    "over the store, or "
    "auto: one per usable CPU (searches in one process share its GIL; each process holds "
    'its own model and vectors; see docs/benchmarks.md, "load").',
)
@pass_state
@handle_errors
def serve(
    state: State,
    host: str,
    port: int,
    no_auth: bool,
    max_body: int,
    worker: bool,
    threads: int | None,
    llm_threads: int,
    warm: bool,
    read_url: str | None,
    workers: int,
) -> None:
    """Run the REST API (OpenAPI docs at /docs); requests need an API key.

    Example: kgsearch --db graph.db serve --port 8000
    """
    _require("fastapi")
    _require("uvicorn")
    _check_keyless(no_auth, host)
    import uvicorn

    from kgsearch.api.app import create_app

    settings = load_settings()
    if read_url:
        store = settings.store.model_copy(update={"read_url": read_url})
        settings = settings.model_copy(update={"store": store})
    url = state.db or settings.store.url
    workers = _processes(workers, url)
    one_blas_thread()
    if workers > 1:
        options = ProcessOptions(
            url=url,
            project=state.project,
            read_url=read_url,
            keys=not no_auth,
            max_body_bytes=max_body,
            worker_lock=None,
            threads=threads,
            llm_threads=llm_threads,
            warm=warm,
            model_threads=model_threads(workers),
        )
        engine_from(state, settings=settings, create=True).close()  # made, migrated once
        _serve_processes(options, host, port, workers, worker, store_identity(url))
        return
    with engine_from(state, settings=settings, create=True) as engine:
        app = create_app(
            engine,
            keys=not no_auth,
            max_body_bytes=max_body,
            worker=worker,
            threads=threads,
            llm_threads=llm_threads,
            warm=warm,
            budget=BudgetLimits.from_settings(settings.budget),
        )
        shown = f"[{host}]" if ":" in host else host
        click.echo(f"Web UI: http://{shown}:{port}/ui", err=True)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="info"))
        identity = store_identity(url)
        if identity is None:
            server.run()
            return
        # the discovery file lets `kgsearch search` of this store use this server
        watcher = threading.Thread(
            target=_announce_when_started,
            args=(server, identity, host, not no_auth),
            daemon=True,
            name="kgsearch-announce",
        )
        watcher.start()
        try:
            server.run()
        finally:
            withdraw(identity)


def _serve_processes(
    options: ProcessOptions,
    host: str,
    port: int,
    workers: int,
    embed_worker: bool,
    identity: str | None,
) -> None:
    """Serve with ``workers`` processes on one port (:mod:`kgsearch.cli.serve_workers`)."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    with tempfile.TemporaryDirectory(prefix="kgsearch-serve-") as folder:
        if embed_worker:
            lock = os.path.join(folder, "embedding-worker.lock")
            open(lock, "wb").close()
            options = dataclasses.replace(options, worker_lock=lock)
        options = dataclasses.replace(options, jobs_folder=os.path.join(folder, "jobs"))
        os.environ[OPTIONS_ENV] = options.to_env()
        config = uvicorn.Config(
            "kgsearch.cli.serve_workers:app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level="info",
        )
        try:
            sock = listening_socket(host, port) or config.bind_socket()
        except OSError as exc:
            raise click.ClickException(f"cannot listen on {host}:{port}: {exc}") from exc
        shown = f"[{host}]" if ":" in host else host
        bound = sock.getsockname()[1]
        click.echo(f"Web UI: http://{shown}:{bound}/ui ({workers} processes)", err=True)
        if identity is not None:
            announce(identity, client_url(host, bound), auth=options.keys)
        try:
            Multiprocess(config, sockets=[sock]).run()
        finally:
            if identity is not None:
                withdraw(identity)


def _announce_when_started(server: Any, identity: str, host: str, auth: bool) -> None:
    """Write the discovery file once uvicorn listens (on the port it really bound)."""
    while not server.started:
        if server.should_exit:
            return
        time.sleep(0.05)
    try:
        port = server.servers[0].sockets[0].getsockname()[1]
        announce(identity, client_url(host, port), auth=auth)
    except (OSError, IndexError, AttributeError) as exc:
        click.echo(f"note: no discovery file for `kgsearch search` ({exc})", err=True)


@click.command("mcp")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for local agents; http for streamable HTTP at /mcp.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP address.")
@click.option("--port", default=8001, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--scopes",
    default="read,write,debug,llm",
    show_default=True,
    help="What the tools may do (read, write, debug, llm: tools that call the chat "
    "model). Over HTTP each key must hold them all.",
)
@click.option("--no-auth", is_flag=True, help="HTTP without API keys (loopback only).")
@click.option(
    "--worker/--no-worker",
    default=True,
    show_default=True,
    help="Embed new rows in the background as they arrive.",
)
@pass_state
@handle_errors
def mcp(
    state: State,
    transport: str,
    host: str,
    port: int,
    scopes: str,
    no_auth: bool,
    worker: bool,
) -> None:
    """Run the MCP server for agents: search, lookups, neighbours and writes.

    Over HTTP every request needs an API key of the project holding the scopes.

    Example: kgsearch --db graph.db --project demo mcp --scopes read
    """
    _require("mcp")
    allowed = parse_scopes(scopes)
    if transport == "http":
        _check_keyless(no_auth, host)
    from kgsearch.api.background import EmbeddingWorker
    from kgsearch.mcp.server import create_server, key_guard, run_stdio

    settings = load_settings()
    with engine_from(state, settings=settings, create=True) as engine:
        server = create_server(
            engine,
            project=engine.project,
            scopes=allowed,
            budget=BudgetLimits.from_settings(settings.budget),
        )
        runner = EmbeddingWorker(engine) if worker else None
        if runner is not None:
            runner.start()
        try:
            if transport == "stdio":
                run_stdio(server)  # the SDK's transport, answering unreadable lines
                return
            import uvicorn

            app: Any = server.streamable_http_app(host=host)
            if not no_auth:
                app = key_guard(app, engine, project=engine.project, scopes=allowed)
            uvicorn.run(app, host=host, port=port, log_level="info")
        finally:
            if runner is not None:
                runner.stop()


@click.group()
def keys() -> None:
    """Create, list and revoke API keys (each bound to one project).

    Example: kgsearch keys create --project demo --scopes read,write
    """


@keys.command("create")
@click.option("--project", "key_project", help="The key's project (default: the global one).")
@click.option(
    "--scopes",
    default="read",
    show_default=True,
    help="Comma-separated: read, write, debug, llm (may spend on the chat model), "
    "admin (every scope, and the project's usage).",
)
@click.option("--name", help="A label to recognise the key by.")
@pass_state
@handle_errors
def keys_create(state: State, key_project: str | None, scopes: str, name: str | None) -> None:
    """Create an API key and print it once (only its hash is stored).

    Example: kgsearch keys create --project demo --scopes read,write,debug
    """
    with engine_from(state, create=True) as engine:
        key, record = engine.create_api_key(key_project or engine.project, scopes, name=name)
    emit(
        state,
        {"key": key, **record.model_dump(mode="json")},
        lambda v: out.print(
            f"{v['key']}\n[dim]id {v['id']}, project {v['project']}, scopes "
            f"{','.join(v['scopes'])}. Store it now: it is not shown again.[/]"
        ),
    )


@keys.command("list")
@click.option("--project", "key_project", help="Only keys of this project.")
@pass_state
@handle_errors
def keys_list(state: State, key_project: str | None) -> None:
    """List API keys (ids, projects, scopes; never the keys themselves).

    Example: kgsearch keys list --project demo
    """
    with engine_from(state) as engine:
        records = engine.api_keys(project=key_project)
    emit(state, records, _render_keys)


@keys.command("revoke")
@click.argument("key_id")
@pass_state
@handle_errors
def keys_revoke(state: State, key_id: str) -> None:
    """Revoke an API key by id; running servers refuse it within a second.

    Example: kgsearch keys revoke 3f2a9c1b7d4e
    """
    with engine_from(state) as engine:
        engine.revoke_api_key(key_id)
    emit(state, {"revoked": key_id}, lambda v: out.print(f"revoked {v['revoked']}"))


@keys.command("limit")
@click.argument("key_id")
@click.option("--requests-per-minute", type=click.IntRange(0), help="Spending requests a minute.")
@click.option("--tokens-per-minute", type=click.IntRange(0), help="Model tokens a minute.")
@click.option("--tokens-per-day", type=click.IntRange(0), help="Model tokens a UTC day.")
@click.option(
    "--cost-per-day-usd", type=click.FloatRange(0), help="US dollars a UTC day (priced models)."
)
@click.option("--reset", is_flag=True, help="Drop the key's own limits: the server's apply.")
@pass_state
@handle_errors
def keys_limit(
    state: State,
    key_id: str,
    requests_per_minute: int | None,
    tokens_per_minute: int | None,
    tokens_per_day: int | None,
    cost_per_day_usd: float | None,
    reset: bool,
) -> None:
    """Give one key its own LLM budget (unset options keep the server's [budget]
    key_* values; 0 turns a limit off for the key).

    Example: kgsearch keys limit 3f2a9c1b7d4e --requests-per-minute 60 --tokens-per-day 1000000
    """
    given = {
        "requests_per_minute": requests_per_minute,
        "tokens_per_minute": tokens_per_minute,
        "tokens_per_day": tokens_per_day,
        "cost_per_day_usd": cost_per_day_usd,
    }
    if reset == any(v is not None for v in given.values()):
        raise click.UsageError("give --reset, or at least one limit (and not both)")
    limits = None if reset else KeyLimits(**given)
    with engine_from(state) as engine:
        engine.set_key_limits(key_id, limits)
    shown = {} if limits is None else limits.model_dump(exclude_none=True)
    emit(
        state,
        {"id": key_id, "llm_limits": shown or None},
        lambda v: out.print(f"{v['id']}: {v['llm_limits'] or 'the server limits'}"),
    )


@keys.command("usage")
@click.option("--project", "key_project", help="Only this project's keys and total.")
@pass_state
@handle_errors
def keys_usage(state: State, key_project: str | None) -> None:
    """LLM spend per key and per project, this minute and today (UTC): requests,
    tokens and US dollars, as the servers' budgets counted them.

    Example: kgsearch keys usage --project demo --json
    """
    with engine_from(state) as engine:
        report = engine.llm_usage(project=key_project)
    emit(state, report, _render_usage)


def _render_usage(report: UsageReport) -> None:
    table = Table(
        "project",
        "key",
        "requests (min)",
        "tokens (min)",
        "requests (day)",
        "tokens (day)",
        "cost USD (day)",
        title=f"LLM usage, {report.day} (UTC)",
    )
    for row in [*report.keys, *report.projects]:
        key = "(total)" if row.key_id is None else row.key_id or "(no key)"
        table.add_row(
            row.project,
            key,
            str(row.this_minute.requests),
            str(row.this_minute.tokens),
            str(row.today.requests),
            str(row.today.tokens),
            f"{row.today.cost_usd:.4f}",
        )
    out.print(table)


def _render_keys(records: list[ApiKey]) -> None:
    table = Table("id", "project", "scopes", "name", "created", "revoked")
    for k in records:
        table.add_row(
            k.id,
            k.project,
            ",".join(k.scopes),
            k.name or "",
            k.created_at.strftime("%Y-%m-%d %H:%M"),
            k.revoked_at.strftime("%Y-%m-%d %H:%M") if k.revoked_at else "",
        )
    out.print(table)
