"""The engine's search methods: search, explain and RAG context over a :class:`SearchSetup`.

The engine lends each call its store, the project, its cached store info, its embedder
(made on first use) and its cross-encoder. Here the store info decides whether there is
a query embedder at all (nothing embedded yet: the vector legs are skipped) and checks
that it is the model the vectors were made with; then the request, a
:class:`~kgsearch.search.request.SearchRequest` or a query string with options, runs
through :func:`~kgsearch.search.pipeline.run_search`.

A project that holds chunks is a graph built from documents
(:class:`DocumentsCache`, asked once per :data:`INFO_TTL_SECONDS` per project): its
searches lead with the passages (``Plan.documents``), and its context and answers pack
them whole first (:func:`~kgsearch.search.context.pack_evidence`).

The store info is read once per engine, not per search, so a long-running server would
not notice another process switching the store to another model. It is therefore read
again once it is :data:`INFO_TTL_SECONDS` old (on the next search, which then costs one
more store call), and at once when a search fails with ``DimensionMismatch``: if the
model changed, the search fails with the model check's ``ConfigError`` instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

from kgsearch.embed.base import Embedder, Vector
from kgsearch.embed.guard import QueryGuard
from kgsearch.errors import ConfigError, DimensionMismatch, InvalidRequest
from kgsearch.llm.base import LLM
from kgsearch.search import answer as answering
from kgsearch.search.answer import Answer
from kgsearch.search.communities import format_reports
from kgsearch.search.context import Passage, format_context, format_sections, pack_evidence
from kgsearch.search.global_search import GLOBAL_RECIPES, answer_from_reports
from kgsearch.search.keywords import extract_keywords
from kgsearch.search.pipeline import SearchContext, SearchStore, run_search
from kgsearch.search.query_cache import QueryCache
from kgsearch.search.request import (
    Explain,
    RagContext,
    SearchRequest,
    SearchResponse,
    SearchResult,
    TextResult,
    validate_request,
)
from kgsearch.search.rerank import CrossEncoder
from kgsearch.search.response import explain as explained
from kgsearch.search.statements import Traces
from kgsearch.store.base import EmbeddingQueue, GraphReads, Lifecycle, StoreInfo

__all__ = [
    "CONTEXT_RESULTS",
    "INFO_TTL_SECONDS",
    "DocumentsCache",
    "SearchSetup",
    "StoreInfoCache",
    "Through",
    "ask",
    "context",
    "explain",
    "search",
    "search_request",
]

# How long a search trusts the store info it read: another process's switch of model
# shows after at most this long (sooner when the dimensions changed too).
INFO_TTL_SECONDS = 5.0

T = TypeVar("T")


class StoreInfoCache:
    """The store's info, read once per engine rather than per search.

    It is read again while nothing is embedded (the first embedding run records the
    model), once it is ``ttl`` seconds old, and after :meth:`forget` (the engine
    switched models, or a search met vectors of other dimensions).

    Args:
        store: The store described.
        ttl: Seconds the info is trusted.
        clock: Monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        store: Lifecycle,
        *,
        ttl: float = INFO_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.ttl = ttl
        self.clock = clock
        self._info: StoreInfo | None = None
        self._read_at = 0.0

    def get(self) -> StoreInfo:
        """The store's info (read from the store only when due, see above)."""
        info, now = self._info, self.clock()
        if info is None or info.embedding_model is None or now - self._read_at >= self.ttl:
            info = self._info = self.store.info()
            self._read_at = now
        return info

    def forget(self) -> None:
        """Read the info again on the next search."""
        self._info = None


class ProjectCache(Generic[T]):
    """One cheap per-project read, trusted for ``ttl`` seconds, so a search pays for it
    at most once in that time.

    Args:
        read: The read, given the project.
        ttl: Seconds an answer is trusted.
        clock: Monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        read: Callable[[str], T],
        *,
        ttl: float = INFO_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.read = read
        self.ttl = ttl
        self.clock = clock
        self._seen: dict[str, tuple[T, float]] = {}

    def get(self, project: str) -> T:
        """The read's answer for ``project`` (read again only when due)."""
        now = self.clock()
        seen = self._seen.get(project)
        if seen is None or now - seen[1] >= self.ttl:
            seen = self._seen[project] = (self.read(project), now)
        return seen[0]


class DocumentsCache(ProjectCache[bool]):
    """Whether a project is a graph built from documents: it holds at least one chunk
    (one read of the project's first chunk, if any, per ``ttl``)."""

    def __init__(
        self,
        store: GraphReads,
        *,
        ttl: float = INFO_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            lambda project: bool(store.list_rows(project, "chunk", limit=1).items),
            ttl=ttl,
            clock=clock,
        )


class CoverageCache(ProjectCache[int]):
    """How many of a project's rows have no vector (pending, failed or dead): a search
    by meaning misses them, and says so (one indexed count per kind per ``ttl``)."""

    def __init__(
        self,
        store: EmbeddingQueue,
        *,
        ttl: float = INFO_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(store.not_embedded, ttl=ttl, clock=clock)


@dataclass(frozen=True)
class SearchSetup:
    """What the engine lends a search.

    Attributes:
        store: The store searched.
        project: The project searched.
        info: The engine's cached store info.
        embedder: Returns the engine's embedder (made on first use, so a search of a
            store with nothing embedded never loads a model).
        cross_encoder: For the ``cross_encoder`` reranker, if the engine has one.
        guard: Deadline and circuit breaker for an embedder that calls out of the
            process (one whose ``remote`` is true).
        cache: Query vectors already made (a repeated query skips the embedder).
        keywords_llm: Makes the chat model a ``keywords="llm"`` search asks for the
            query's keywords (the engine's: short deadline, response cache); None: no
            chat model, such searches use the query as it is and say so.
        documents: Tells whether the project holds chunks (a graph built from
            documents); None: treated as a graph without documents.
        coverage: Tells how many of the project's rows have no vector (a search
            warns of them); None: no such warning.
    """

    store: SearchStore
    project: str
    info: StoreInfoCache
    embedder: Callable[[], Embedder]
    cross_encoder: CrossEncoder | None = None
    guard: QueryGuard | None = None
    cache: QueryCache | None = None
    keywords_llm: Callable[[], LLM] | None = None
    documents: DocumentsCache | None = None
    coverage: CoverageCache | None = None

    @property
    def has_documents(self) -> bool:
        """Whether the project searched is a graph built from documents."""
        return self.documents is not None and self.documents.get(self.project)


def search_request(request: SearchRequest | str, options: Mapping[str, Any]) -> SearchRequest:
    """The request to run: ``request`` as it is, or with ``options`` as its fields.

    Raises:
        InvalidRequest: The fields do not make a valid request.
    """
    if isinstance(request, SearchRequest) and not options:
        return request
    if isinstance(request, SearchRequest):
        fields = {**request.model_dump(exclude_unset=True), **options}
    else:
        fields = {"query": request, **options}
    return validate_request(fields)


def search_context(setup: SearchSetup) -> SearchContext:
    """The pipeline's context: no query embedder while nothing is embedded.

    Raises:
        ConfigError: The engine's embedder is not the model the store was embedded with.
    """
    info = setup.info.get()
    embed_query: Callable[[str], Vector] | None
    embed_texts: Callable[[Sequence[str]], list[Vector]] | None = None
    embed_queries: Callable[[Sequence[str]], list[Vector]] | None = None
    if info.embedding_model is None:
        embed_query = None  # nothing embedded yet: vector legs have nothing to find
    else:
        embedder = setup.embedder()
        if info.embedding_model != embedder.model_id:
            raise ConfigError(
                f"the store was embedded with {info.embedding_model}, but the engine "
                f"uses {embedder.model_id}; pass the same model or re-embed with "
                "`kgsearch embed generate --model ... --force`"
            )
        embed_query = embedder.embed_query
        if setup.guard is not None and getattr(embedder, "remote", False):
            embed_query = Through(setup.guard.embed, (embedder.embed_query,))
        else:  # a local model embeds the multi-hop leg's relation texts in batches
            # (as queries, where it embeds queries its own way: bundled fast_queries)
            embed_texts = getattr(embedder, "embed_queries", None) or embedder.embed_documents
            # the question with its legs' texts in one call: only an embedder that embeds
            # queries as queries (documents may take another prefix)
            embed_queries = getattr(embedder, "embed_queries", None)
        if setup.cache is not None:
            embed_query = Through(setup.cache.embed, (embedder.model_id, embed_query))
            if embed_queries is not None:
                embed_queries = partial(setup.cache.embed_many, embedder.model_id, embed_queries)
    keywords = None if setup.keywords_llm is None else partial(extract_keywords, setup.keywords_llm)
    return SearchContext(
        setup.store,
        setup.project,
        embed_query,
        setup.cross_encoder,
        embed_texts,
        keywords,
        documents=setup.has_documents,
        embed_queries=embed_queries,
    )


@dataclass(frozen=True)
class Through:
    """``fn(*args, text)``: the query embedder seen through a guard or a cache.

    Unlike a ``functools.partial``, two made from the same parts are equal and hash
    alike, so what is cached per embedder (the relation-type vectors of the multi-hop
    and anchored legs, :func:`~kgsearch.search.paths.relation_vectors`) outlives the
    search that built the context: a fresh partial per search missed that cache every
    time and re-embedded every relation type on every search.
    """

    fn: Callable[..., Vector]
    args: tuple[Any, ...]

    def __call__(self, text: str) -> Vector:
        return self.fn(*self.args, text)


def search(
    setup: SearchSetup, request: SearchRequest | str, options: Mapping[str, Any]
) -> SearchResponse:
    """Run one unified search.

    Args:
        setup: What the engine lends the search.
        request: A request, or a query string.
        options: Request fields that override or complete ``request``.

    Returns:
        The search response.

    Raises:
        InvalidRequest: The request is malformed.
        ConfigError: The embedder does not match the store's vectors.
    """
    return _run(setup, search_request(request, options))


def explain(
    setup: SearchSetup, request: SearchRequest | str, options: Mapping[str, Any]
) -> Explain:
    """Run one search and show its work: each leg's hits, the fused order and the SQL
    each stage ran.

    Args:
        setup: What the engine lends the search.
        request: A request, or a query string.
        options: Request fields that override or complete ``request``.

    Returns:
        The explanation.
    """
    req = search_request(request, options).model_copy(update={"include_debug": True})
    traces = Traces()
    return explained(req, _run(setup, req, traces), traces)


def _run(
    setup: SearchSetup, request: SearchRequest, traces: Traces | None = None
) -> SearchResponse:
    """Run the search; after ``DimensionMismatch``, check the model against fresh info."""
    try:
        response = run_search(search_context(setup), request, traces)
    except DimensionMismatch:
        # another process may have switched the store to another model since the info
        # was read: say so (ConfigError) rather than only that the dimensions differ
        setup.info.forget()
        search_context(setup)
        raise
    if not response.results:
        _warn_unknown_project(setup, response)
    _warn_not_embedded(setup, response)
    return response


NOTHING_EMBEDDED = "nothing is embedded yet"
"""How the query-embedding step's warning starts when no row has a vector."""


def _warn_not_embedded(setup: SearchSetup, response: SearchResponse) -> None:
    """A project with rows waiting for a vector says how many: the vector legs cannot
    find them (unless nothing is embedded at all, which the search already says)."""
    if setup.coverage is None:
        return
    warnings = response.metadata["warnings"]
    if any(str(w).startswith(NOTHING_EMBEDDED) for w in warnings):
        return
    waiting = setup.coverage.get(setup.project)
    if waiting:
        warnings.append(
            f"{waiting:,} row{'s' if waiting != 1 else ''} of this project "
            f"{'have' if waiting != 1 else 'has'} no vector yet (pending, failed or dead): "
            "search by meaning misses them; `kgsearch embed status` shows why, "
            "`kgsearch embed generate` embeds them"
        )


def _warn_unknown_project(setup: SearchSetup, response: SearchResponse) -> None:
    """An empty answer from a project with no rows says so, and names the projects
    there are (a mistyped project is otherwise indistinguishable from no match)."""
    projects = setup.store.projects()
    if setup.project not in projects:
        there = ", ".join(sorted(projects)) or "none yet"
        response.metadata["warnings"].append(
            f"project {setup.project!r} has no rows; projects in this store: {there}"
        )


CONTEXT_RESULTS = 20
"""Results a context or an answer reads, at least, from a graph built from documents
when the caller sets no ``limit``: enough passages to fill the budget."""


def _documents_request(
    setup: SearchSetup, request: SearchRequest | str, options: Mapping[str, Any]
) -> tuple[SearchRequest, int | None]:
    """The request a context or an answer runs and, on a graph built from documents,
    the limit it keeps to (else None).

    On such a graph the limit counts passages and facts apart: the search is asked
    for twice the limit (at least :data:`CONTEXT_RESULTS`, which is also the limit
    when the caller sets none), and :func:`_evidence_results` keeps up to ``limit``
    passages and up to ``limit`` entities and relationships, so facts ranked above a
    passage never take its place; the packing shares the budget
    (:func:`~kgsearch.search.context.pack_evidence`)."""
    req = search_request(request, options)
    if not setup.has_documents:
        return req, None
    limit = req.limit
    if "limit" not in req.model_fields_set:
        limit = max(limit, CONTEXT_RESULTS)
    wide = min(max(2 * limit, CONTEXT_RESULTS), _MAX_LIMIT)
    if wide != req.limit:
        req = validate_request({**req.model_dump(exclude_unset=True), "limit": wide})
    return req, limit


_MAX_LIMIT = 100
"""The request's own bound on ``limit``."""


def _evidence_results(results: Sequence[SearchResult], limit: int) -> list[SearchResult]:
    """The first ``limit`` passages and the first ``limit`` other results (the
    search's order kept): the packing, not the ranking, shares the budget."""
    texts = [r for r in results if isinstance(r, TextResult)][:limit]
    others = [r for r in results if not isinstance(r, TextResult)][:limit]
    keep = {id(r) for r in (*texts, *others)}
    return [r for r in results if id(r) in keep]


def passages(setup: SearchSetup, response: SearchResponse) -> dict[str, Passage]:
    """The whole body, source title and section of each text result, by chunk id (two
    reads: the chunks and their sources; none without text results)."""
    texts = [r for r in response.results if isinstance(r, TextResult)]
    if not texts:
        return {}
    chunks = {c.id: c for c in setup.store.get_chunks(setup.project, [r.id for r in texts])}
    source_ids = sorted({c.source_id for c in chunks.values() if c.source_id})
    sources = {s.id: s for s in setup.store.get_sources(setup.project, source_ids)}
    found: dict[str, Passage] = {}
    for result in texts:
        chunk = chunks.get(result.id)
        if chunk is None:
            continue
        source = sources.get(chunk.source_id or "")
        section = getattr(result, "section", None) or chunk.metadata.get("section")
        found[result.id] = Passage(
            text=chunk.text,
            title=(source.title or source.uri) if source is not None else None,
            section=section if isinstance(section, str) and section else None,
        )
    return found


def context(
    setup: SearchSetup,
    request: SearchRequest | str,
    options: Mapping[str, Any],
    max_tokens: int,
    style: str = "lines",
) -> RagContext:
    """A search's hits as prompt lines within ``max_tokens`` of the embedder's tokens.

    On a graph built from documents the passages lead, each whole (see
    :func:`~kgsearch.search.context.pack_evidence`), with the entities and
    relationships beside them.

    Args:
        setup: What the engine lends the search.
        request: A request, or a query string.
        options: Request fields that override or complete ``request``.
        max_tokens: The budget, 1 to 100000.
        style: ``lines`` (one line per hit, best first) or ``sections`` (entities,
            relationships and sources, each item cited; ``citations`` maps them).

    Returns:
        The context lines, their token count, the number of results and the metadata.

    Raises:
        InvalidRequest: ``max_tokens`` is out of range, or the request is malformed.
    """
    if not 1 <= max_tokens <= 100_000:
        raise InvalidRequest("max_tokens must be between 1 and 100000")
    if style not in ("lines", "sections"):
        raise InvalidRequest(f"unknown context style {style!r}; use lines or sections")
    req, documents = _documents_request(setup, request, options)
    response = search(setup, req, {})
    if documents is not None:
        response = response.model_copy(
            update={"results": _evidence_results(response.results, documents)}
        )
    count = setup.embedder().count_tokens
    # community reports first: they answer the broad questions their scope is asked for
    reports, citations = format_reports(
        response.communities, max_tokens=max_tokens, count_tokens=count, cited=style == "sections"
    )
    budget = max_tokens - (count(reports + "\n\n") if reports else 0)
    text = ""
    if budget > 0 and documents is not None:
        text, cited = pack_evidence(
            response.results,
            passages(setup, response),
            max_tokens=budget,
            count_tokens=count,
            cited=style == "sections",
        )
        citations.update(cited)
    elif budget > 0 and style == "sections":
        text, cited = format_sections(response.results, max_tokens=budget, count_tokens=count)
        citations.update(cited)
    elif budget > 0:
        text = format_context(response.results, max_tokens=budget, count_tokens=count)
    text = "\n\n".join(part for part in (reports, text) if part)
    return RagContext(
        context=text,
        tokens=count(text) if text else 0,
        results=len(response.results),
        metadata=response.metadata,
        citations=citations,
    )


def ask(
    setup: SearchSetup,
    question: str,
    options: Mapping[str, Any],
    *,
    max_tokens: int,
    llm: LLM | None,
    on_text: Callable[[str], None] | None = None,
) -> Answer:
    """Answer a question from the graph: search, the cited context within
    ``max_tokens``, then the chat model's answer (or offline: on a graph built from
    documents the best sentences of the passages, each cited; else the top facts).

    Raises:
        InvalidRequest: The question is empty or the request is malformed.
        ProviderError: The chat model failed or timed out.
    """
    if not question.strip():
        raise InvalidRequest("the question is empty: ask something, e.g. who directed Jesse James")
    if not 1 <= max_tokens <= 100_000:
        raise InvalidRequest("max_tokens must be between 1 and 100000")
    count = setup.embedder().count_tokens
    wanted = search_request(question, options)
    if wanted.recipe in GLOBAL_RECIPES:  # map-reduce over the reports it selects
        broad = search(setup, wanted, {})
        if broad.communities:
            return answer_from_reports(
                setup.store, setup.project, question, broad, llm=llm,
                count_tokens=count, max_tokens=max_tokens, on_text=on_text,
            )  # fmt: skip
    req, documents = _documents_request(setup, question, options)
    response = search(setup, req, {})
    if documents is not None:
        response = response.model_copy(
            update={"results": _evidence_results(response.results, documents)}
        )
    if documents is None:
        text, citations = format_sections(
            response.results, max_tokens=max_tokens, count_tokens=count
        )
        refs = answering.references(response.results, citations)
        return answering.answer(
            question, text, refs, llm=llm, on_text=on_text, metadata=response.metadata
        )
    found = passages(setup, response)
    text, citations = pack_evidence(
        response.results, found, max_tokens=max_tokens, count_tokens=count
    )
    cited = [(c, id_) for c, id_ in citations.items() if c.startswith("S") and id_ in found]
    refs = answering.references(
        response.results, citations, {id_: found[id_].label for _, id_ in cited}
    )
    return answering.answer(
        question,
        text,
        refs,
        llm=llm,
        on_text=on_text,
        metadata=response.metadata,
        passages=[(c, found[id_].body) for c, id_ in cited],
        labels={c: found[id_].label for c, id_ in cited},
    )
