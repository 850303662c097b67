"""Copying a whole store into another (SQLite ⇄ PostgreSQL), embeddings included.

Rows stream page by page from the source and are written into the target inside one
bulk-load transaction, so a failure leaves the target as it was. Ids are kept, so
relationships, mentions and chunks still point at the right rows, and a second run
over the same source is a no-op. Current embeddings are copied with their vectors
and never re-embedded; rows whose text changed since they were embedded (stale),
and failed or dead rows, arrive pending and are embedded by the next run. API keys
of the copied projects come along (also of projects that hold no rows). The copy
is verified inside the transaction by comparing per-kind counts, embedded counts
and API keys on both sides; a difference rolls it back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kgsearch.errors import Conflict, NotFound, StoreError
from kgsearch.model import Chunk, GraphObject, Kind, Relationship
from kgsearch.store.base import (
    EmbeddingQueue,
    EmbeddingResult,
    GraphReads,
    GraphWrites,
    KeyStore,
    Lifecycle,
    ObjectRow,
    RelationshipRow,
    SearchIndex,
)
from kgsearch.store.common import batched

__all__ = ["CopyStore", "MigrationReport", "migrate_store"]


class CopyStore(
    Lifecycle, GraphReads, GraphWrites, EmbeddingQueue, SearchIndex, KeyStore, Protocol
):
    """What a copy reads from the source and writes to the target: metadata, rows,
    vectors, embedding states and API keys (tasks, the cache and communities are not
    copied)."""


_META_KEYS = ("texts",)

Progress = Callable[[str, int], None]


@dataclass
class MigrationReport:
    """What was copied, per project, and whether both sides agree."""

    projects: dict[str, dict[str, int]] = field(default_factory=dict)
    vectors: dict[str, dict[str, int]] = field(default_factory=dict)
    api_keys: int = 0
    verified: bool = False
    mismatches: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return {
            "projects": self.projects,
            "vectors": self.vectors,
            "api_keys": self.api_keys,
            "verified": self.verified,
            "mismatches": self.mismatches,
        }


def _state(row: GraphObject | Relationship | Chunk) -> tuple[str, str, int]:
    """(text, text_hash, text_version) of a row, as the writer needs them."""
    e = row.embedding
    return e.text or "", e.text_hash or "", e.text_version or 0


def _object_row(o: GraphObject) -> ObjectRow:
    e = o.embedding
    return ObjectRow(
        id=o.id,
        type=o.type,
        key=o.key,
        tags=o.tags,
        properties=o.properties,
        labels=o.labels,
        text=e.text or "",
        text_hash=e.text_hash or "",
        text_version=e.text_version or 0,
        created_at=o.created_at,
        updated_at=o.updated_at,
    )


def _relationship_row(r: Relationship) -> RelationshipRow:
    e = r.embedding
    return RelationshipRow(
        id=r.id,
        type=r.type,
        source_id=r.source_id,
        target_id=r.target_id,
        label=r.label,
        properties=r.properties,
        weight=r.weight,
        valid_from=r.valid_from,
        valid_to=r.valid_to,
        description=r.description,
        source_chunks=r.source_chunks,
        text=e.text or "",
        text_hash=e.text_hash or "",
        text_version=e.text_version or 0,
        created_at=r.created_at,
        updated_at=r.updated_at,
    )


def _copy_vectors(
    source: SearchIndex,
    target: EmbeddingQueue,
    project: str,
    kind: Kind,
    rows: Sequence[GraphObject | Relationship | Chunk],
    model: str | None,
    dims: int | None,
) -> int:
    """Carry over the vectors of rows embedded from their current text."""
    current = [
        r
        for r in rows
        if r.embedding.status == "embedded" and r.embedding.embedded_text == r.embedding.text
    ]
    if not current or model is None or dims is None:
        return 0
    vectors = source.vectors(project, kind, [r.id for r in current])
    results = [
        EmbeddingResult(project, r.id, r.embedding.text or "", r.embedding.text_hash or "", v)
        for r in current
        if (v := vectors.get(r.id)) is not None
    ]
    versions = {r.embedding.text_version or 0 for r in current}
    return target.complete(
        kind,
        results,
        model=model,
        dims=dims,
        text_version=max(versions),
        elapsed_ms=0.0,
        record_stats=False,
    )


def _copy_project(
    source: CopyStore, target: CopyStore, project: str, progress: Progress | None
) -> dict[str, int]:
    info = source.info()
    model, dims = info.embedding_model, info.dims
    copied: dict[str, int] = {}

    def tick(kind: str, n: int) -> None:
        if progress is not None:
            progress(kind, n)

    for page in batched(source.iter_rows(project, "object")):
        ids = target.upsert_objects(project, [_object_row(o) for o in page])
        moved = [i for i, o in zip(ids, page, strict=True) if i != o.id]
        if moved:
            raise Conflict(
                f"project {project!r} of the target already holds objects with the same "
                f"type and key under other ids ({moved[0]}, …); migrate into an empty store",
                details={"ids": moved[:10]},
            )
        copied["object"] = copied.get("object", 0) + _copy_vectors(
            source, target, project, Kind.OBJECT, page, model, dims
        )
        tick("objects", len(page))
    for page in batched(source.iter_rows(project, "relationship")):
        target.upsert_relationships(project, [_relationship_row(r) for r in page])
        copied["relationship"] = copied.get("relationship", 0) + _copy_vectors(
            source, target, project, Kind.RELATIONSHIP, page, model, dims
        )
        tick("relationships", len(page))
    for page in batched(source.iter_rows(project, "source")):
        target.upsert_sources(project, page)
        tick("sources", len(page))
    for page in batched(source.iter_rows(project, "chunk")):
        target.upsert_chunks(
            project,
            [
                (
                    c,
                    c.embedding.text or "",
                    c.embedding.text_hash or "",
                    c.embedding.text_version or 0,
                )
                for c in page
            ],
        )
        copied["chunk"] = copied.get("chunk", 0) + _copy_vectors(
            source, target, project, Kind.CHUNK, page, model, dims
        )
        tick("chunks", len(page))
    for page in batched(source.iter_rows(project, "mention")):
        target.add_mentions(project, page)
        tick("mentions", len(page))
    return copied


def migrate_store(
    source: CopyStore,
    target: CopyStore,
    *,
    projects: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> MigrationReport:
    """Copy every (or the named) project of ``source`` into ``target`` and verify.

    Args:
        source: The store to read.
        target: The store to write; normally empty, or an earlier copy of ``source``.
        projects: Only these projects (default: all that hold rows or API keys).
        progress: Called with (kind, rows) after each page written.

    Returns:
        What was copied; ``verified`` is always True (a mismatch raises).

    Raises:
        DimensionMismatch, ConfigError: The target holds vectors of another model.
        Conflict: The target holds other objects under the same type and key.
        NotFound: A named project does not exist in the source.
        StoreError: Any store failure, or the copy does not match the source (the
            mismatches are in ``details``); the target is left unchanged.
    """
    # A project may hold nothing but API keys; it is still a project to copy.
    keys = source.api_keys()
    known = list(dict.fromkeys([*source.projects(), *(k.project for k in keys)]))
    wanted = list(projects) if projects is not None else known
    missing = [p for p in wanted if p not in known]
    if missing:
        raise NotFound(f"the source store has no project {missing[0]!r}")
    info = source.info()
    report = MigrationReport()
    with target.bulk_load():
        if info.embedding_model and info.dims:
            target.set_embedding_model(info.embedding_model, info.dims)
        for name in _META_KEYS:
            value = source.get_meta(name)
            if value is not None:
                target.set_meta(name, value)
        for project in wanted:
            report.vectors[project] = _copy_project(source, target, project, progress)
        for api_key in keys:
            if api_key.project in wanted and target.find_api_key(api_key.id) is None:
                found = source.find_api_key(api_key.id)
                if found is not None:
                    target.create_api_key(found[0], found[1])
                    report.api_keys += 1
        # Verified inside the transaction, so a copy that does not match rolls back.
        _verify(source, target, wanted, report)
        if report.mismatches:
            raise StoreError(
                "the copy does not match the source: " + "; ".join(report.mismatches),
                details={"mismatches": report.mismatches},
            )
    target.build_indexes()
    return report


def _verify(
    source: CopyStore, target: CopyStore, projects: list[str], report: MigrationReport
) -> None:
    """Live rows per kind, embedded rows per kind and API keys must be equal on both
    sides (a row is only ever ``embedded`` from its current text, so every one was
    copied)."""

    def embedded(store: EmbeddingQueue, project: str) -> dict[str, int]:
        return {
            c.kind.value: c.by_status.get("embedded", 0) for c in store.embedding_counts(project)
        }

    for project in projects:
        keys, copied = len(source.api_keys(project)), len(target.api_keys(project))
        if keys != copied:
            report.mismatches.append(f"{project}: api keys source {keys}, target {copied}")
        ours, theirs = source.counts(project), target.counts(project)
        report.projects[project] = theirs
        for kind, count in ours.items():
            if theirs.get(kind) != count:
                report.mismatches.append(
                    f"{project}: {kind} source {count}, target {theirs.get(kind)}"
                )
        before, after = embedded(source, project), embedded(target, project)
        for kind in sorted(set(before) | set(after)):
            if before.get(kind, 0) != after.get(kind, 0):
                report.mismatches.append(
                    f"{project}: embedded {kind}s source {before.get(kind, 0)}, "
                    f"target {after.get(kind, 0)}"
                )
    report.verified = not report.mismatches
