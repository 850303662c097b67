"""Search routes: seed 000's unified search, RAG context and explain.

Searches run on the app's search threads (``app.state.search_threads``), a pool of
their own: under search load, writes, lookups and ``/health`` never queue behind
them on the request threads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

import anyio
from fastapi import APIRouter, Depends, Request

from kgsearch.api.auth import Principal, get_engine, require
from kgsearch.api.schemas import ContextRequest, UnifiedSearch, plain
from kgsearch.engine import Engine
from kgsearch.search.request import Explain, RagContext, SearchRequest, SearchResponse

__all__ = ["router"]

router = APIRouter(prefix="/api/search", tags=["search"])

EngineDep = Annotated[Engine, Depends(get_engine)]
Reader = Annotated[Principal, Depends(require("read"))]
Debugger = Annotated[Principal, Depends(require("debug"))]
T = TypeVar("T")


async def _searching(request: Request, work: Callable[[], T]) -> T:
    limiter: anyio.CapacityLimiter = request.app.state.search_threads
    return await anyio.to_thread.run_sync(work, limiter=limiter)


@router.post("/unified")
async def unified(
    body: UnifiedSearch, who: Reader, engine: EngineDep, request: Request
) -> SearchResponse:
    """Search objects, relationships and chunks at once (vector + BM25, fused by RRF).

    ``includeDebug: true`` adds score distributions and per-leg ranks; it needs a key
    with the ``debug`` scope.
    """
    who.check_body(body.project)
    if body.include_debug:
        who.need("debug")
    wanted = plain(body, SearchRequest)
    return await _searching(request, lambda: engine.search(wanted, project=who.project))


@router.post("/context")
async def context(
    body: ContextRequest, who: Reader, engine: EngineDep, request: Request
) -> RagContext:
    """The search's hits formatted as RAG prompt context within ``maxTokens``."""
    who.check_body(body.project)
    if body.include_debug:
        who.need("debug")
    wanted = plain(body, SearchRequest)
    return await _searching(
        request,
        lambda: engine.context(
            wanted, max_tokens=body.max_tokens, project=who.project, style=body.style
        ),
    )


@router.post("/explain")
async def explain(
    body: UnifiedSearch, who: Debugger, engine: EngineDep, request: Request
) -> Explain:
    """Show a search's work: each leg's ranked hits and scores, the fused order and the
    SQL each stage ran."""
    who.check_body(body.project)
    wanted = plain(body, SearchRequest)
    return await _searching(request, lambda: engine.explain(wanted, project=who.project))
