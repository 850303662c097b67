"""The engine's search section, and API keys for the adapters."""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from typing import Any, Literal

from kgsearch import keys
from kgsearch.engine import providers
from kgsearch.engine.core import EngineCore, llm_scoped
from kgsearch.errors import InvalidRequest, MissingCredentials
from kgsearch.keys import ApiKey
from kgsearch.llm.base import LLM
from kgsearch.model import Kind
from kgsearch.search import service as searching
from kgsearch.search.answer import Answer
from kgsearch.search.request import Explain, RagContext, SearchRequest, SearchResponse

__all__ = ["SearchMethods"]

_WARM_QUERY = "warm-up"
# The kinds a default search reads (community reports only the global search does).
_SEARCHED = (Kind.OBJECT, Kind.RELATIONSHIP, Kind.CHUNK)


class SearchMethods(EngineCore):
    """Search, explain, RAG context and API keys (one call each)."""

    # search ------------------------------------------------------------------
    @llm_scoped
    def search(
        self, request: SearchRequest | str, *, project: str | None = None, **options: Any
    ) -> SearchResponse:
        """Unified hybrid search (vector + BM25 + graph legs, fused, reranked).

        Args:
            request: A :class:`SearchRequest`, or a query string with ``options`` as
                its fields (``limit=5, result_types="graph", type_hint="person"``).
            project: Overrides the engine's project.

        Raises:
            InvalidRequest: The request is malformed.
        """
        return searching.search(self._searching(project), request, options)

    @llm_scoped
    def explain(
        self, request: SearchRequest | str, *, project: str | None = None, **options: Any
    ) -> Explain:
        """Show a search's work: each leg's ranked hits and scores, the fused order and
        the SQL each stage ran (with its parameters)."""
        return searching.explain(self._searching(project), request, options)

    @llm_scoped
    def context(
        self,
        request: SearchRequest | str,
        *,
        max_tokens: int = 1000,
        project: str | None = None,
        style: Literal["lines", "sections"] = "lines",
        **options: Any,
    ) -> RagContext:
        """RAG context: the search's hits within ``max_tokens``, as prompt lines best
        first, or (``style="sections"``) as Entities, Relationships and Sources
        sections whose items carry citations (``citations`` maps them to row ids)."""
        return searching.context(self._searching(project), request, options, max_tokens, style)

    def warm(self, *, project: str | None = None, freeze: bool = True) -> None:
        """Load what a first search would wait for: the embedding model (its session
        opened by embedding one query) and the store's search state (vectors held in
        memory, caches), by running one search whose results are dropped; a store
        that reads such state in the background (SQLite: its held BM25 postings)
        reads it here first. On a graph built from documents a ``multi_hop`` search
        follows, which reads the project's passage and relation graphs (a first
        ``multi_hop`` search waited 0.1-0.9 s for them on 2Wiki). A server calls it at
        start so its first answers neither pay for them nor share the cores with
        their reads.

        With ``freeze`` (the default) the objects loaded so far are then left out of
        Python's cyclic garbage collector (:func:`gc.freeze`): they live as long as
        the process, and on MetaQA a full collection walking them (their lists of ids)
        took 41-44 ms of CPU, a stall of 52-61 ms in one search of 600; after the
        freeze one takes 0-2 ms. Objects freed by reference counting are freed as
        before; a frozen object that later becomes garbage in a reference cycle is not
        reclaimed.

        Raises:
            KgsearchError: The model could not be loaded, or the search failed (e.g.
                the store was embedded with another model).
        """
        self.embedder.embed_query(_WARM_QUERY)
        wait = getattr(self.store, "wait_for_index", None)
        if callable(wait):  # read here, so the search starts no background read
            for kind in _SEARCHED:  # no wait for an ANN index still building
                wait(self._p(project), kind, 0)
        self.search(_WARM_QUERY, project=project, limit=1)
        if self._searching(project).has_documents:
            self.search(_WARM_QUERY, project=project, limit=1, recipe="multi_hop")
        if freeze:
            gc.collect()
            gc.freeze()

    _chat: LLM | None = None

    @llm_scoped
    def ask(
        self,
        question: str,
        *,
        llm: LLM | bool = True,
        max_tokens: int = 1500,
        project: str | None = None,
        on_text: Callable[[str], None] | None = None,
        **options: Any,
    ) -> Answer:
        """Answer a question from the graph, citing what the answer rests on.

        Searches (``options`` are :class:`SearchRequest` fields: ``recipe``, ``limit``…),
        builds the cited context (Entities [E1], Relationships [R1], Sources [S1])
        within ``max_tokens`` and asks the configured chat model (``[llm]`` settings:
        the provider, timeouts, cache and record/replay of extraction), streaming its
        answer to ``on_text``. Each citation resolves to a row (``Answer.references``).

        Args:
            question: The question.
            llm: True for the configured chat model, an :class:`LLM` to use instead,
                or False to answer offline with the context's top facts.
            max_tokens: Budget of the context, in the embedder's tokens.
            project: Overrides the engine's project.
            on_text: Called with each piece of the answer as it is written.

        Raises:
            InvalidRequest: Empty question or malformed options.
            InvalidRequest: No chat model is configured (see the message).
            ProviderError: The chat model failed or timed out.
        """
        chat = self._chat_model() if llm is True else (llm or None)
        return searching.ask(
            self._searching(project),
            question,
            options,
            max_tokens=max_tokens,
            llm=chat,
            on_text=on_text,
        )

    def _chat_model(self) -> LLM:
        """The configured chat model, made once (behind the store's LLM cache)."""
        if self._chat is None:
            try:
                self._chat = providers.make_llm(self.llm_settings, self.store, self.answer_guard)
            except MissingCredentials as exc:  # the request's problem here: a 400
                raise InvalidRequest(
                    f"no chat model is configured for ask ({exc.message}). Set "
                    "KGSEARCH_LLM__MODEL and KGSEARCH_LLM__API_KEY (or [llm] in "
                    "kgsearch.toml; e.g. KGSEARCH_LLM__MODEL=ollama:llama3.1 for a local "
                    "Ollama), or answer offline with the context's top facts: "
                    "`kgsearch ask --no-llm`",
                    details=exc.details,
                ) from None
        return self._chat

    # keys (used by the REST/MCP adapters) --------------------------------------
    def create_api_key(
        self, project: str, scopes: str | Sequence[str], *, name: str | None = None
    ) -> tuple[str, ApiKey]:
        """Make an API key bound to ``project``; returns (the key, shown once; its record).

        Raises:
            InvalidRequest: Unknown scope or blank project.
        """
        return keys.create_api_key(self.store, self._p(project), scopes, name=name)

    def api_keys(self, *, project: str | None = None) -> list[ApiKey]:
        """API key records (never secrets) of one project, or of all when None."""
        return self.store.api_keys(project)

    def revoke_api_key(self, key_id: str) -> None:
        """Revoke a key at once; later requests with it get 401.

        Raises:
            NotFound: No active key has this id.
        """
        keys.revoke_api_key(self.store, key_id)

    def authenticate(self, key: str) -> ApiKey:
        """The active key record matching a presented key.

        Raises:
            Unauthorized: Malformed, unknown or revoked key.
        """
        return keys.authenticate(self.store, key)
