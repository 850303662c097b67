"""Routes for text ingestion: sources, chunks and free text (split into chunks)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, status

from kgsearch.api.auth import Principal, current_engine, require
from kgsearch.api.routes.graph import Cursor, IdPath, Limit
from kgsearch.api.schemas import (
    Bulk,
    ChunkCreate,
    ChunkPage,
    Deleted,
    IdsBody,
    Items,
    SourceCreate,
    SourcePage,
    TextIn,
)
from kgsearch.engine import Engine
from kgsearch.errors import NotFound
from kgsearch.model import Chunk, ChunkIn, Source, SourceIn, TextAdded

__all__ = ["router"]

router = APIRouter(prefix="/api")

EngineDep = Annotated[Engine, Depends(current_engine)]
Reader = Annotated[Principal, Depends(require("read"))]
Writer = Annotated[Principal, Depends(require("write"))]


def _deleted(n: int, kind: str, id: str) -> Deleted:
    if n == 0:
        raise NotFound(f"{kind} {id!r} not found in this project")
    return Deleted(deleted=n)


# sources ------------------------------------------------------------------------
@router.post("/sources", status_code=status.HTTP_201_CREATED, tags=["sources"])
def create_source(body: SourceCreate, who: Writer, engine: EngineDep) -> Source:
    """Create or update one source document."""
    who.check_body(body.project)
    return engine.add_sources([body], project=who.project)[0]


@router.post("/sources/bulk", status_code=status.HTTP_201_CREATED, tags=["sources"])
def create_sources(body: Bulk[SourceIn], who: Writer, engine: EngineDep) -> Items[Source]:
    """Create or update many sources."""
    who.check_body(body.project)
    return Items[Source](items=engine.add_sources(body.items, project=who.project))


@router.get("/sources", tags=["sources"])
def list_sources(
    who: Reader, engine: EngineDep, limit: Limit = 20, cursor: Cursor = None
) -> SourcePage:
    """List sources, oldest first."""
    page = engine.list_rows("source", project=who.project, limit=limit, cursor=cursor)
    return SourcePage(items=page.items, next_cursor=page.next_cursor)


@router.get("/sources/{id}", tags=["sources"])
def get_source(id: IdPath, who: Reader, engine: EngineDep) -> Source:
    """One source by id."""
    return engine.get_source(id, project=who.project)


@router.delete("/sources/{id}", tags=["sources"])
def delete_source(id: IdPath, who: Writer, engine: EngineDep) -> Deleted:
    """Delete a source with its chunks and what they contributed to the graph
    (``DELETE /api/documents/{id}`` returns the details)."""
    return _deleted(engine.delete("source", [id], project=who.project), "source", id)


# chunks -------------------------------------------------------------------------
@router.post("/chunks", status_code=status.HTTP_201_CREATED, tags=["chunks"])
def create_chunk(body: ChunkCreate, who: Writer, engine: EngineDep) -> Chunk:
    """Create or update one chunk; it is stored as pending and embedded later."""
    who.check_body(body.project)
    return engine.add_chunks([body], project=who.project)[0]


@router.post("/chunks/bulk", status_code=status.HTTP_201_CREATED, tags=["chunks"])
def create_chunks(body: Bulk[ChunkIn], who: Writer, engine: EngineDep) -> Items[Chunk]:
    """Create or update many chunks."""
    who.check_body(body.project)
    return Items[Chunk](items=engine.add_chunks(body.items, project=who.project))


@router.get("/chunks", tags=["chunks"])
def list_chunks(
    who: Reader, engine: EngineDep, limit: Limit = 20, cursor: Cursor = None
) -> ChunkPage:
    """List chunks, oldest first."""
    page = engine.list_rows("chunk", project=who.project, limit=limit, cursor=cursor)
    return ChunkPage(items=page.items, next_cursor=page.next_cursor)


@router.get("/chunks/{id:path}", tags=["chunks"])
def get_chunk(id: IdPath, who: Reader, engine: EngineDep) -> Chunk:
    """One chunk by id."""
    return engine.get_chunk(id, project=who.project)


@router.delete("/chunks/{id:path}", tags=["chunks"])
def delete_chunk(id: IdPath, who: Writer, engine: EngineDep) -> Deleted:
    """Delete a chunk with its extraction record and what it contributed to the graph."""
    return _deleted(engine.delete("chunk", [id], project=who.project), "chunk", id)


@router.post("/chunks/bulk-delete", tags=["chunks"])
def delete_chunks(body: IdsBody, who: Writer, engine: EngineDep) -> Deleted:
    """Delete many chunks; unknown ids are skipped."""
    who.check_body(body.project)
    return Deleted(deleted=engine.delete("chunk", body.ids, project=who.project))


# free text ------------------------------------------------------------------------
@router.post("/text", status_code=status.HTTP_201_CREATED, tags=["chunks"])
def add_text(body: TextIn, who: Writer, engine: EngineDep) -> TextAdded:
    """Store free text as chunks (split at paragraphs, then sentences) under one source."""
    who.check_body(body.project)
    return engine.add_text(
        body.text,
        source_id=body.source_id,
        title=body.title,
        metadata=body.metadata,
        max_chars=body.max_chars,
        project=who.project,
    )
