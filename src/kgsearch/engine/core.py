"""The engine's state and build: store, embedder, text rules, and the contexts each
section hands to the module that owns the work.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, Self, TypeVar, cast

from kgsearch.config import ExtractSettings, LLMSettings, Settings
from kgsearch.embed import create_embedder
from kgsearch.embed.base import Embedder
from kgsearch.embed.batching import MAX_BATCH, WINDOW_SECONDS, QueryBatcher, query_batch_of
from kgsearch.embed.guard import QueryGuard
from kgsearch.engine import providers
from kgsearch.engine.providers import ExtractorFactory
from kgsearch.errors import InvalidRequest
from kgsearch.extract.schema import Extractor
from kgsearch.lifecycle import embedding
from kgsearch.lifecycle.runner import RetryPolicy
from kgsearch.llm.base import LLM
from kgsearch.llm.cache import cache_scope
from kgsearch.llm.guard import llm_guard
from kgsearch.model import (
    DEFAULT_PROJECT,
    Kind,
)
from kgsearch.search import passage_graph, path_graph
from kgsearch.search.query_cache import QueryCache
from kgsearch.search.rerank import CrossEncoder
from kgsearch.search.service import CoverageCache, DocumentsCache, SearchSetup, StoreInfoCache
from kgsearch.store import connect
from kgsearch.store.base import Store
from kgsearch.text import EnrichmentConfig, load_enrichment_config
from kgsearch.writes.graph import WriteContext
from kgsearch.writes.rows import TextRules

__all__ = ["EngineCore"]


F = TypeVar("F", bound=Callable[..., Any])


def llm_scoped(method: F) -> F:
    """Run an engine method that may ask a chat model in its project's reply cache
    (:func:`~kgsearch.llm.cache.cache_scope`): a tenant never meets another's
    cached replies. The project is the method's ``project`` keyword, or the engine's."""

    @functools.wraps(method)
    def scoped(self: EngineCore, *args: Any, **kwargs: Any) -> Any:
        project = kwargs.get("project")
        with cache_scope(self._p(project if isinstance(project, str) else None)):
            return method(self, *args, **kwargs)

    return cast(F, scoped)


class EngineCore:
    """Graph storage, embedding lifecycle and search over one store.

    Args:
        store: An open store (see :func:`kgsearch.connect`).
        embedder: The embedding provider, or None to create one on first use.
        embedder_factory: Makes the embedder on first use (default: the bundled model).
        enrichment: Graph-aware text rules (default rules when None).
        graph_aware: Build graph-aware object text; None keeps the store's last choice.
        project: Default project for calls that pass none.
        embed_on_write: Embed rows right after each write commits (small scripts).
        retry: Failure policy of the embedding lifecycle.
        cross_encoder: Optional cross-encoder for the ``cross_encoder`` reranker.
        extractors: Makes the extractor for a name (``spacy``, ``llm``) and domain
            (default: from ``extract_settings``, the LLM provider from settings).
        extract_settings: Extraction defaults (extractor, domain, chunk size, quality).
        llm_settings: The chat model of the default ``llm`` extractor (and of the
            query keywords, ``keywords="llm"`` searches).
        query_guard: Deadline and breaker of a remote query embedder.
        keywords_llm: The chat model of query keywords instead of the configured one
            (still behind the keywords deadline and the store's response cache).
    """

    def __init__(
        self,
        store: Store,
        *,
        embedder: Embedder | None = None,
        embedder_factory: Callable[[], Embedder] | None = None,
        enrichment: EnrichmentConfig | None = None,
        graph_aware: bool | None = None,
        project: str = DEFAULT_PROJECT,
        embed_on_write: bool = False,
        retry: RetryPolicy | None = None,
        cross_encoder: CrossEncoder | None = None,
        extractors: ExtractorFactory | None = None,
        extract_settings: ExtractSettings | None = None,
        llm_settings: LLMSettings | None = None,
        query_guard: QueryGuard | None = None,
        keywords_llm: LLM | None = None,
    ) -> None:
        self.store = store
        self.query_guard = query_guard or QueryGuard()
        self.query_cache = QueryCache()
        self.extract_settings = extract_settings or ExtractSettings()
        self.llm_settings = llm_settings or LLMSettings()
        self.llm_guard = llm_guard(
            deadline=self.llm_settings.deadline_seconds,
            failures=self.llm_settings.breaker_failures,
            cooldown=self.llm_settings.breaker_cooldown_seconds,
            workers=2 * self.llm_settings.max_concurrency,
        )
        # a person waits for an answer: its own deadline, threads and breaker
        self.answer_guard = llm_guard(
            deadline=self.llm_settings.answer_deadline_seconds,
            failures=self.llm_settings.breaker_failures,
            cooldown=self.llm_settings.breaker_cooldown_seconds,
            workers=2 * self.llm_settings.max_concurrency,
        )
        # a search waits seconds, not minutes, for its keywords: a guard of its own
        self.keywords_guard = llm_guard(
            deadline=self.llm_settings.keywords_deadline_seconds,
            failures=self.llm_settings.breaker_failures,
            cooldown=self.llm_settings.breaker_cooldown_seconds,
            workers=4,
        )
        self._keywords_given = keywords_llm
        self._keywords_llm: LLM | None = None
        self._keywords_lock = threading.Lock()
        self._extractor_factory = extractors or providers.extractor_factory(
            self.extract_settings, self.llm_settings, store, self.llm_guard, lambda: self.embedder
        )
        self._extractors: dict[tuple[str, str], Extractor] = {}
        self._extractors_lock = threading.Lock()
        self.cross_encoder = cross_encoder
        self.project = project
        self.embed_on_write = embed_on_write
        self.retry = retry or RetryPolicy()
        self._embedder = embedder
        self._embedder_factory = embedder_factory
        self._embedder_lock = threading.Lock()
        self.enrichment = enrichment or EnrichmentConfig()
        if graph_aware is None:
            graph_aware = embedding.recorded_graph_aware(store)
        self.graph_aware = graph_aware
        self._rules: TextRules | None = None
        self._info = StoreInfoCache(store)
        self._documents = DocumentsCache(store)
        self._coverage = CoverageCache(store)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        project: str | None = None,
        store_url: str | None = None,
        model: str | None = None,
        model_threads: int | None = None,
    ) -> Self:
        """Build an engine from settings (the adapters' entry point). With
        ``settings.store.read_url`` the store reads from that replica (see
        :func:`kgsearch.store.connect`).

        Args:
            settings: Effective settings.
            project: Overrides ``settings.store.project``.
            store_url: Overrides ``settings.store.url``.
            model: Overrides ``settings.embed.model``.
            model_threads: CPU threads the bundled model runs on (onnxruntime's
                intra-op threads; default: one per CPU). ``serve --workers N`` gives
                each process its share of the CPUs. Other providers ignore it.
        """
        embed, spec = settings.embed, model or settings.embed.model
        key = embed.api_key.get_secret_value() if embed.api_key is not None else None
        options: dict[str, Any] = {
            k: v for k, v in (("base_url", embed.base_url), ("api_key", key)) if v
        }
        if spec.partition(":")[0] == "bundled":
            if model_threads is not None:
                options["threads"] = model_threads
            if embed.fast_queries is not None:  # None: the model's own default
                options["fast_queries"] = embed.fast_queries
        store = connect(store_url or settings.store.url, read_url=settings.store.read_url)
        return cls(
            store,
            extract_settings=settings.extract,
            llm_settings=settings.llm,
            embedder_factory=lambda: create_embedder(spec, **options),
            enrichment=load_enrichment_config(embed.enrichment_config),
            project=project or settings.store.project,
            retry=RetryPolicy(embed.max_attempts, embed.backoff_seconds),
            query_guard=QueryGuard(
                deadline=settings.search.query_deadline_seconds,
                failures=settings.search.breaker_failures,
                cooldown=settings.search.breaker_cooldown_seconds,
            ),
        )

    # build -----------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        """The embedder, created on first use."""
        if self._embedder is None:
            with self._embedder_lock:  # server threads must not load the model twice
                if self._embedder is None:
                    factory = self._embedder_factory or (lambda: create_embedder("bundled"))
                    self._embedder = factory()
        return self._embedder

    @property
    def query_embedding(self) -> str | None:
        """How the embedder embeds queries, where it says (the bundled model: through
        its query graph or its document model, and why; see
        :attr:`~kgsearch.embed.bundled.BundledEmbedder.queries`); None before the
        embedder is made or when it does not say. Never makes the embedder."""
        embedder = self._embedder
        said = getattr(getattr(embedder, "inner", embedder), "queries", None)
        return said if isinstance(said, str) else None

    def batch_queries(self, *, window: float = WINDOW_SECONDS, max_batch: int = MAX_BATCH) -> None:
        """Let concurrent searches share model calls for their query vectors
        (:class:`~kgsearch.embed.batching.QueryBatcher`): a server calls it once before
        serving. Embedders that cannot batch queries are left as they are.

        Args:
            window: Seconds a query waits for others while queries arrive together.
            max_batch: Queries in one model call at most.
        """

        def wrapped(embedder: Embedder) -> Embedder:
            if isinstance(embedder, QueryBatcher) or query_batch_of(embedder) is None:
                return embedder
            return QueryBatcher(embedder, window=window, max_batch=max_batch)

        with self._embedder_lock:
            if self._embedder is not None:
                self._embedder = wrapped(self._embedder)
            else:
                factory = self._embedder_factory or (lambda: create_embedder("bundled"))
                self._embedder_factory = lambda: wrapped(factory())

    def extractor(self, name: str | None = None, domain: str | None = None) -> Extractor:
        """The extractor for ``name`` and ``domain`` (settings' defaults when None),
        made once and kept.

        Raises:
            InvalidRequest: Unknown extractor name or domain.
            MissingCredentials: The LLM provider needs a key that is not set.
        """
        wanted = (
            name or self.extract_settings.extractor,
            domain or self.extract_settings.domain,
        )
        with self._extractors_lock:
            if wanted not in self._extractors:
                self._extractors[wanted] = self._extractor_factory(*wanted)
            return self._extractors[wanted]

    @property
    def rules(self) -> TextRules:
        """How embedding texts are built right now."""
        if self._rules is None:
            embedding.record_texts_of_new_store(self.store, self._texts_wanted())
            embedder = self.embedder
            self._rules = TextRules(
                self.enrichment, self.graph_aware, embedder.count_tokens, embedder.max_tokens
            )
        return self._rules

    def close(self) -> None:
        """Close the store."""
        self.query_guard.close()
        self.llm_guard.close()
        self.keywords_guard.close()
        self.answer_guard.close()
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _p(self, project: str | None) -> str:
        name = project or self.project
        if not name.strip() or len(name) > 200:
            raise InvalidRequest("project must be a non-blank name of at most 200 characters")
        return name

    def _text_rules(self) -> TextRules:
        return self.rules

    def _writes(self, project: str | None) -> WriteContext:
        name = self._p(project)
        after = functools.partial(self._written, name)
        return WriteContext(self.store, name, self._text_rules, after)

    def _written(self, project: str) -> None:
        """After a write of ``project`` commits: :meth:`_graph_changed`, and pending
        rows embedded when the engine embeds on write."""
        self._graph_changed(project)
        if self.embed_on_write:
            self._embed_after_write()

    def _graph_changed(self, project: str) -> None:
        """The graphs searches hold in memory for ``project`` are read again on the next
        search, so a write of this process shows at once (another process's within a
        few seconds: :data:`~kgsearch.search.path_graph.CHECK_SECONDS`)."""
        path_graph.forget(self.store, project)
        passage_graph.forget(self.store, project)

    def _embed_after_write(self) -> None:
        embedding.embed_pending(
            self._embedding(),
            kinds=tuple(Kind),
            project=None,
            batch_size=512,
            delay_ms=0,
            force=False,
            progress=None,
            limit=None,
        )

    def refresh_texts(self, *, force: bool = False) -> int:
        """Rebuild stored texts when the rules changed (config, mode, template version);
        rows whose text changes become pending. Returns how many changed."""
        wanted = self._texts_wanted()
        return embedding.refresh_texts(self.store, self._text_rules, wanted, force=force)

    def _texts_wanted(self) -> dict[str, Any]:
        return embedding.texts_fingerprint(self.enrichment, self.graph_aware)

    def _embedding(self) -> embedding.EmbeddingContext:
        """Texts brought up to date with the rules, then what a run needs."""
        self.refresh_texts()
        return embedding.EmbeddingContext(self.store, self.embedder, self.retry)

    def _searching(self, project: str | None) -> SearchSetup:
        return SearchSetup(
            self.store,
            self._p(project),
            self._info,
            lambda: self.embedder,
            self.cross_encoder,
            self.query_guard,
            self.query_cache,
            self._keywords_model,
            self._documents,
            self._coverage,
        )

    def _keywords_model(self) -> LLM:
        """The chat model of query keywords, made on the first search that asks.

        Raises:
            MissingCredentials: No key for the configured provider (the search falls
                back to the query as it is and says why).
        """
        with self._keywords_lock:
            if self._keywords_llm is None:
                self._keywords_llm = providers.keywords_llm(
                    self.llm_settings, self.store, self.keywords_guard, self._keywords_given
                )
            return self._keywords_llm
