"""Search routes: seed 000's unified search, RAG context, explain, and answers (ask).

Searches run on the app's search lane and whatever waits for the chat model (answers,
``keywords: "llm"``) on its LLM lane (:mod:`kgsearch.api.lanes`): under search load,
writes, lookups and ``/health`` never queue behind them on the request threads, and a
slow model never holds a search thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

from kgsearch.api.auth import Principal, current_engine, require
from kgsearch.api.lanes import on_lane, stream_events, wants_llm
from kgsearch.api.query_vectors import QueryPrefetch, with_embed_time
from kgsearch.api.schemas import AskRequest, ContextRequest, UnifiedSearch, plain
from kgsearch.api.spend import admit, maybe_charged, spends_keywords
from kgsearch.engine import Engine
from kgsearch.search.answer import Answer
from kgsearch.search.in_flight import searching
from kgsearch.search.request import Explain, RagContext, SearchRequest, SearchResponse

__all__ = ["ask_router", "router"]

T = TypeVar("T")

router = APIRouter(prefix="/api/search", tags=["search"])
ask_router = APIRouter(prefix="/api", tags=["search"])

EngineDep = Annotated[Engine, Depends(current_engine)]
Reader = Annotated[Principal, Depends(require("read"))]
Debugger = Annotated[Principal, Depends(require("debug"))]


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
    work = await maybe_charged(
        request, who, spends_keywords(body), lambda: engine.search(wanted, project=who.project)
    )
    waiting, work = _vector_first(request, wanted, work)
    with waiting:
        return await on_lane(request, body, work)


@router.post("/context")
async def context(
    body: ContextRequest, who: Reader, engine: EngineDep, request: Request
) -> RagContext:
    """The search's hits formatted as RAG prompt context within ``maxTokens``."""
    who.check_body(body.project)
    if body.include_debug:
        who.need("debug")
    wanted = plain(body, SearchRequest)
    work = await maybe_charged(
        request,
        who,
        spends_keywords(body),
        lambda: engine.context(
            wanted, max_tokens=body.max_tokens, project=who.project, style=body.style
        ),
    )
    waiting, work = _vector_first(request, wanted, work)
    with waiting:
        return await on_lane(request, body, work)


def _vector_first(
    request: Request, wanted: SearchRequest, work: Callable[[], T]
) -> tuple[AbstractContextManager[None], Callable[[], T]]:
    """``work`` with the query vector made first, together with those of the searches
    waiting meanwhile (:mod:`kgsearch.api.query_vectors`), and the context the request
    waits in; as they are for an app without it."""
    prefetch: QueryPrefetch | None = getattr(request.app.state, "query_prefetch", None)
    if prefetch is None:
        return nullcontext(), work

    def first() -> T:
        started = time.perf_counter()
        with searching():  # a search beside this embedding keeps its scans inline
            prefetch.ensure(wanted)
        ms = (time.perf_counter() - started) * 1000
        return with_embed_time(work(), ms)

    return prefetch.waiting(wanted), first


@router.post("/explain")
async def explain(
    body: UnifiedSearch, who: Debugger, engine: EngineDep, request: Request
) -> Explain:
    """Show a search's work: each leg's ranked hits and scores, the fused order and the
    SQL each stage ran."""
    who.check_body(body.project)
    wanted = plain(body, SearchRequest)
    work = await maybe_charged(
        request, who, spends_keywords(body), lambda: engine.explain(wanted, project=who.project)
    )
    return await on_lane(request, body, work)


@ask_router.post("/ask", response_model=Answer)
async def ask(body: AskRequest, who: Reader, engine: EngineDep, request: Request) -> Any:
    """Answer a question from the graph with the server's chat model ([llm] settings),
    citing entities [E1], relationships [R1] and passages [S1]; ``references`` resolves
    each citation to a row. ``llm: false`` answers with the context's top facts.

    ``stream: true`` answers with server-sent events instead: ``text`` events carry
    the answer's pieces as the model writes them (JSON strings), then one ``answer``
    event the whole :class:`Answer` (or one ``error`` event the error body).

    With the model (or ``keywords: "llm"``) it needs the ``llm`` scope too and is held
    to the LLM budget (429 with ``Retry-After`` when a limit is reached)."""
    who.check_body(body.project)
    if body.include_debug:
        who.need("debug")
    wanted = plain(body, SearchRequest)
    options = wanted.model_dump(exclude_unset=True, exclude={"query"})
    budget = await admit(request, who) if wants_llm(body) else None

    def run(on_text: Any = None) -> Answer:
        def work() -> Answer:
            return engine.ask(
                wanted.query,
                llm=body.llm,
                max_tokens=body.max_tokens,
                project=who.project,
                on_text=on_text,
                **options,
            )

        return work() if budget is None else budget.run(who.project, who.key_id, work)

    if not body.stream:
        return await on_lane(request, body, run)
    return StreamingResponse(stream_events(request, run), media_type="text/event-stream")
