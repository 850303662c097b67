"""The engine's graph section: writes, reads, seed 002 lookups, import and export."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from kgsearch import reads
from kgsearch.engine.core import EngineCore
from kgsearch.io.exporter import export
from kgsearch.io.importer import ImportProgress, import_files
from kgsearch.lifecycle import ingest
from kgsearch.model import (
    Chunk,
    ChunkIn,
    Filters,
    GraphObject,
    Mentioned,
    MentionIn,
    Neighborhood,
    ObjectIn,
    Page,
    Relationship,
    RelationshipIn,
    Source,
    SourceIn,
    SourceMentions,
    Stats,
    TextAdded,
)
from kgsearch.reports import DeleteReport
from kgsearch.search.lookups import mentioned_by, neighborhood, sources_mentioning
from kgsearch.store.base import Neighbor
from kgsearch.writes import graph as graph_writes
from kgsearch.writes import text as text_writes

__all__ = ["GraphMethods"]


class GraphMethods(EngineCore):
    """Writes, reads, lookups, import and export (one call each)."""

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
        """Soft-delete rows (an object takes its relationships); every read hides them.

        A source takes its chunks with it, and a chunk takes its extraction task,
        mention links and what it contributed to the graph (see
        :meth:`delete_documents`). Returns how many rows of ``kind`` went.
        """
        if kind == "source":
            return self.delete_documents(ids, project=project).sources
        if kind == "chunk":
            return ingest.delete_chunks(self._writes(project), ids).chunks
        return graph_writes.delete(self._writes(project), kind, ids)

    def delete_documents(
        self, source_ids: Sequence[str], *, project: str | None = None
    ) -> DeleteReport:
        """Delete documents (sources) and everything that came from them.

        Their chunks, extraction tasks and mention links go; objects and
        relationships that no other chunk supports go; the rest have their
        descriptions, keywords, weights and source chunks derived again from the
        remaining chunks' extractions (no model call) and are re-embedded when their
        text changed. Unknown ids are skipped.
        """
        return ingest.delete_documents(self._writes(project), source_ids)

    def purge(self, *, project: str | None = None) -> int:
        """Remove soft-deleted rows for good."""
        return graph_writes.purge(self._writes(project))

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
        name = self._p(project)
        try:
            return import_files(self.store, self.rules, paths, project=name, progress=progress)
        finally:
            self._graph_changed(name)

    def export(
        self, path: Path, *, project: str | None = None, fmt: Literal["jsonl", "json"] = "jsonl"
    ) -> dict[str, int]:
        """Write a project to a JSONL or JSON graph file that imports back identically."""
        return export(self.store, path, project=self._p(project), fmt=fmt)
