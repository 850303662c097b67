"""The engine's search methods: search, explain and RAG context over a :class:`SearchSetup`.

The engine lends each call its store, the project, its cached store info, its embedder
(made on first use) and its cross-encoder. Here the store info decides whether there is
a query embedder at all (nothing embedded yet: the vector legs are skipped) and checks
that it is the model the vectors were made with; then the request, a
:class:`~kgsearch.search.request.SearchRequest` or a query string with options, runs
through :func:`~kgsearch.search.pipeline.run_search`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kgsearch.embed.base import Embedder, Vector
from kgsearch.errors import ConfigError, InvalidRequest
from kgsearch.search.context import format_context
from kgsearch.search.pipeline import SearchContext, run_search
from kgsearch.search.request import (
    Explain,
    RagContext,
    SearchRequest,
    SearchResponse,
    validate_request,
)
from kgsearch.search.rerank import CrossEncoder
from kgsearch.search.response import explain as explained
from kgsearch.search.statements import Traces
from kgsearch.store.base import Lifecycle, Store, StoreInfo

__all__ = ["SearchSetup", "StoreInfoCache", "context", "explain", "search", "search_request"]


class StoreInfoCache:
    """The store's info, read once per engine rather than per search.

    It is read again while nothing is embedded (the first embedding run records the
    model) and after :meth:`forget` (the engine switched models).

    Args:
        store: The store described.
    """

    def __init__(self, store: Lifecycle) -> None:
        self.store = store
        self._info: StoreInfo | None = None

    def get(self) -> StoreInfo:
        """The store's info (read from the store only when needed, see above)."""
        info = self._info
        if info is None or info.embedding_model is None:
            info = self._info = self.store.info()
        return info

    def forget(self) -> None:
        """Read the info again on the next search."""
        self._info = None


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
    """

    store: Store
    project: str
    info: StoreInfoCache
    embedder: Callable[[], Embedder]
    cross_encoder: CrossEncoder | None = None


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
    return SearchContext(setup.store, setup.project, embed_query, setup.cross_encoder)


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
    return run_search(search_context(setup), search_request(request, options))


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
    return explained(req, run_search(search_context(setup), req, traces), traces)


def context(
    setup: SearchSetup, request: SearchRequest | str, options: Mapping[str, Any], max_tokens: int
) -> RagContext:
    """A search's hits as prompt lines within ``max_tokens`` of the embedder's tokens.

    Args:
        setup: What the engine lends the search.
        request: A request, or a query string.
        options: Request fields that override or complete ``request``.
        max_tokens: The budget, 1 to 100000.

    Returns:
        The context lines, their token count, the number of results and the metadata.

    Raises:
        InvalidRequest: ``max_tokens`` is out of range, or the request is malformed.
    """
    if not 1 <= max_tokens <= 100_000:
        raise InvalidRequest("max_tokens must be between 1 and 100000")
    response = search(setup, request, options)
    count = setup.embedder().count_tokens
    text = format_context(response.results, max_tokens=max_tokens, count_tokens=count)
    return RagContext(
        context=text,
        tokens=count(text) if text else 0,
        results=len(response.results),
        metadata=response.metadata,
    )
