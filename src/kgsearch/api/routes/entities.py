"""Entity resolution routes: proposals, merges by hand, and undo."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from kgsearch.api.auth import Principal, current_engine, require
from kgsearch.api.limits import MAX_BULK_ITEMS, MAX_ID_CHARS
from kgsearch.engine import Engine
from kgsearch.reports import MergeReport

__all__ = ["router"]

router = APIRouter(prefix="/api/entities", tags=["entities"])

EngineDep = Annotated[Engine, Depends(current_engine)]
Reader = Annotated[Principal, Depends(require("read"))]
Writer = Annotated[Principal, Depends(require("write"))]
Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]


class MergeRequest(BaseModel):
    """Objects to fold into ``keep``."""

    model_config = ConfigDict(extra="forbid")

    keep: Id
    merge: list[Id] = Field(min_length=1, max_length=MAX_BULK_ITEMS)
    force: bool = Field(default=False, description="Merge even across incompatible types")


class SplitRequest(BaseModel):
    """A merge to undo."""

    model_config = ConfigDict(extra="forbid")

    keep: Id
    merged: Id


@router.get("/candidates")
def candidates(
    who: Reader,
    engine: EngineDep,
    type: Annotated[list[str] | None, Query(max_length=100)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    vectors: bool = True,
) -> dict[str, Any]:
    """Merges entity resolution proposes (nothing is applied): pairs of objects of
    compatible types with the reason (exact, alias, acronym, fuzzy, embedding) and
    score."""
    found = engine.entity_candidates(project=who.project, types=type, vectors=vectors)
    return {
        "proposals": [
            {"keep": m.a_id, "merge": m.b_id, "reason": m.reason, "score": m.score}
            for m in found[:limit]
        ],
        "total": len(found),
    }


@router.post("/merge")
def merge(body: MergeRequest, who: Writer, engine: EngineDep) -> MergeReport:
    """Fold ``merge`` into ``keep``: relationships, provenance and mentions move, the
    merged objects go; undo with ``/api/entities/split``. 400 across incompatible
    types unless ``force``."""
    return engine.merge_entities(body.keep, body.merge, project=who.project, force=body.force)


@router.post("/split")
def split(body: SplitRequest, who: Writer, engine: EngineDep) -> MergeReport:
    """Undo the merge of ``merged`` into ``keep``."""
    return engine.split_entity(body.keep, body.merged, project=who.project)
