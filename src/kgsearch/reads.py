"""One-row reads and store statistics: the engine's lookups by id or key.

Each getter returns one live row of a project or raises :class:`NotFound` with the
message every adapter shows (REST 404, MCP tool error, CLI exit 1); :func:`stats`
gathers a project's row counts and what the store was built with. Listings, graph
walks and search live elsewhere (the store's ``list_rows``/``neighbors``,
:mod:`kgsearch.search`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from kgsearch.errors import NotFound
from kgsearch.model import Chunk, GraphObject, ObjectRef, Relationship, Source, Stats
from kgsearch.store.base import GraphReads, Lifecycle
from kgsearch.urls import redact_url

__all__ = [
    "get_chunk",
    "get_object",
    "get_object_by_key",
    "get_relationship",
    "get_source",
    "stats",
]


class _Stats(GraphReads, Lifecycle, Protocol):
    """Row counts and the store's metadata."""


_Row = TypeVar("_Row", GraphObject, Relationship, Chunk, Source)


def _one(found: Sequence[_Row], what: str, id: str, project: str) -> _Row:
    if not found:
        raise NotFound(f"{what} {id!r} not found in project {project!r}")
    return found[0]


def get_object(store: GraphReads, project: str, id: str) -> GraphObject:
    """Return one live object by id.

    Raises:
        NotFound: No live object has this id in the project.
    """
    return _one(store.get_objects(project, [id]), "object", id, project)


def get_object_by_key(store: GraphReads, project: str, type_: str, key: str) -> GraphObject:
    """Return one live object by type and key.

    Raises:
        NotFound: No live object has this type and key in the project.
    """
    ref = ObjectRef(type=type_, key=key)
    endpoint = store.resolve(project, [ref]).get(ref)
    if endpoint is None:
        raise NotFound(f"object {type_}/{key} not found in project {project!r}")
    return get_object(store, project, endpoint.id)


def get_relationship(store: GraphReads, project: str, id: str) -> Relationship:
    """Return one live relationship by id.

    Raises:
        NotFound: No live relationship has this id in the project.
    """
    return _one(store.get_relationships(project, [id]), "relationship", id, project)


def get_chunk(store: GraphReads, project: str, id: str) -> Chunk:
    """Return one live chunk by id.

    Raises:
        NotFound: No live chunk has this id in the project.
    """
    return _one(store.get_chunks(project, [id]), "chunk", id, project)


def get_source(store: GraphReads, project: str, id: str) -> Source:
    """Return one live source by id.

    Raises:
        NotFound: No live source has this id in the project.
    """
    return _one(store.get_sources(project, [id]), "source", id, project)


def stats(store: _Stats, project: str) -> Stats:
    """Return the row counts of ``project`` and the store's metadata."""
    info = store.info()
    return Stats(
        project=project,
        counts=store.counts(project),
        store=redact_url(info.url),
        schema_version=info.schema_version,
        embedding_model=info.embedding_model,
        dims=info.dims,
        projects=store.projects(),
    )
