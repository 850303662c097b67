"""The Engine: the one facade every adapter (CLI, REST, MCP) and library user calls.

It composes a store, a lazily created embedder and the text rules, and each method
makes one call into the module that owns the work: ``writes``, ``reads``,
``lifecycle`` (texts and embedding), ``search``, ``io`` and ``keys``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from kgsearch import keys, reads
from kgsearch.config import Settings
from kgsearch.embed import create_embedder
from kgsearch.embed.base import Embedder
from kgsearch.errors import InvalidRequest
from kgsearch.io.exporter import export
from kgsearch.io.importer import ImportProgress, import_files
from kgsearch.keys import ApiKey
from kgsearch.lifecycle import embedding
from kgsearch.lifecycle.embedding import Progress
from kgsearch.lifecycle.runner import RetryPolicy
from kgsearch.model import (
    DEFAULT_PROJECT,
    Chunk,
    ChunkIn,
    EmbeddingStatusReport,
    EmbeddingTodo,
    EmbedReport,
    Filters,
    GraphObject,
    Kind,
    Mentioned,
    MentionIn,
    Neighborhood,
    ObjectIn,
    Page,
    Preview,
    Relationship,
    RelationshipIn,
    Source,
    SourceIn,
    SourceMentions,
    Stats,
    TextAdded,
)
from kgsearch.search import service as searching
from kgsearch.search.lookups import mentioned_by, neighborhood, sources_mentioning
from kgsearch.search.request import Explain, RagContext, SearchRequest, SearchResponse
from kgsearch.search.rerank import CrossEncoder
from kgsearch.search.service import SearchSetup, StoreInfoCache
from kgsearch.store import connect
from kgsearch.store.base import Neighbor, Store
from kgsearch.text import EnrichmentConfig, load_enrichment_config
from kgsearch.writes import graph as graph_writes
from kgsearch.writes import text as text_writes
from kgsearch.writes.graph import WriteContext
from kgsearch.writes.rows import TextRules

__all__ = ["Engine"]


class Engine:
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
    ) -> None:
        self.store = store
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

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        project: str | None = None,
        store_url: str | None = None,
        model: str | None = None,
    ) -> Engine:
        """Build an engine from settings (the adapters' entry point).

        Args:
            settings: Effective settings.
            project: Overrides ``settings.store.project``.
            store_url: Overrides ``settings.store.url``.
            model: Overrides ``settings.embed.model``.
        """
        embed, spec = settings.embed, model or settings.embed.model
        key = embed.api_key.get_secret_value() if embed.api_key is not None else None
        options = {k: v for k, v in (("base_url", embed.base_url), ("api_key", key)) if v}
        return cls(
            connect(store_url or settings.store.url),
            embedder_factory=lambda: create_embedder(spec, **options),
            enrichment=load_enrichment_config(embed.enrichment_config),
            project=project or settings.store.project,
            retry=RetryPolicy(embed.max_attempts, embed.backoff_seconds),
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
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _p(self, project: str | None) -> str:
        name = project or self.project
        if not name.strip() or len(name) > 200:
            raise InvalidRequest("project must be a non-blank name of at most 200 characters")
        return name

    # writes ----------------------------------------------------------------
    def add_objects(
        self, objects: Sequence[ObjectIn], *, project: str | None = None
    ) -> list[GraphObject]:
        """Create or update objects (by type + key); they are committed as ``pending``.

        When an object's display name changes, its relationships' triplet texts are
        rebuilt too, so they become pending instead of silently stale.
        """
        return graph_writes.add_objects(self._writes(project), objects)

    def add_relationships(
        self, relationships: Sequence[RelationshipIn], *, project: str | None = None
    ) -> list[Relationship]:
        """Create or update relationships; endpoints are ids or ``{type, key}`` refs.

        Raises:
            NotFound: An endpoint is not a live object of the project.
        """
        return graph_writes.add_relationships(self._writes(project), relationships)

    def add_sources(
        self, sources: Sequence[SourceIn], *, project: str | None = None
    ) -> list[Source]:
        """Create or update sources (documents, episodes)."""
        return text_writes.add_sources(self._writes(project), sources)

    def add_chunks(self, chunks: Sequence[ChunkIn], *, project: str | None = None) -> list[Chunk]:
        """Create or update text chunks (embedded as their text, titled by their source)."""
        return text_writes.add_chunks(self._writes(project), chunks)

    def add_mentions(self, mentions: Sequence[MentionIn], *, project: str | None = None) -> int:
        """Link sources/chunks to the objects and relationships they mention."""
        return graph_writes.add_mentions(self._writes(project), mentions)

    def add_text(
        self,
        text: str,
        *,
        source_id: str | None = None,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        max_chars: int = 1000,
        project: str | None = None,
    ) -> TextAdded:
        """Store free text as chunks of at most ``max_chars`` (split at paragraphs, then
        sentences, then words) under one source. Ids are derived from the content, so
        adding the same text again updates instead of duplicating.

        Raises:
            InvalidRequest: Blank text or ``max_chars`` outside 100..100000.
        """
        return text_writes.add_text(
            self._writes(project),
            text,
            source_id=source_id,
            title=title,
            metadata=metadata,
            max_chars=max_chars,
        )

    def update_object(
        self, id: str, changes: Mapping[str, Any], *, project: str | None = None
    ) -> GraphObject:
        """Patch an object: ``tags``/``labels`` are replaced, ``properties`` are merged
        (JSON merge patch: a None value removes the property). Type and key are fixed.

        Raises:
            NotFound: No live object has this id.
            InvalidRequest: An unknown or invalid field.
        """
        return graph_writes.update_object(self._writes(project), id, changes)

    def update_relationship(
        self, id: str, changes: Mapping[str, Any], *, project: str | None = None
    ) -> Relationship:
        """Patch a relationship; ``properties`` are merged, other fields replaced.
        Type and endpoints are fixed (they define the relationship).

        Raises:
            NotFound: No live relationship has this id.
            InvalidRequest: An unknown or invalid field.
        """
        return graph_writes.update_relationship(self._writes(project), id, changes)

    def delete(
        self,
        kind: Literal["object", "relationship", "chunk", "source"],
        ids: Sequence[str],
        *,
        project: str | None = None,
    ) -> int:
        """Soft-delete rows (an object takes its relationships); every read hides them."""
        return graph_writes.delete(self._writes(project), kind, ids)

    def purge(self, *, project: str | None = None) -> int:
        """Remove soft-deleted rows for good."""
        return graph_writes.purge(self._writes(project))

    def _text_rules(self) -> TextRules:
        return self.rules

    def _writes(self, project: str | None) -> WriteContext:
        after = self.embed_pending if self.embed_on_write else None
        return WriteContext(self.store, self._p(project), self._text_rules, after)

    # reads -------------------------------------------------------------------
    def get_object(self, id: str, *, project: str | None = None) -> GraphObject:
        """One live object by id (NotFound when the project has none)."""
        return reads.get_object(self.store, self._p(project), id)

    def get_object_by_key(self, type_: str, key: str, *, project: str | None = None) -> GraphObject:
        """One live object by type and key."""
        return reads.get_object_by_key(self.store, self._p(project), type_, key)

    def get_relationship(self, id: str, *, project: str | None = None) -> Relationship:
        """One live relationship by id."""
        return reads.get_relationship(self.store, self._p(project), id)

    def get_chunk(self, id: str, *, project: str | None = None) -> Chunk:
        """One live chunk by id (NotFound when the project has none)."""
        return reads.get_chunk(self.store, self._p(project), id)

    def get_source(self, id: str, *, project: str | None = None) -> Source:
        """One live source by id (NotFound when the project has none)."""
        return reads.get_source(self.store, self._p(project), id)

    def list_rows(
        self,
        kind: Literal["object", "relationship", "chunk", "source"],
        *,
        project: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        filters: Filters | None = None,
    ) -> Page:
        """One page of live rows; pass ``next_cursor`` back for the next page."""
        return self.store.list_rows(
            self._p(project), kind, limit=limit, cursor=cursor, filters=filters
        )

    def neighbors(
        self,
        ids: Sequence[str],
        *,
        project: str | None = None,
        depth: int = 1,
        direction: Literal["out", "in", "both"] = "both",
        relationship_types: Sequence[str] | None = None,
    ) -> list[Neighbor]:
        """Objects within ``depth`` hops of ``ids``."""
        p, types = self._p(project), relationship_types
        return self.store.neighbors(
            p, ids, depth=depth, direction=direction, relationship_types=types
        )

    def stats(self, *, project: str | None = None) -> Stats:
        """Row counts of a project and the store's metadata."""
        return reads.stats(self.store, self._p(project))

    # texts and embedding -----------------------------------------------------
    def preview(self, id: str, *, project: str | None = None) -> Preview:
        """The text that would be embedded for a row (object, relationship or chunk)."""
        return embedding.preview(self.store, self._text_rules, self._p(project), id)

    def refresh_texts(self, *, force: bool = False) -> int:
        """Rebuild stored texts when the rules changed (config, mode, template version);
        rows whose text changes become pending. Returns how many changed."""
        wanted = self._texts_wanted()
        return embedding.refresh_texts(self.store, self._text_rules, wanted, force=force)

    def embed_pending(
        self,
        *,
        kinds: Sequence[Kind] = tuple(Kind),
        project: str | None = None,
        batch_size: int = 512,
        delay_ms: int = 0,
        force: bool = False,
        progress: Progress | None = None,
        limit: int | None = None,
    ) -> EmbedReport:
        """Embed every due row (pending, or failed past its backoff).

        Args:
            kinds: Row kinds to embed.
            project: One project, or None for all.
            batch_size: Rows claimed and embedded per round.
            delay_ms: Pause between batches.
            force: Re-embed every row, even ones already embedded.
            progress: Called with (kind, rows) after each batch.
            limit: Stop after about this many rows.
        """
        embedding.check_batch_size(batch_size)
        return embedding.embed_pending(
            self._embedding(),
            kinds=kinds,
            project=project,
            batch_size=batch_size,
            delay_ms=delay_ms,
            force=force,
            progress=progress,
            limit=limit,
        )

    def embed_step(
        self,
        *,
        project: str | None = None,
        kinds: Sequence[Kind] = tuple(Kind),
        batch_size: int = 64,
    ) -> EmbedReport:
        """Embed at most one batch of due rows per kind and return at once.

        Unlike :meth:`embed_pending` it never sleeps waiting for a failed row's
        backoff, so a server's background loop can stop between steps.

        Raises:
            InvalidRequest: ``batch_size`` outside 1..10000.
            DimensionMismatch: The embedder does not match the stored vectors.
        """
        embedding.check_batch_size(batch_size)
        return embedding.embed_step(
            self._embedding(), project=project, kinds=kinds, batch_size=batch_size
        )

    def embed_worker(
        self,
        *,
        kinds: Sequence[Kind] = tuple(Kind),
        project: str | None = None,
        batch_size: int = 512,
        poll_seconds: float = 5.0,
        until_idle: bool = False,
        should_stop: Callable[[], bool] = lambda: False,
        on_batch: Callable[[EmbedReport], None] | None = None,
    ) -> EmbedReport:
        """Run a long-lived embedding worker, one batch at a time, until stopped.

        Any number of workers may share a store: claims are atomic, and rows claimed
        by a worker that died are claimable again once its lease ends.

        Args:
            kinds: Row kinds to embed.
            project: One project, or None for all.
            batch_size: Rows claimed and embedded per batch.
            poll_seconds: Sleep this long when nothing is due, or after a store error.
            until_idle: Return once nothing is due; a store error is raised.
            should_stop: Return True to end the loop after the current batch.
            on_batch: Called with the running totals after each batch.

        Raises:
            StoreError: Only with ``until_idle``.
        """
        return embedding.run_embedding_worker(
            self._embedding(),
            kinds=kinds,
            project=project,
            batch_size=batch_size,
            poll_seconds=poll_seconds,
            until_idle=until_idle,
            should_stop=should_stop,
            on_batch=on_batch,
        )

    def switch_model(self, embedder: Embedder) -> None:
        """Explicitly migrate to another embedding model: every vector is re-made."""
        self.store.set_embedding_model(embedder.model_id, embedder.dims, replace=True)
        self._embedder = embedder
        self._rules = None
        self._info.forget()

    def set_graph_aware(self, graph_aware: bool) -> None:
        """Switch between graph-aware and plain object text (rows re-embed as needed)."""
        self.graph_aware = graph_aware
        self._rules = None

    def retry_failed(self, *, dead: bool = False, project: str | None = None) -> int:
        """Re-queue failed rows now (and dead ones with ``dead=True``)."""
        return embedding.retry_failed(self.store, project, dead=dead)

    def embedding_status(self, *, project: str | None = None) -> EmbeddingStatusReport:
        """Counts by status per project and kind, percent embedded, stale, failure rate."""
        return embedding.status_report(self.store, project)

    def embedding_todo(
        self, *, project: str | None = None, kinds: Sequence[Kind] = tuple(Kind)
    ) -> EmbeddingTodo:
        """Rows due for embedding (pending or failed) per kind, of one project or all."""
        return embedding.embedding_todo(self.store, project, kinds)

    def _texts_wanted(self) -> dict[str, Any]:
        return embedding.texts_fingerprint(self.enrichment, self.graph_aware)

    def _embedding(self) -> embedding.EmbeddingContext:
        """Texts brought up to date with the rules, then what a run needs."""
        self.refresh_texts()
        return embedding.EmbeddingContext(self.store, self.embedder, self.retry)

    # search ------------------------------------------------------------------
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

    def explain(
        self, request: SearchRequest | str, *, project: str | None = None, **options: Any
    ) -> Explain:
        """Show a search's work: each leg's ranked hits and scores, the fused order and
        the SQL each stage ran (with its parameters)."""
        return searching.explain(self._searching(project), request, options)

    def context(
        self,
        request: SearchRequest | str,
        *,
        max_tokens: int = 1000,
        project: str | None = None,
        **options: Any,
    ) -> RagContext:
        """RAG context: the search's hits as prompt lines within ``max_tokens``."""
        return searching.context(self._searching(project), request, options, max_tokens)

    def _searching(self, project: str | None) -> SearchSetup:
        return SearchSetup(
            self.store, self._p(project), self._info, lambda: self.embedder, self.cross_encoder
        )

    # lookups (seed 002) ------------------------------------------------------
    def mentioned_by(
        self,
        *,
        source_ids: Sequence[str] = (),
        chunk_ids: Sequence[str] = (),
        project: str | None = None,
    ) -> Mentioned:
        """What the given live sources/chunks mention: objects and relationships."""
        return mentioned_by(self.store, self._p(project), source_ids, chunk_ids)

    def sources_mentioning(
        self,
        *,
        object_ids: Sequence[str] = (),
        relationship_ids: Sequence[str] = (),
        project: str | None = None,
    ) -> list[SourceMentions]:
        """Sources that mention the given objects/relationships, most mentions first
        (citations)."""
        return sources_mentioning(self.store, self._p(project), object_ids, relationship_ids)

    def neighborhood(
        self,
        id: str,
        *,
        project: str | None = None,
        depth: int = 1,
        direction: Literal["out", "in", "both"] = "both",
        relationship_types: Sequence[str] | None = None,
    ) -> Neighborhood:
        """An object's neighbours within ``depth`` hops: each with its hop count, the
        relationship that reached it and the object itself.

        Raises:
            NotFound: No live object has this id.
        """
        return neighborhood(self.store, self._p(project), id, depth, direction, relationship_types)

    # import / export ---------------------------------------------------------
    def import_files(
        self,
        paths: Sequence[Path],
        *,
        project: str | None = None,
        progress: ImportProgress | None = None,
    ) -> dict[str, int]:
        """Import JSONL, JSON graph or CSV files atomically (see :mod:`kgsearch.io`)."""
        return import_files(
            self.store, self.rules, paths, project=self._p(project), progress=progress
        )

    def export(
        self, path: Path, *, project: str | None = None, fmt: Literal["jsonl", "json"] = "jsonl"
    ) -> dict[str, int]:
        """Write a project to a JSONL or JSON graph file that imports back identically."""
        return export(self.store, path, project=self._p(project), fmt=fmt)

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
