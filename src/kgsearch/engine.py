"""The Engine: the one facade every adapter (CLI, REST, MCP) and library user calls.

It composes a store, an embedder (created lazily, so graph work never loads a model)
and the text rules; writes commit rows as ``pending`` and never wait for the
embedder; embedding runs outside any write transaction.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from kgsearch.config import Settings
from kgsearch.embed import create_embedder
from kgsearch.embed.base import Embedder, Vector
from kgsearch.errors import ConfigError, InvalidRequest, NotFound
from kgsearch.io.exporter import export
from kgsearch.io.importer import ImportProgress, import_files
from kgsearch.jobs import EmbedReport, Progress, RetryPolicy, run_embedding, status_report
from kgsearch.keys import ApiKey, Unauthorized, generate_key, parse_key, parse_scopes, verify_secret
from kgsearch.model import (
    DEFAULT_PROJECT,
    Chunk,
    ChunkIn,
    Filters,
    GraphObject,
    Kind,
    Mention,
    MentionIn,
    ObjectIn,
    ObjectRef,
    Page,
    Relationship,
    RelationshipIn,
    Source,
    SourceIn,
    display_name,
)
from kgsearch.patching import (
    check_object_changes,
    check_relationship_changes,
    patched_object,
    patched_relationship,
)
from kgsearch.search.context import format_context
from kgsearch.search.lookups import mentioned_by, neighborhood, sources_mentioning
from kgsearch.search.pipeline import SearchContext, run_search
from kgsearch.search.request import SearchRequest, SearchResponse, validate_request
from kgsearch.search.rerank import CrossEncoder
from kgsearch.search.response import explain
from kgsearch.store import connect
from kgsearch.store.base import Neighbor, Store, StoreInfo, TextUpdate
from kgsearch.text import (
    TEXT_VERSION,
    EnrichmentConfig,
    config_fingerprint,
    load_enrichment_config,
    text_hash,
)
from kgsearch.text.chunking import content_digest, split_text
from kgsearch.writes import (
    TextRules,
    refresh_relationship_texts,
    require_endpoints,
    resolve_endpoints,
)

__all__ = ["Engine"]

_TEXTS_META = "texts"


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
        stored = self._texts_meta()
        if graph_aware is None:
            graph_aware = bool(stored.get("graph_aware", True))
        self.graph_aware = graph_aware
        self._rules: TextRules | None = None
        self._store_info: StoreInfo | None = None  # read on first search, see _info()

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
        embed = settings.embed
        spec = model or embed.model
        options: dict[str, Any] = {}
        if embed.base_url:
            options["base_url"] = embed.base_url
        if embed.api_key is not None:
            options["api_key"] = embed.api_key.get_secret_value()
        return cls(
            connect(store_url or settings.store.url),
            embedder_factory=lambda: create_embedder(spec, **options),
            enrichment=load_enrichment_config(embed.enrichment_config),
            project=project or settings.store.project,
            retry=RetryPolicy(
                max_attempts=embed.max_attempts, backoff_seconds=embed.backoff_seconds
            ),
        )

    # providers -------------------------------------------------------------
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
            if not self._texts_meta() and not self.store.projects():
                # A new store: its rows will all be written with these rules, so no
                # later `embed generate` needs to rebuild their texts.
                self.store.set_meta(_TEXTS_META, json.dumps(self._texts_wanted(), sort_keys=True))
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
        p = self._p(project)
        rules = self.rules
        rows = [rules.object_row(p, o) for o in objects]
        with self.store.transaction():
            before = self.store.resolve(p, [ObjectRef(type=o.type, key=o.key) for o in objects])
            ids = self.store.upsert_objects(p, rows)
            renamed = [
                e.id
                for ref, e in before.items()
                if display_name(e.properties, e.key, e.id)
                != display_name(_props_for(objects, ref), ref.key, e.id)
            ]
            if renamed:
                self._refresh_relationships(p, renamed)
        self._after_write()
        return self.store.get_objects(p, ids)

    def add_relationships(
        self, relationships: Sequence[RelationshipIn], *, project: str | None = None
    ) -> list[Relationship]:
        """Create or update relationships; endpoints are ids or ``{type, key}`` refs.

        Raises:
            NotFound: An endpoint is not a live object of the project.
        """
        p = self._p(project)
        with self.store.transaction():
            found = require_endpoints(self.store, p, relationships)
            rows = [
                self.rules.relationship_row(p, r, found[r.source], found[r.target])
                for r in relationships
            ]
            ids = self.store.upsert_relationships(p, rows)
        self._after_write()
        return self.store.get_relationships(p, ids)

    def add_sources(
        self, sources: Sequence[SourceIn], *, project: str | None = None
    ) -> list[Source]:
        """Create or update sources (documents, episodes)."""
        p = self._p(project)
        now = _now()
        self.store.upsert_sources(
            p,
            [
                Source(
                    id=s.id,
                    project=p,
                    title=s.title,
                    uri=s.uri,
                    metadata=s.metadata,
                    created_at=now,
                )
                for s in sources
            ],
        )
        return self.store.get_sources(p, [s.id for s in sources])

    def add_chunks(self, chunks: Sequence[ChunkIn], *, project: str | None = None) -> list[Chunk]:
        """Create or update text chunks (embedded as their text, titled by their source)."""
        p = self._p(project)
        titles = {
            s.id: s.title
            for s in self.store.get_sources(p, [c.source_id for c in chunks if c.source_id])
        }
        now = _now()
        rows = []
        for c in chunks:
            text, digest = TextRules.chunk_text(c, titles.get(c.source_id or ""))
            chunk = Chunk(
                id=c.id,
                project=p,
                text=c.text,
                source_id=c.source_id,
                position=c.position,
                metadata=c.metadata,
                created_at=now,
                updated_at=now,
            )
            rows.append((chunk, text, digest, TEXT_VERSION))
        self.store.upsert_chunks(p, rows)
        self._after_write()
        return self.store.get_chunks(p, [c.id for c in chunks])

    def add_mentions(self, mentions: Sequence[MentionIn], *, project: str | None = None) -> int:
        """Link sources/chunks to the objects and relationships they mention."""
        p = self._p(project)
        refs = [m.object for m in mentions if m.object is not None]
        found, missing = resolve_endpoints(self.store, p, refs)
        if missing:
            raise NotFound(f"mentioned object(s) not found: {missing[:10]}")
        rows = []
        for m in mentions:
            if not (m.source_id or m.chunk_id):
                raise InvalidRequest("a mention needs source_id or chunk_id")
            if m.object is None and m.relationship_id is None:
                raise InvalidRequest("a mention needs an object or a relationship_id")
            rows.append(
                Mention(
                    project=p,
                    source_id=m.source_id,
                    chunk_id=m.chunk_id,
                    object_id=found[m.object].id if m.object is not None else None,
                    relationship_id=m.relationship_id,
                )
            )
        self.store.add_mentions(p, rows)
        return len(rows)

    def delete(
        self,
        kind: Literal["object", "relationship", "chunk", "source"],
        ids: Sequence[str],
        *,
        project: str | None = None,
    ) -> int:
        """Soft-delete rows (an object takes its relationships); every read hides them."""
        return self.store.delete(self._p(project), kind, ids)

    def purge(self, *, project: str | None = None) -> int:
        """Remove soft-deleted rows for good."""
        return self.store.purge(self._p(project))

    def _after_write(self) -> None:
        if self.embed_on_write:
            self.embed_pending()

    # reads -------------------------------------------------------------------
    def get_object(self, id: str, *, project: str | None = None) -> GraphObject:
        """One live object by id.

        Raises:
            NotFound: No live object has this id in the project.
        """
        found = self.store.get_objects(self._p(project), [id])
        if not found:
            raise NotFound(f"object {id!r} not found in project {self._p(project)!r}")
        return found[0]

    def get_object_by_key(self, type_: str, key: str, *, project: str | None = None) -> GraphObject:
        """One live object by type and key."""
        p = self._p(project)
        endpoint = self.store.resolve(p, [ObjectRef(type=type_, key=key)]).get(
            ObjectRef(type=type_, key=key)
        )
        if endpoint is None:
            raise NotFound(f"object {type_}/{key} not found in project {p!r}")
        return self.get_object(endpoint.id, project=p)

    def get_relationship(self, id: str, *, project: str | None = None) -> Relationship:
        """One live relationship by id."""
        found = self.store.get_relationships(self._p(project), [id])
        if not found:
            raise NotFound(f"relationship {id!r} not found in project {self._p(project)!r}")
        return found[0]

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
        return self.store.neighbors(
            self._p(project),
            ids,
            depth=depth,
            direction=direction,
            relationship_types=relationship_types,
        )

    def stats(self, *, project: str | None = None) -> dict[str, Any]:
        """Row counts of a project and the store's metadata."""
        p = self._p(project)
        info = self.store.info()
        return {
            "project": p,
            "counts": self.store.counts(p),
            "store": info.url,
            "schema_version": info.schema_version,
            "embedding_model": info.embedding_model,
            "dims": info.dims,
            "projects": self.store.projects(),
        }

    # texts and embedding -----------------------------------------------------
    def preview(self, id: str, *, project: str | None = None) -> dict[str, Any]:
        """The text that would be embedded for a row (object, relationship or chunk)."""
        p = self._p(project)
        objects = self.store.get_objects(p, [id])
        if objects:
            o = objects[0]
            text = self.rules.object_text(o.type, o.key, dict(o.properties), o.tags)
            return {
                "kind": "object",
                "id": id,
                "text": text,
                "graph_aware": self.graph_aware,
                "status": o.embedding.status.value,
            }
        rels = self.store.get_relationships(p, [id])
        if rels:
            r = rels[0]
            ends = self.store.endpoints(p, [r.source_id, r.target_id])
            text = TextRules.relationship_text(
                r.type, ends[r.source_id], ends[r.target_id], r.label, r.description
            )
            return {
                "kind": "relationship",
                "id": id,
                "text": text,
                "status": r.embedding.status.value,
            }
        chunks = self.store.get_chunks(p, [id])
        if chunks:
            return {
                "kind": "chunk",
                "id": id,
                "text": chunks[0].embedding.text,
                "status": chunks[0].embedding.status.value,
            }
        raise NotFound(f"no object, relationship or chunk {id!r} in project {p!r}")

    def _texts_meta(self) -> dict[str, Any]:
        raw = self.store.get_meta(_TEXTS_META)
        return dict(json.loads(raw)) if raw else {}

    def _texts_wanted(self) -> dict[str, Any]:
        return {
            "graph_aware": self.graph_aware,
            "version": TEXT_VERSION,
            "enrichment": config_fingerprint(self.enrichment),
        }

    def refresh_texts(self, *, force: bool = False) -> int:
        """Rebuild stored texts when the rules changed (config, mode, template version).

        Rows whose text changes become pending; unchanged rows are untouched.
        Returns the number of rows whose text changed.
        """
        wanted = self._texts_wanted()
        if not force and self._texts_meta() == wanted:
            return 0
        changed = 0
        for project in self.store.projects():
            for batch in self.store.iter_text_rows(project, Kind.OBJECT):
                updates = []
                for o in batch:
                    text = self.rules.object_text(o.type, o.key, dict(o.properties), o.tags)
                    updates.append(TextUpdate(o.id, text, text_hash(text), TEXT_VERSION))
                changed += self.store.set_texts(project, Kind.OBJECT, updates)
            changed += self._refresh_all_relationships(project)
        self.store.set_meta(_TEXTS_META, json.dumps(wanted, sort_keys=True))
        return changed

    def _refresh_all_relationships(self, project: str) -> int:
        changed = 0
        for batch in self.store.iter_text_rows(project, Kind.RELATIONSHIP):
            changed += self._relationship_updates(project, batch)
        return changed

    def _refresh_relationships(self, project: str, object_ids: Sequence[str]) -> int:
        return refresh_relationship_texts(
            self.store, project, self.store.relationships_touching(project, object_ids)
        )

    def _relationship_updates(self, project: str, rels: Sequence[Relationship]) -> int:
        return refresh_relationship_texts(self.store, project, rels)

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
        if batch_size < 1 or batch_size > 10_000:
            raise InvalidRequest("batch size must be between 1 and 10000")
        self.refresh_texts()
        if force:
            for kind in kinds:
                self.store.requeue(kind, project=project, statuses=["embedded", "failed", "dead"])
        return run_embedding(
            self.store,
            self.embedder,
            kinds=kinds,
            project=project,
            batch_size=batch_size,
            delay_ms=delay_ms,
            policy=self.retry,
            progress=progress,
            limit=limit,
        )

    def switch_model(self, embedder: Embedder) -> None:
        """Explicitly migrate to another embedding model: every vector is re-made."""
        self.store.set_embedding_model(embedder.model_id, embedder.dims, replace=True)
        self._embedder = embedder
        self._rules = None
        self._store_info = None

    def set_graph_aware(self, graph_aware: bool) -> None:
        """Switch between graph-aware and plain object text (rows re-embed as needed)."""
        self.graph_aware = graph_aware
        self._rules = None

    def retry_failed(self, *, dead: bool = False, project: str | None = None) -> int:
        """Re-queue failed rows now (and dead ones with ``dead=True``)."""
        statuses = ["failed", "dead"] if dead else ["failed"]
        return sum(self.store.requeue(k, project=project, statuses=statuses) for k in Kind)

    def embedding_status(self, *, project: str | None = None) -> dict[str, Any]:
        """Counts by status per project and kind, percent embedded, stale, failure rate."""
        return status_report(self.store, project)

    # search ------------------------------------------------------------------
    def _info(self) -> StoreInfo:
        """The store's info, read once per engine rather than per search. It is read
        again while nothing is embedded (the first embedding run records the model)
        and after :meth:`switch_model`."""
        info = self._store_info
        if info is None or info.embedding_model is None:
            info = self._store_info = self.store.info()
        return info

    def _search_context(self, project: str | None) -> SearchContext:
        embed_query: Callable[[str], Vector] | None
        info = self._info()
        if info.embedding_model is None:
            embed_query = None  # nothing embedded yet: vector legs have nothing to find
        else:
            embedder = self.embedder
            if info.embedding_model != embedder.model_id:
                raise ConfigError(
                    f"the store was embedded with {info.embedding_model}, but the engine "
                    f"uses {embedder.model_id}; pass the same model or re-embed with "
                    "`kgsearch embed generate --model ... --force`"
                )
            embed_query = embedder.embed_query
        return SearchContext(self.store, self._p(project), embed_query, self.cross_encoder)

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
        return run_search(self._search_context(project), _request(request, options))

    def explain(
        self, request: SearchRequest | str, *, project: str | None = None, **options: Any
    ) -> dict[str, Any]:
        """Show a search's work: each leg's ranked hits and scores, and the fused order."""
        req = _request(request, options).model_copy(update={"include_debug": True})
        return explain(req, run_search(self._search_context(project), req))

    def context(
        self,
        request: SearchRequest | str,
        *,
        max_tokens: int = 1000,
        project: str | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """RAG context: the search's hits as prompt lines within ``max_tokens``."""
        if not 1 <= max_tokens <= 100_000:
            raise InvalidRequest("max_tokens must be between 1 and 100000")
        response = self.search(request, project=project, **options)
        text = format_context(
            response.results, max_tokens=max_tokens, count_tokens=self.embedder.count_tokens
        )
        return {
            "context": text,
            "tokens": self.embedder.count_tokens(text) if text else 0,
            "results": len(response.results),
            "metadata": response.metadata,
        }

    # lookups (seed 002) ------------------------------------------------------
    def mentioned_by(
        self,
        *,
        source_ids: Sequence[str] = (),
        chunk_ids: Sequence[str] = (),
        project: str | None = None,
    ) -> dict[str, list[Any]]:
        """What the given live sources/chunks mention: objects and relationships."""
        return mentioned_by(
            self.store, self._p(project), source_ids=source_ids, chunk_ids=chunk_ids
        )

    def sources_mentioning(
        self,
        *,
        object_ids: Sequence[str] = (),
        relationship_ids: Sequence[str] = (),
        project: str | None = None,
    ) -> list[dict[str, Any]]:
        """Sources that mention the given objects/relationships, most mentions first
        (citations)."""
        return sources_mentioning(
            self.store, self._p(project), object_ids=object_ids, relationship_ids=relationship_ids
        )

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

    # --- used by the REST/MCP adapters ---------------------------------------
    def create_api_key(
        self, project: str, scopes: str | Sequence[str], *, name: str | None = None
    ) -> tuple[str, ApiKey]:
        """Make an API key bound to ``project``; returns (the key, shown once; its record).

        Raises:
            InvalidRequest: Unknown scope or blank project.
        """
        record = ApiKey(
            id="",
            project=self._p(project),
            scopes=parse_scopes(scopes),
            name=name,
            created_at=_now(),
        )
        key, key_id, digest = generate_key()
        record = record.model_copy(update={"id": key_id})
        self.store.create_api_key(record, digest)
        return key, record

    def api_keys(self, *, project: str | None = None) -> list[ApiKey]:
        """API key records (never secrets) of one project, or of all when None."""
        return self.store.api_keys(project)

    def revoke_api_key(self, key_id: str) -> None:
        """Revoke a key at once; later requests with it get 401.

        Raises:
            NotFound: No active key has this id.
        """
        if not self.store.revoke_api_key(key_id):
            raise NotFound(f"no active API key {key_id!r}; see `kgsearch keys list`")

    def authenticate(self, key: str) -> ApiKey:
        """The active key record matching a presented key.

        Raises:
            Unauthorized: Malformed, unknown or revoked key.
        """
        key_id, secret = parse_key(key)
        found = self.store.find_api_key(key_id)
        if found is None or not verify_secret(secret, found[1]):
            raise Unauthorized("invalid API key")
        if not found[0].active:
            raise Unauthorized("this API key was revoked")
        return found[0]

    def update_object(
        self, id: str, changes: Mapping[str, Any], *, project: str | None = None
    ) -> GraphObject:
        """Patch an object: ``tags``/``labels`` are replaced, ``properties`` are merged
        (JSON merge patch: a None value removes the property). Type and key are fixed.

        Raises:
            NotFound: No live object has this id.
            InvalidRequest: An unknown or invalid field.
        """
        p = self._p(project)
        check_object_changes(changes)
        return self.add_objects(
            [patched_object(self.get_object(id, project=p), changes)], project=p
        )[0]

    def update_relationship(
        self, id: str, changes: Mapping[str, Any], *, project: str | None = None
    ) -> Relationship:
        """Patch a relationship; ``properties`` are merged, other fields replaced.
        Type and endpoints are fixed (they define the relationship).

        Raises:
            NotFound: No live relationship has this id.
            InvalidRequest: An unknown or invalid field.
        """
        p = self._p(project)
        check_relationship_changes(changes)
        current = self.get_relationship(id, project=p)
        return self.add_relationships([patched_relationship(current, changes)], project=p)[0]

    def get_chunk(self, id: str, *, project: str | None = None) -> Chunk:
        """One live chunk by id.

        Raises:
            NotFound: No live chunk has this id in the project.
        """
        found = self.store.get_chunks(self._p(project), [id])
        if not found:
            raise NotFound(f"chunk {id!r} not found in project {self._p(project)!r}")
        return found[0]

    def get_source(self, id: str, *, project: str | None = None) -> Source:
        """One live source by id.

        Raises:
            NotFound: No live source has this id in the project.
        """
        found = self.store.get_sources(self._p(project), [id])
        if not found:
            raise NotFound(f"source {id!r} not found in project {self._p(project)!r}")
        return found[0]

    def neighborhood(
        self,
        id: str,
        *,
        project: str | None = None,
        depth: int = 1,
        direction: Literal["out", "in", "both"] = "both",
        relationship_types: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """An object's neighbours within ``depth`` hops: each with its hop count, the
        relationship that reached it and the object itself.

        Raises:
            NotFound: No live object has this id.
        """
        return neighborhood(
            self.store,
            self._p(project),
            id,
            depth=depth,
            direction=direction,
            relationship_types=relationship_types,
        )

    def add_text(
        self,
        text: str,
        *,
        source_id: str | None = None,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        max_chars: int = 1000,
        project: str | None = None,
    ) -> dict[str, Any]:
        """Store free text as chunks of at most ``max_chars`` (split at paragraphs, then
        sentences, then words) under one source. Ids are derived from the content, so
        adding the same text again updates instead of duplicating.

        Raises:
            InvalidRequest: Blank text or ``max_chars`` outside 100..100000.
        """
        if not text.strip():
            raise InvalidRequest("text must not be blank")
        if not 100 <= max_chars <= 100_000:
            raise InvalidRequest("max_chars must be between 100 and 100000")
        p = self._p(project)
        sid = source_id or "text-" + content_digest(text)[:16]
        sources = self.store.get_sources(p, [sid])
        if not sources or title is not None or metadata is not None:
            old = sources[0] if sources else None
            sources = self.add_sources(
                [
                    SourceIn(
                        id=sid,
                        title=title if title is not None else (old.title if old else None),
                        uri=old.uri if old else None,
                        metadata=dict(metadata)
                        if metadata is not None
                        else (dict(old.metadata) if old else {}),
                    )
                ],
                project=p,
            )
        pieces = split_text(text, max_chars)
        chunks = self.add_chunks(
            [
                ChunkIn(
                    id=f"{sid}:{i}:{content_digest(piece)[:12]}",
                    text=piece,
                    source_id=sid,
                    position=i,
                )
                for i, piece in enumerate(pieces)
            ],
            project=p,
        )
        return {"source": sources[0], "chunks": chunks}

    def embedding_todo(
        self, *, project: str | None = None, kinds: Sequence[Kind] = tuple(Kind)
    ) -> dict[str, int]:
        """Rows due for embedding (pending or failed) per kind, of one project or all."""
        todo = {k.value: 0 for k in kinds}
        for c in self.store.embedding_counts(project):
            if c.kind.value in todo and (project is None or c.project == project):
                todo[c.kind.value] += c.by_status.get("pending", 0) + c.by_status.get("failed", 0)
        return todo

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
        if not 1 <= batch_size <= 10_000:
            raise InvalidRequest("batch size must be between 1 and 10000")
        self.refresh_texts()
        policy = replace(self.retry, max_wait_seconds=0.0)
        total = EmbedReport()
        for kind in kinds:
            report = run_embedding(
                self.store,
                self.embedder,
                kinds=[kind],
                project=project,
                batch_size=batch_size,
                policy=policy,
                limit=batch_size,
            )
            for name in ("processed", "embedded", "failed", "dead", "skipped_changed", "batches"):
                setattr(total, name, getattr(total, name) + getattr(report, name))
            total.seconds += report.seconds
            total.errors.extend(e for e in report.errors if e not in total.errors)
        return total


def _request(request: SearchRequest | str, options: dict[str, Any]) -> SearchRequest:
    if isinstance(request, SearchRequest) and not options:
        return request
    if isinstance(request, SearchRequest):
        fields = {**request.model_dump(exclude_unset=True), **options}
    else:
        fields = {"query": request, **options}
    return validate_request(fields)


def _props_for(objects: Sequence[ObjectIn], ref: ObjectRef) -> dict[str, Any]:
    for o in reversed(objects):
        if o.type == ref.type and o.key == ref.key:
            return dict(o.properties)
    return {}


def _now() -> datetime:
    return datetime.now(UTC)
