"""Community routes: build, status, listing, one community, and an object's communities.

``POST /api/communities/build`` runs a build in the request (detection and extractive
reports take seconds to tens of seconds on graphs of tens of thousands of objects);
a graph written to meanwhile answers 409 and leaves the previous set whole.
"""

from __future__ import annotations

from typing import Annotated, Literal

import anyio
from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from kgsearch.api.auth import Principal, current_engine, require
from kgsearch.api.lanes import Lanes
from kgsearch.api.limits import MAX_ID_CHARS
from kgsearch.api.spend import maybe_charged
from kgsearch.community_values import (
    CommunityBuildReport,
    CommunityDetail,
    CommunityMembership,
    CommunityPage,
    CommunityStatus,
)
from kgsearch.engine import Engine

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["communities"])

EngineDep = Annotated[Engine, Depends(current_engine)]
Reader = Annotated[Principal, Depends(require("read"))]
Writer = Annotated[Principal, Depends(require("write"))]
Id = Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS)]


class CommunityBuildRequest(BaseModel):
    """Options of ``POST /api/communities/build`` (every field optional)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    project: str | None = None
    method: Literal["extractive", "llm"] = "extractive"
    max_cluster_size: int = Field(default=10, ge=1, le=100_000)
    seed: int = Field(default=0xDEADBEEF, ge=0, lt=2**32)
    resolution: float = Field(default=1.0, gt=0)
    min_jaccard: float = Field(default=0.9, gt=0.5, le=1.0)
    force: bool = False


@router.post("/communities/build")
async def build_communities(
    who: Writer, engine: EngineDep, request: Request, body: CommunityBuildRequest | None = None
) -> CommunityBuildReport:
    """Detect communities, replace the stored set whole, write the due reports (409
    when the graph changed during the build: nothing is written). ``method: "llm"``
    has the chat model write the reports: it needs the ``llm`` scope too and is held to
    the LLM budget."""
    given = body or CommunityBuildRequest()
    who.check_body(given.project)

    def build() -> CommunityBuildReport:
        return engine.build_communities(
            project=who.project,
            method=given.method,
            max_cluster_size=given.max_cluster_size,
            seed=given.seed,
            resolution=given.resolution,
            min_jaccard=given.min_jaccard,
            force=given.force,
        )

    spends = given.method == "llm"
    work = await maybe_charged(request, who, spends, build)
    if not spends:
        return await anyio.to_thread.run_sync(work)
    # the reports wait on the model: on the LLM lane, never on the request threads (a
    # build outlives its client's connection: it is not cancelled when that closes)
    lanes: Lanes = request.app.state.lanes
    return await anyio.to_thread.run_sync(work, limiter=lanes.llm)


@router.get("/communities/status")
def community_status(who: Reader, engine: EngineDep) -> CommunityStatus:
    """The current build, communities per level, reports, and whether it is stale."""
    return engine.community_status(project=who.project)


@router.get("/communities")
def list_communities(
    who: Reader,
    engine: EngineDep,
    level: Annotated[int | None, Query(ge=0)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> CommunityPage:
    """Communities by level, then rank, with their report titles and ratings."""
    return engine.list_communities(project=who.project, level=level, limit=limit, offset=offset)


@router.get("/communities/{community_id}")
def get_community(
    community_id: Id,
    who: Reader,
    engine: EngineDep,
    members: Annotated[int, Query(ge=0, le=10_000)] = 100,
) -> CommunityDetail:
    """One community: its report, children and members (404 when unknown)."""
    return engine.community(community_id, project=who.project, members=members)


@router.get("/graph/objects/{object_id}/communities")
def object_communities(object_id: Id, who: Reader, engine: EngineDep) -> CommunityMembership:
    """The communities an object belongs to, coarsest level first (404: no such object)."""
    return engine.object_communities(object_id, project=who.project)
