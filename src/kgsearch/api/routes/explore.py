"""Routes the web UI needs that no other route gives: who the caller is, a project
overview, a bounded subgraph for the graph view, one object with its surroundings,
and the rows whose embedding failed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

import kgsearch
from kgsearch.api.auth import Principal, current_engine, require
from kgsearch.api.routes.graph import IdPath
from kgsearch.engine import Engine
from kgsearch.explore import (
    MAX_SUBGRAPH_NODES,
    EmbeddingFailure,
    ObjectView,
    Overview,
    Subgraph,
)

__all__ = ["router"]

router = APIRouter(prefix="/api/explore", tags=["explore"])

EngineDep = Annotated[Engine, Depends(current_engine)]
Reader = Annotated[Principal, Depends(require("read"))]


class Session(BaseModel):
    """The caller as the server sees it."""

    project: str
    scopes: list[str]
    keyless: bool
    key_id: str | None
    version: str


class SubgraphRequest(BaseModel):
    """Seeds and bounds of a subgraph."""

    model_config = ConfigDict(extra="forbid")

    ids: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        min_length=1, max_length=100
    )
    depth: int = Field(default=1, ge=0, le=3)
    limit: int = Field(default=500, ge=1, le=MAX_SUBGRAPH_NODES)
    types: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        default=None, max_length=100
    )
    project: str | None = Field(default=None, max_length=200)
    associations: bool = False


@router.get("/session")
def session(who: Reader, engine: EngineDep) -> Session:
    """Who the caller is: project, scopes, and whether the server runs keyless."""
    return Session(
        project=who.project,
        scopes=sorted(who.scopes),
        keyless=who.key_id is None,
        key_id=who.key_id,
        version=kgsearch.__version__,
    )


@router.get("/overview")
def overview(who: Reader, engine: EngineDep) -> Overview:
    """Row counts, the embedding model and the object types of the project."""
    return engine.overview(project=who.project)


@router.post("/subgraph")
def subgraph(body: SubgraphRequest, who: Reader, engine: EngineDep) -> Subgraph:
    """Objects within ``depth`` hops of ``ids`` (seeds first, then nearest, at most
    ``limit``) and the edges among them; ``truncated`` when more were in reach. With
    ``associations``, objects the same passages name are reached and drawn too (edge
    type ``co_mentioned``)."""
    who.check_body(body.project)
    return engine.subgraph(
        body.ids,
        project=who.project,
        depth=body.depth,
        limit=body.limit,
        types=body.types,
        associations=body.associations,
    )


@router.get("/objects/{id}")
def object_view(
    id: IdPath,
    who: Reader,
    engine: EngineDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> ObjectView:
    """One object with up to ``limit`` relationships in and out (each with its other
    end) and up to ``limit`` chunks that mention it or that it was extracted from."""
    return engine.object_view(id, project=who.project, limit=limit)


@router.get("/embedding-failures")
def embedding_failures(
    who: Reader,
    engine: EngineDep,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> list[EmbeddingFailure]:
    """Up to ``limit`` rows whose embedding failed or died, with their last error."""
    return engine.embedding_failures(project=who.project, limit=limit)
