"""The REST API: ``create_app(engine)`` builds a FastAPI app over one engine.

Routes are plain ``def`` functions (FastAPI runs them in its thread pool over the
synchronous engine). Every error leaves in one shape,
``{"error": {"code", "message", "details"}}``: kgsearch errors with their own status
and code, request validation errors as 400 ``invalid_request``, unknown routes and
methods as 404/405, and anything else (a bug) as 500 ``error`` without internals.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from kgsearch.config import BudgetSettings
from kgsearch.embed.batching import WINDOW_SECONDS
from kgsearch.errors import MissingDependency

try:
    import anyio
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.openapi.utils import get_openapi
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingDependency(
        "the REST API needs the server extra: pip install 'kgsearch[server]'"
    ) from exc

import kgsearch
from kgsearch.api import spend, web
from kgsearch.api.auth import KeyCache
from kgsearch.api.background import BackfillJobs, EmbeddingWorker
from kgsearch.api.job_board import JobBoard
from kgsearch.api.jobs import JobRegistry
from kgsearch.api.lanes import LLM_THREADS, Lanes, provider_body
from kgsearch.api.limits import MAX_BODY_BYTES, MAX_BODY_SECONDS, MAX_UPLOAD_BYTES, InputGuard
from kgsearch.api.query_vectors import QueryPrefetch
from kgsearch.api.routes import (
    chat,
    communities,
    documents,
    embeddings,
    entities,
    explore,
    extract,
    graph,
    ingest,
    search,
)
from kgsearch.api.schemas import ErrorBody
from kgsearch.engine import Engine
from kgsearch.errors import BudgetExceeded, InvalidRequest, KgsearchError, ProviderError
from kgsearch.lifecycle.budget import Budget, BudgetLimits

__all__ = ["create_app"]

log = logging.getLogger("kgsearch.api")

_HTTP_CODES = {401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed"}
_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in (
        (400, "Invalid request (validation errors are listed in details.errors)"),
        (401, "Missing, malformed, unknown or revoked API key"),
        (403, "The key lacks a scope or another project was named"),
        (404, "Not found in this project"),
        (409, "Conflict"),
        (408, "The request body did not arrive in time"),
        (413, "Request body too large"),
        (429, "An LLM budget is reached (Retry-After says when it resets)"),
        (500, "Internal error"),
        (502, "Embedding or extraction provider failed"),
        (503, "Store unavailable"),
    )
}


def create_app(
    engine: Engine,
    *,
    keys: bool = True,
    max_body_bytes: int = MAX_BODY_BYTES,
    max_upload_bytes: int = MAX_UPLOAD_BYTES,
    body_seconds: float = MAX_BODY_SECONDS,
    worker: bool = False,
    worker_interval: float = 1.0,
    threads: int | None = None,
    llm_threads: int = LLM_THREADS,
    warm: bool = False,
    budget: BudgetLimits | None = None,
    batch_window: float | None = WINDOW_SECONDS,
    jobs_folder: str | None = None,
) -> FastAPI:
    """Build the REST app over ``engine`` (the caller keeps owning and closing it).

    Args:
        engine: The engine every route calls.
        keys: Require an API key on every route but ``/health``. ``False`` is the
            keyless mode for local use: it answers loopback clients only, with every
            scope, in the project named by ``X-Kgsearch-Project`` (or the engine's).
        max_body_bytes: Larger request bodies get 413.
        max_upload_bytes: The same for file uploads (``POST /api/documents/upload``,
            all files together); each file is also held to the readers' own bounds.
        body_seconds: A body that takes longer to arrive gets 408 and the connection
            is closed (slow-body clients never hold one open).
        worker: Embed pending rows in a background thread while the app runs.
        worker_interval: Seconds between the worker's polls when idle.
        threads: Requests handled at once (FastAPI's thread pool; default: the CPU
            count). Search is CPU-bound (query embedding, vector math), so more threads
            only add contention: on 2 cores, FastAPI's usual 40 threads served 20
            clients 2-3x slower than the default (docs/benchmarks.md, "load").
            Searches run on a second pool of the same size, so writes, lookups and
            ``/health`` never queue behind them.
        llm_threads: Requests that wait for the chat model (answers, LLM keywords)
            at once, on a pool of their own, so a slow model never holds a search
            thread (:mod:`kgsearch.api.lanes`).
        warm: At start, load the embedding model and the search state in a
            background thread (:meth:`Engine.warm`), so the first search does not wait
            for them; ``/health`` answers at once and tells how far it got (``warm``:
            ``loading``, ``ready`` or ``failed``; ``off`` without it).
        budget: Limits on LLM spend per key and per project (default: the ``[budget]``
            defaults, safe for a shared server; :meth:`BudgetLimits.unlimited` only
            counts). Usage is kept in the engine's store.
        batch_window: Concurrent searches share model calls for their query vectors:
            REST searches embed theirs together before they take a search thread
            (:mod:`kgsearch.api.query_vectors`), and the engine's other query embeddings
            batch too (:meth:`Engine.batch_queries`: a query waits at most this many
            seconds for others while queries arrive together). None embeds each query
            alone, in its search.
        jobs_folder: A directory the processes of ``serve --workers N`` share: each
            posts its background jobs there, so any of them answers a poll or a cancel
            (:mod:`kgsearch.api.job_board`). None keeps jobs in this process.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        limiter = anyio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = threads or max(2, os.cpu_count() or 1)
        runner = EmbeddingWorker(engine, interval=worker_interval) if worker else None
        if runner is not None:
            runner.start()
        if warm:
            app.state.warm = "loading"
            threading.Thread(
                target=_warm, args=(app, engine), daemon=True, name="kgsearch-warm"
            ).start()
        try:
            yield
        finally:
            if runner is not None:
                runner.stop()
            jobs.stop_all()
            app.state.extraction_jobs.stop_all()

    app = FastAPI(
        title="kgsearch",
        version=kgsearch.__version__,
        summary="Knowledge-graph search: objects, relationships and text, by meaning.",
        lifespan=lifespan,
        responses=_ERROR_RESPONSES,
    )
    if batch_window is not None:
        engine.batch_queries(window=batch_window)
        app.state.query_prefetch = QueryPrefetch(engine)
    boards: tuple[JobBoard | None, JobBoard | None] = (None, None)
    if jobs_folder is not None:
        boards = (JobBoard(Path(jobs_folder, "backfill")), JobBoard(Path(jobs_folder, "jobs")))
    jobs = BackfillJobs(engine, boards[0])
    app.state.engine = engine
    app.state.lanes = Lanes(search=threads or max(2, os.cpu_count() or 1), llm=llm_threads)
    app.state.jobs = jobs
    app.state.extraction_jobs = JobRegistry(board=boards[1])
    app.state.require_keys = keys
    app.state.key_cache = KeyCache()
    limits = budget if budget is not None else BudgetLimits.from_settings(BudgetSettings())
    app.state.budget = Budget(engine.store, limits)
    app.state.warm = "off"
    app.state.health = None  # (when, the store's info) of /health's last check
    app.state.max_upload_bytes = max_upload_bytes
    # search first: a request walks the routes in order until one matches, and a search
    # (the request served most) then matches at once (no other path starts /api/search/)
    routers = (search, graph, ingest, embeddings, documents, extract, entities, explore)
    for module in (*routers, communities):
        app.include_router(module.router)
    web.mount(app)
    app.include_router(search.ask_router)
    app.include_router(chat.router)
    app.include_router(spend.router)
    app.add_api_route("/health", _health, methods=["GET"], tags=["health"])
    _add_error_handlers(app)
    app.add_middleware(
        InputGuard,
        max_bytes=max_body_bytes,
        body_seconds=body_seconds,
        upload_bytes=max_upload_bytes,
    )
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


_HEALTH_THREADS = anyio.CapacityLimiter(2)
"""/health asks the store on threads of its own, so it answers while every request
thread is busy (a slow provider, a long import)."""

HEALTH_FRESH_SECONDS = 1.0
"""/health asks the store at most this often; in between it answers on the event loop
with the last answer (a probe every 20 ms under load then waits for no thread)."""


async def _health(request: Request) -> dict[str, Any]:
    """Liveness: the store answers (asked at most once a second); ``warm`` tells
    whether the model and search state are loaded yet (``kgsearch serve`` loads them at
    start); ``queries`` how the model embeds queries (:attr:`Engine.query_embedding`:
    a failed query-graph build shows here, not as failed searches). Needs no key."""
    engine: Engine = request.app.state.engine
    checked = request.app.state.health
    if checked is None or time.monotonic() - checked[0] > HEALTH_FRESH_SECONDS:
        info = await anyio.to_thread.run_sync(engine.store.info, limiter=_HEALTH_THREADS)
        request.app.state.health = (time.monotonic(), info)
    else:
        info = checked[1]
    return {
        "status": "ok",
        "version": kgsearch.__version__,
        "schema": info.schema_version,
        "warm": request.app.state.warm,
        "queries": engine.query_embedding,
    }


def _warm(app: FastAPI, engine: Engine) -> None:
    """Load the model and the search state (the server's thread ``kgsearch-warm``); a
    failure is logged and left for the first search to report."""
    started = time.perf_counter()
    try:
        engine.warm()
    except KgsearchError as exc:
        log.warning("warm-up failed (the first search will load what it needs): %s", exc)
        app.state.warm = "failed"
        return
    except Exception:  # a bug: logged in full, and the server goes on serving
        log.exception("warm-up failed unexpectedly")
        app.state.warm = "failed"
        return
    log.info("warm: model and search state loaded in %.2f s", time.perf_counter() - started)
    app.state.warm = "ready"


def _error(exc: KgsearchError, engine: Engine | None = None) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    if isinstance(exc, BudgetExceeded):
        headers = {"Retry-After": str(exc.details.get("retry_after", 60))}
    if isinstance(exc, ProviderError) and engine is not None:
        return JSONResponse(provider_body(exc, engine), status_code=exc.status)
    return JSONResponse(exc.to_dict(), status_code=exc.status, headers=headers)


def _add_error_handlers(app: FastAPI) -> None:
    async def kgsearch_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, KgsearchError)
        return _error(exc, request.app.state.engine)

    async def validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = [
            {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type")}
            for e in exc.errors()
        ]
        shown = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors[:5])
        return _error(InvalidRequest(f"invalid request: {shown}", details={"errors": errors}))

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        code = _HTTP_CODES.get(
            exc.status_code, "invalid_request" if exc.status_code < 500 else "error"
        )
        body = {"error": {"code": code, "message": str(exc.detail), "details": {}}}
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
        body = {"error": {"code": "error", "message": "internal error", "details": {}}}
        return JSONResponse(body, status_code=500)

    app.add_exception_handler(KgsearchError, kgsearch_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI schema, with FastAPI's default 422 replaced by our 400 error shape."""
    if app.openapi_schema is None:
        schema = get_openapi(
            title=app.title,
            version=app.version,
            summary=app.summary,
            routes=app.routes,
        )
        for path in schema.get("paths", {}).values():
            for operation in path.values():
                operation.get("responses", {}).pop("422", None)
        schemas = schema.get("components", {}).get("schemas", {})
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        app.openapi_schema = schema
    return app.openapi_schema
