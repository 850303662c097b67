"""The MCP adapter: ``create_server(engine)`` exposes kgsearch as tools for agents.

Built on the official MCP SDK. Each tool parses its arguments (the library's own
models: ``ObjectIn``, ``RelationshipIn``, ``Filters``), calls one engine method in a
worker thread (``anyio.to_thread.run_sync``, the engine is synchronous) and returns
the same JSON payload the REST API returns, as structured content and as JSON text.
Errors come back as tool errors carrying the REST error shape
``{"error": {"code", "message", "details"}}``, argument validation included.

A server is bound to one project and a set of scopes; ``kgsearch mcp`` runs it over
stdio or streamable HTTP, where :func:`key_guard` checks API keys.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, MutableMapping
from typing import Annotated, Any, Literal

from kgsearch.errors import MissingDependency

try:
    import anyio
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import CallToolResult, InputRequiredResult, TextContent
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingDependency(
        "the MCP server needs the server extra: pip install 'kgsearch[server]'"
    ) from exc
from pydantic import Field, ValidationError
from pydantic_core import to_jsonable_python

import kgsearch
from kgsearch.config import BudgetSettings
from kgsearch.engine import Engine
from kgsearch.errors import InvalidRequest, KgsearchError, NotFound, ProviderError
from kgsearch.http import public_provider_error
from kgsearch.keys import (
    Forbidden,
    Scope,
    Unauthorized,
    check_project,
    check_scope,
    holds,
)
from kgsearch.lifecycle.budget import Budget, BudgetLimits, extractor_spends
from kgsearch.mcp.communities import add_community_tools
from kgsearch.mcp.stdio import run_stdio
from kgsearch.mcp.threads import run_tool
from kgsearch.model import Filters, ObjectIn, RelationshipIn
from kgsearch.reports import ExtractionReport
from kgsearch.search.request import SearchRequest

__all__ = ["create_server", "key_guard", "run_stdio", "tool_payload"]

log = logging.getLogger("kgsearch.mcp")

MAX_QUERY_CHARS = 800
SERVER_SCOPES: tuple[Scope, ...] = ("read", "write", "debug", "llm")
"""The scopes of a server by default: every tool (``admin`` adds nothing to MCP)."""
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The question")]
Limit = Annotated[int, Field(ge=1, le=100, description="Results to return")]
ContextLimit = Annotated[
    int | None,
    Field(
        ge=1,
        le=100,
        description="Results read (default 10; 20 from a graph built from documents)",
    ),
]
ResultTypes = Annotated[
    Literal["both", "graph", "text"],
    Field(description="graph = objects + relationships; text = chunks; both = all"),
]
TypeHint = Annotated[str | None, Field(max_length=200, description="Boost objects of this type")]
Recipe = Annotated[str | None, Field(max_length=50, description="A named search configuration")]
Id = Annotated[str, Field(min_length=1, max_length=200)]
Keywords = Annotated[
    Literal["off", "llm"],
    Field(
        description="llm: the server's chat model picks the query's keywords first "
        "(entities for object legs, themes for relationship legs; cached; on trouble "
        "the query as it is, noted in metadata.keywords)"
    ),
]


def tool_payload(result: CallToolResult) -> Any:
    """The JSON payload of a kgsearch tool result (what the REST API would return)."""
    if result.structured_content is not None:
        return result.structured_content
    block = result.content[0]
    assert isinstance(block, TextContent)
    return json.loads(block.text)


def _result(payload: dict[str, Any], *, error: bool = False) -> CallToolResult:
    text = json.dumps(payload, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=payload,
        is_error=error,
    )


class _Server(MCPServer[Any]):
    """MCPServer whose argument-validation errors use the kgsearch error shape."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        if _lone_surrogate(arguments):
            error = InvalidRequest("the arguments hold text that is not valid Unicode")
            return _result(error.to_dict(), error=True)
        unknown = self._unknown_arguments(name, arguments)
        if unknown:  # as REST refuses unknown fields: a typo is an error, not ignored
            error = InvalidRequest(
                f"unknown argument(s): {', '.join(unknown)}", details={"unknown": unknown}
            )
            return _result(error.to_dict(), error=True)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                errors: list[dict[str, Any]] = [
                    {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
                    for e in cause.errors(include_url=False)
                ]
                shown = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors[:5])
                error = InvalidRequest(f"invalid arguments: {shown}", details={"errors": errors})
            elif self._tool_manager.get_tool(name) is None:
                return _result(NotFound(f"unknown tool {name!r}").to_dict(), error=True)
            else:
                raise
            return _result(error.to_dict(), error=True)

    def _unknown_arguments(self, name: str, arguments: dict[str, Any]) -> list[str]:
        tool = self._tool_manager.get_tool(name)
        if tool is None or not isinstance(arguments, dict):
            return []
        known = tool.parameters.get("properties", {})
        return sorted(str(k) for k in arguments if k not in known)[:20]


def _provider_body(engine: Engine, exc: ProviderError) -> dict[str, Any]:
    """A provider failure as the agent sees it: the provider's kind, never its URL or
    raw error (logged here)."""
    log.warning("provider failure (%s): %s %s", exc.code, exc.message, exc.details)
    chat = engine.llm_settings.model.partition(":")[0] or "chat"
    try:
        embedder = engine.embedder.model_id.partition(":")[0] or "embedder"
    except KgsearchError:
        embedder = "embedder"
    return public_provider_error(exc, chat=chat, embedder=embedder)


def _lone_surrogate(value: object) -> bool:
    """Whether decoded JSON holds a string that is not valid Unicode (e.g. "\\ud800")."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


LLM_TOOL_THREADS = 4
"""Tool calls that wait on the chat model at once (the others keep the rest)."""


def create_server(
    engine: Engine,
    *,
    project: str | None = None,
    scopes: Iterable[Scope] = SERVER_SCOPES,
    name: str = "kgsearch",
    budget: BudgetLimits | None = None,
) -> MCPServer[Any]:
    """Build the MCP server over ``engine`` (the caller keeps owning and closing it).

    Args:
        engine: The engine every tool calls.
        project: The one project the tools read and write (default: the engine's).
        scopes: What the tools may do: ``read`` (search, lookups, status, extraction
            preview), ``write`` (add_objects, add_relationships, add_text), ``debug``
            (explain, ``include_debug``), ``llm`` (tools that call the chat model:
            ``ask``, ``keywords="llm"``, LLM extraction previews and community reports).
        name: The server name agents see.
        budget: Limits on the LLM spend of the server's project (default: the
            ``[budget]`` defaults); usage is kept in the engine's store under key ``""``.
    """
    p = project or engine.project
    allowed = frozenset(scopes)
    limits = budget if budget is not None else BudgetLimits.from_settings(BudgetSettings())
    spending = Budget(engine.store, limits)
    # tools that wait on the chat model have threads of their own: never all of them
    llm_lane = anyio.CapacityLimiter(LLM_TOOL_THREADS)
    server = _Server(
        name,
        version=kgsearch.__version__,
        instructions=(
            "Search and grow a knowledge graph. Use `search` for questions (objects, "
            "relationships and text at once), `context` for prompt-ready text, "
            "`get_object`/`neighbors` to walk the graph, `add_*` to store new facts "
            "(`add_text` also extracts objects and relationships from the text)."
        ),
    )

    def need(scope: Scope) -> None:
        if not holds(allowed, scope):
            raise Forbidden(
                f"this MCP server was started without the {scope!r} scope",
                details={"required_scope": scope, "scopes": sorted(allowed)},
            )

    async def call(scope: Scope, fn: Callable[[], Any], *, spends: bool = False) -> CallToolResult:
        try:
            need(scope)
            if spends:
                need("llm")
                await anyio.to_thread.run_sync(spending.admit, p, None)
                work = fn
                fn = lambda: spending.run(p, None, work)  # noqa: E731
            value = await run_tool(fn, limiter=llm_lane if spends else None)
        except ProviderError as exc:
            return _result(_provider_body(engine, exc), error=True)
        except KgsearchError as exc:
            return _result(exc.to_dict(), error=True)
        except Exception:  # a bug: report it without internals, like REST's 500
            log.exception("tool failed unexpectedly")
            return _result(
                {"error": {"code": "error", "message": "internal error", "details": {}}}, error=True
            )
        return _result(to_jsonable_python(value))

    def request(
        query: str,
        limit: int | None,
        result_types: str,
        type_hint: str | None,
        recipe: str | None,
        filters: Filters | None,
        include_debug: bool = False,
        keywords: str = "off",
    ) -> SearchRequest:
        data: dict[str, Any] = {"query": query, "limit": limit, "result_types": result_types}
        data |= {"type_hint": type_hint, "recipe": recipe, "include_debug": include_debug}
        data |= {"keywords": keywords}
        if filters is not None:
            data["filters"] = filters
        try:
            return SearchRequest.model_validate({k: v for k, v in data.items() if v is not None})
        except ValidationError as exc:
            raise InvalidRequest(f"invalid search: {exc.errors()[0]['msg']}") from None

    @server.tool(structured_output=False)
    async def search(
        query: Query,
        limit: Limit = 10,
        result_types: ResultTypes = "both",
        type_hint: TypeHint = None,
        recipe: Recipe = None,
        filters: Filters | None = None,
        include_debug: bool = False,
        keywords: Keywords = "off",
    ) -> CallToolResult:
        """Search the graph by meaning and keywords: objects, relationships (as
        "source predicate target" triplets) and text chunks, fused into one ranking."""
        scope: Scope = "debug" if include_debug else "read"
        return await call(
            scope,
            lambda: engine.search(
                request(
                    query, limit, result_types, type_hint, recipe, filters, include_debug, keywords
                ),
                project=p,
            ),
            spends=keywords == "llm",
        )

    @server.tool(structured_output=False)
    async def context(
        query: Query,
        limit: ContextLimit = None,
        result_types: ResultTypes = "both",
        type_hint: TypeHint = None,
        recipe: Recipe = None,
        filters: Filters | None = None,
        max_tokens: Annotated[int, Field(ge=1, le=100_000)] = 1000,
        style: Annotated[
            Literal["lines", "sections"],
            Field(description="sections: entities, relationships and sources, each cited"),
        ] = "lines",
        keywords: Keywords = "off",
    ) -> CallToolResult:
        """Prompt-ready context for a question: the best objects, triplets and text
        snippets as lines, within ``max_tokens``; with ``style="sections"`` and a query
        mode recipe (local, global, hybrid, mix, naive), cited sections."""
        return await call(
            "read",
            lambda: engine.context(
                request(query, limit, result_types, type_hint, recipe, filters, False, keywords),
                max_tokens=max_tokens,
                project=p,
                style=style,
            ),
            spends=keywords == "llm",
        )

    @server.tool(structured_output=False)
    async def explain(
        query: Query,
        limit: Limit = 10,
        result_types: ResultTypes = "both",
        type_hint: TypeHint = None,
        recipe: Recipe = None,
        filters: Filters | None = None,
        keywords: Keywords = "off",
    ) -> CallToolResult:
        """Show how a search ranked its results: each leg's hits and scores, then the
        fused order (and, with ``keywords="llm"``, the keywords and where they came from)."""
        return await call(
            "debug",
            lambda: engine.explain(
                request(query, limit, result_types, type_hint, recipe, filters, False, keywords),
                project=p,
            ),
            spends=keywords == "llm",
        )

    @server.tool(structured_output=False)
    async def ask(
        question: Query,
        limit: ContextLimit = None,
        recipe: Recipe = None,
        max_tokens: Annotated[int, Field(ge=1, le=100_000)] = 1500,
        no_llm: Annotated[
            bool,
            Field(
                description="Answer offline: the passages' best sentences, each cited (a "
                "graph without documents: the context's top facts); ask no model"
            ),
        ] = False,
        keywords: Keywords = "off",
    ) -> CallToolResult:
        """Answer a question from the graph with the server's chat model, citing the
        entities [E1], relationships [R1] and source passages [S1] it rests on;
        ``references`` resolves each citation to a row id. ``no_llm`` answers offline.
        Broad questions ("what are the main themes?"): ``recipe="global"`` map-reduces
        the community reports, citing communities [C1] and their facts [R1]."""
        given = {"keywords": keywords, "recipe": recipe, "limit": limit}
        options: dict[str, Any] = {k: v for k, v in given.items() if v}  # None: the default
        return await call(
            "read",
            lambda: engine.ask(
                question, llm=not no_llm, max_tokens=max_tokens, project=p, **options
            ),
            spends=not no_llm or keywords == "llm",
        )

    @server.tool(structured_output=False)
    async def get_object(
        id: Id | None = None,
        type: Annotated[str | None, Field(max_length=200)] = None,
        key: Annotated[str | None, Field(max_length=2000)] = None,
    ) -> CallToolResult:
        """One object (graph node) by id, or by type and key."""

        def run() -> Any:
            if id is not None:
                return engine.get_object(id, project=p)
            if type is None or key is None:
                raise InvalidRequest("give an id, or both type and key")
            return engine.get_object_by_key(type, key, project=p)

        return await call("read", run)

    @server.tool(structured_output=False)
    async def get_relationship(id: Id) -> CallToolResult:
        """One relationship (graph edge) by id, with its triplet text."""
        return await call("read", lambda: engine.get_relationship(id, project=p))

    @server.tool(structured_output=False)
    async def neighbors(
        id: Id,
        depth: Annotated[int, Field(ge=1, le=3)] = 1,
        direction: Literal["out", "in", "both"] = "both",
        relationship_types: Annotated[list[str] | None, Field(max_length=50)] = None,
    ) -> CallToolResult:
        """Objects within ``depth`` hops of an object, each with the relationship that
        reached it."""
        return await call(
            "read",
            lambda: engine.neighborhood(
                id,
                project=p,
                depth=depth,
                direction=direction,
                relationship_types=relationship_types,
            ),
        )

    @server.tool(structured_output=False)
    async def add_objects(
        objects: Annotated[list[ObjectIn], Field(min_length=1, max_length=1000)],
    ) -> CallToolResult:
        """Create or update objects (upserted by type + key); they are embedded later."""
        return await call("write", lambda: {"items": engine.add_objects(objects, project=p)})

    @server.tool(structured_output=False)
    async def add_relationships(
        relationships: Annotated[list[RelationshipIn], Field(min_length=1, max_length=1000)],
    ) -> CallToolResult:
        """Create or update relationships; endpoints are object ids or {type, key}."""
        return await call(
            "write", lambda: {"items": engine.add_relationships(relationships, project=p)}
        )

    @server.tool(structured_output=False)
    async def add_text(
        text: Annotated[str, Field(min_length=1, max_length=500_000)],
        source_id: Id | None = None,
        title: Annotated[str | None, Field(max_length=1000)] = None,
        max_chars: Annotated[int, Field(ge=100, le=100_000)] = 1000,
        extract: Annotated[
            bool, Field(description="Also extract objects and relationships into the graph")
        ] = True,
    ) -> CallToolResult:
        """Store free text as searchable chunks (split at paragraphs and sentences)
        and extract objects and relationships from them into the graph; the result
        counts the entities and relationships kept (``extraction``)."""

        def work() -> Any:
            return _add_text(engine, p, text, source_id, title, max_chars, extract)

        # an LLM extraction's calls are metered to the project (counted, not refused)
        spends = extract and extractor_spends(engine.extract_settings.extractor)
        return await call("write", (lambda: spending.run(p, None, work)) if spends else work)

    @server.tool(structured_output=False)
    async def entity_candidates(
        limit: Annotated[int, Field(ge=1, le=1000)] = 50,
    ) -> CallToolResult:
        """Duplicate entities entity resolution proposes (none applied): pairs of
        objects of compatible types with the reason (exact, alias, acronym, fuzzy,
        embedding) and score."""

        def run() -> Any:
            found = engine.entity_candidates(project=p)
            return {
                "proposals": [
                    {"keep": m.a_id, "merge": m.b_id, "reason": m.reason, "score": m.score}
                    for m in found[:limit]
                ],
                "total": len(found),
            }

        return await call("read", run)

    @server.tool(structured_output=False)
    async def merge_entities(
        keep: Id,
        merge: Annotated[list[Id], Field(min_length=1, max_length=100)],
        force: bool = False,
    ) -> CallToolResult:
        """Fold the ``merge`` objects into ``keep``: relationships, provenance and
        mentions move and the merged objects go; undo with ``split_entity``. Refused
        across incompatible types (a film and a person) unless ``force``."""
        return await call(
            "write", lambda: engine.merge_entities(keep, merge, project=p, force=force)
        )

    @server.tool(structured_output=False)
    async def split_entity(keep: Id, merged: Id) -> CallToolResult:
        """Undo the merge of ``merged`` into ``keep``."""
        return await call("write", lambda: engine.split_entity(keep, merged, project=p))

    @server.tool(structured_output=False)
    async def delete_document(source_id: Id) -> CallToolResult:
        """Delete a document (source) and everything built from it: its chunks, their
        mentions, objects and relationships no other document supports; the rest are
        rebuilt from the remaining documents (no model call). Returns the counts."""
        return await call("write", lambda: engine.delete_documents([source_id], project=p))

    @server.tool(structured_output=False)
    async def extraction_status() -> CallToolResult:
        """How far extraction got: chunks per status, entities and relationships kept,
        rejections by reason, tokens, cost and the last errors of failed chunks."""
        return await call("read", lambda: engine.extraction_status(project=p))

    @server.tool(structured_output=False)
    async def extract_preview(
        text: Annotated[str, Field(min_length=1, max_length=100_000)],
        extractor: Annotated[str | None, Field(max_length=50)] = None,
        domain: Annotated[str | None, Field(max_length=100)] = None,
        schema: Annotated[
            dict[str, Any] | None,
            Field(
                description="A graph schema to try ({entity_types, relation_types}; "
                "llm extractor only); default: the server's [extract] schema"
            ),
        ] = None,
    ) -> CallToolResult:
        """Show what extraction would find in a text (entities, relationships, what
        the quality filter rejects and why) without storing anything."""
        return await call(
            "read",
            lambda: engine.preview_extraction(
                text, extractor=extractor, domain=domain, schema=schema, project=p
            ),
            spends=extractor_spends(extractor or engine.extract_settings.extractor),
        )

    @server.tool(structured_output=False)
    async def embedding_status() -> CallToolResult:
        """How much of the project is embedded: counts by status and kind, failures."""
        return await call("read", lambda: engine.embedding_status(project=p))

    add_community_tools(server, call, engine, p)
    return server


def _add_text(
    engine: Engine,
    project: str,
    text: str,
    source_id: str | None,
    title: str | None,
    max_chars: int,
    extract: bool,
) -> Any:
    """``add_text``, then extraction of its chunks; without an extractor (``extract``
    false or the ``none`` extractor) the payload is ``add_text``'s alone."""
    if not extract or engine.extract_settings.extractor == "none":
        return engine.add_text(
            text, source_id=source_id, title=title, max_chars=max_chars, project=project
        )
    engine.extractor()  # an unknown or missing extractor fails before anything is stored
    added = engine.add_text(
        text, source_id=source_id, title=title, max_chars=max_chars, project=project
    )
    queued = engine.extract_chunks([c.id for c in added.chunks], project=project)
    report = ExtractionReport()
    if queued:
        # Never sleep on a retry backoff inside a tool call: a failed chunk stays
        # queued (see ``extraction_status``) for the next extraction run.
        ids = [c.id for c in added.chunks]  # its own chunks, each tried once
        report = engine.extract(
            project=project, chunk_ids=ids, limit=len(ids), wait_for_retries=False
        )
    return {"source": added.source, "chunks": added.chunks, "queued": queued, "extraction": report}


Scope_ = MutableMapping[str, Any]


def key_guard(app: Any, engine: Engine, *, project: str, scopes: Iterable[Scope]) -> Any:
    """ASGI middleware for the streamable-HTTP transport: every request must carry
    ``Authorization: Bearer <key>`` of ``project`` holding every scope in ``scopes``.

    Args:
        app: The MCP Starlette app.
        engine: Checks keys.
        project: The server's project.
        scopes: The scopes the server's tools use.
    """
    needed = list(scopes)

    async def guarded(scope: Scope_, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":  # MCP never uses one; refuse rather than pass it on
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] == "http":
            headers = {
                k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]
            }
            auth = headers.get("authorization", "")
            try:
                if not auth.lower().startswith("bearer "):
                    raise Unauthorized("missing API key: send `Authorization: Bearer <key>`")
                key = await anyio.to_thread.run_sync(engine.authenticate, auth[7:].strip())
                check_project(key, project)
                for s in needed:
                    check_scope(key, s)
            except KgsearchError as exc:
                body = json.dumps(exc.to_dict()).encode("utf-8")
                await send(
                    {
                        "type": "http.response.start",
                        "status": exc.status,
                        "headers": [(b"content-type", b"application/json")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded
