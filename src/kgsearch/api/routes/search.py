"""Search routes: seed 000's unified search, RAG context, explain, and answers (ask).

Searches and non-streamed answers run on the app's search threads
(``app.state.search_threads``), a pool of their own: under search load, writes,
lookups and ``/health`` never queue behind them on the request threads. A streamed
answer is made on a thread of its own.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypeVar

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

from kgsearch.api.auth import Principal, get_engine, require
from kgsearch.api.schemas import AskRequest, ContextRequest, UnifiedSearch, plain
from kgsearch.engine import Engine
from kgsearch.errors import KgsearchError
from kgsearch.search.answer import Answer
from kgsearch.search.request import Explain, RagContext, SearchRequest, SearchResponse

__all__ = ["ask_router", "router"]

router = APIRouter(prefix="/api/search", tags=["search"])
ask_router = APIRouter(prefix="/api", tags=["search"])
log = logging.getLogger(__name__)

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


@ask_router.post("/ask", response_model=Answer)
async def ask(body: AskRequest, who: Reader, engine: EngineDep, request: Request) -> Any:
    """Answer a question from the graph with the server's chat model ([llm] settings),
    citing entities [E1], relationships [R1] and passages [S1]; ``references`` resolves
    each citation to a row. ``llm: false`` answers with the context's top facts.

    ``stream: true`` answers with server-sent events instead: ``text`` events carry
    the answer's pieces as the model writes them (JSON strings), then one ``answer``
    event the whole :class:`Answer` (or one ``error`` event the error body)."""
    who.check_body(body.project)
    if body.include_debug:
        who.need("debug")
    wanted = plain(body, SearchRequest)
    options = wanted.model_dump(exclude_unset=True, exclude={"query"})

    def run(on_text: Any = None) -> Answer:
        return engine.ask(
            wanted.query,
            llm=body.llm,
            max_tokens=body.max_tokens,
            project=who.project,
            on_text=on_text,
            **options,
        )

    if not body.stream:
        return await _searching(request, run)
    return StreamingResponse(_events(run), media_type="text/event-stream")


def _events(run: Any) -> Iterator[str]:
    """Server-sent events of an answer made in a worker thread."""
    pieces: queue.Queue[tuple[str, Any]] = queue.Queue()

    def work() -> None:
        try:
            answer = run(lambda piece: pieces.put(("text", piece)))
            pieces.put(("answer", answer.model_dump(mode="json")))
        except KgsearchError as exc:
            pieces.put(("error", exc.to_dict()))
        except Exception:  # a bug: reported without internals, like a 500
            log.exception("ask failed unexpectedly")
            body = {"error": {"code": "error", "message": "internal error", "details": {}}}
            pieces.put(("error", body))

    threading.Thread(target=work, daemon=True, name="kgsearch-ask").start()
    while True:
        event, data = pieces.get()
        yield f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
        if event != "text":
            return
