"""Routes over the graph: objects and relationships (CRUD, bulk, neighbours).

Each route authenticates through :func:`kgsearch.api.auth.require`, calls one engine
method with the caller's project and returns the library's own models.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, status

from kgsearch.api.auth import Principal, current_engine, require
from kgsearch.api.limits import MAX_ID_CHARS, MAX_LIMIT
from kgsearch.api.schemas import (
    Bulk,
    Deleted,
    IdsBody,
    Items,
    ObjectCreate,
    ObjectPage,
    ObjectPatch,
    RelationshipCreate,
    RelationshipPage,
    RelationshipPatch,
)
from kgsearch.engine import Engine
from kgsearch.errors import NotFound
from kgsearch.model import (
    Filters,
    GraphObject,
    Neighborhood,
    ObjectIn,
    Relationship,
    RelationshipIn,
    Stats,
)

__all__ = ["router"]

router = APIRouter(prefix="/api/graph")

EngineDep = Annotated[Engine, Depends(current_engine)]
Reader = Annotated[Principal, Depends(require("read"))]
Writer = Annotated[Principal, Depends(require("write"))]
IdPath = Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS)]
Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Rows per page")]
Cursor = Annotated[str | None, Query(max_length=40, description="next_cursor of a page")]
Types = Annotated[list[str] | None, Query(max_length=50, description="Only these types")]


def _one_deleted(n: int, kind: str, id: str) -> Deleted:
    if n == 0:
        raise NotFound(f"{kind} {id!r} not found in this project")
    return Deleted(deleted=n)


# objects ----------------------------------------------------------------------
@router.get("/stats", tags=["stats"])
def stats(who: Reader, engine: EngineDep) -> Stats:
    """Row counts of the project and what the store was built with (``kgsearch stats``)."""
    return engine.stats(project=who.project)


@router.post("/objects", status_code=status.HTTP_201_CREATED, tags=["objects"])
def create_object(body: ObjectCreate, who: Writer, engine: EngineDep) -> GraphObject:
    """Create or update one object (upserted by type + key); it is stored as pending."""
    who.check_body(body.project)
    return engine.add_objects([body], project=who.project)[0]


@router.post("/objects/bulk", status_code=status.HTTP_201_CREATED, tags=["objects"])
def create_objects(body: Bulk[ObjectIn], who: Writer, engine: EngineDep) -> Items[GraphObject]:
    """Create or update many objects in one transaction."""
    who.check_body(body.project)
    return Items[GraphObject](items=engine.add_objects(body.items, project=who.project))


@router.get("/objects", tags=["objects"])
def list_objects(
    who: Reader,
    engine: EngineDep,
    limit: Limit = 20,
    cursor: Cursor = None,
    type: Types = None,
    label: Types = None,
) -> ObjectPage:
    """List objects, oldest first, a page at a time."""
    page = engine.list_rows(
        "object",
        project=who.project,
        limit=limit,
        cursor=cursor,
        filters=Filters(object_types=type or None, labels=label or None),
    )
    return ObjectPage(items=page.items, next_cursor=page.next_cursor)


@router.get("/objects/lookup", tags=["objects"])
def lookup_object(
    who: Reader,
    engine: EngineDep,
    type: Annotated[str, Query(min_length=1, max_length=MAX_ID_CHARS)],
    key: Annotated[str, Query(min_length=1, max_length=2000)],
) -> GraphObject:
    """One object by its type and key."""
    return engine.get_object_by_key(type, key, project=who.project)


@router.get("/objects/{id}", tags=["objects"])
def get_object(id: IdPath, who: Reader, engine: EngineDep) -> GraphObject:
    """One object by id."""
    return engine.get_object(id, project=who.project)


@router.patch("/objects/{id}", tags=["objects"])
def update_object(id: IdPath, body: ObjectPatch, who: Writer, engine: EngineDep) -> GraphObject:
    """Change an object's tags, labels or properties (properties are merged)."""
    who.check_body(body.project)
    changes = body.model_dump(exclude_unset=True, exclude={"project"})
    return engine.update_object(id, changes, project=who.project)


@router.delete("/objects/{id}", tags=["objects"])
def delete_object(id: IdPath, who: Writer, engine: EngineDep) -> Deleted:
    """Delete an object and its relationships."""
    return _one_deleted(engine.delete("object", [id], project=who.project), "object", id)


@router.post("/objects/bulk-delete", tags=["objects"])
def delete_objects(body: IdsBody, who: Writer, engine: EngineDep) -> Deleted:
    """Delete many objects (and their relationships); unknown ids are skipped."""
    who.check_body(body.project)
    return Deleted(deleted=engine.delete("object", body.ids, project=who.project))


@router.get("/objects/{id}/neighbors", tags=["objects"])
def neighbors(
    id: IdPath,
    who: Reader,
    engine: EngineDep,
    depth: Annotated[int, Query(ge=1, le=3)] = 1,
    direction: Literal["out", "in", "both"] = "both",
    type: Types = None,
) -> Neighborhood:
    """Objects within ``depth`` hops, each with the relationship that reached it."""
    return engine.neighborhood(
        id, project=who.project, depth=depth, direction=direction, relationship_types=type
    )


# relationships ------------------------------------------------------------------
@router.post("/relationships", status_code=status.HTTP_201_CREATED, tags=["relationships"])
def create_relationship(body: RelationshipCreate, who: Writer, engine: EngineDep) -> Relationship:
    """Create or update one relationship; it is stored as pending and embedded later,
    so the request succeeds even when the embedder is down."""
    who.check_body(body.project)
    return engine.add_relationships([body], project=who.project)[0]


@router.post("/relationships/bulk", status_code=status.HTTP_201_CREATED, tags=["relationships"])
def create_relationships(
    body: Bulk[RelationshipIn], who: Writer, engine: EngineDep
) -> Items[Relationship]:
    """Create or update many relationships in one transaction."""
    who.check_body(body.project)
    return Items[Relationship](items=engine.add_relationships(body.items, project=who.project))


@router.get("/relationships", tags=["relationships"])
def list_relationships(
    who: Reader, engine: EngineDep, limit: Limit = 20, cursor: Cursor = None, type: Types = None
) -> RelationshipPage:
    """List relationships, oldest first, a page at a time."""
    page = engine.list_rows(
        "relationship",
        project=who.project,
        limit=limit,
        cursor=cursor,
        filters=Filters(relationship_types=type or None),
    )
    return RelationshipPage(items=page.items, next_cursor=page.next_cursor)


@router.get("/relationships/{id}", tags=["relationships"])
def get_relationship(id: IdPath, who: Reader, engine: EngineDep) -> Relationship:
    """One relationship by id."""
    return engine.get_relationship(id, project=who.project)


@router.patch("/relationships/{id}", tags=["relationships"])
def update_relationship(
    id: IdPath, body: RelationshipPatch, who: Writer, engine: EngineDep
) -> Relationship:
    """Change a relationship's label, properties, weight, validity or description."""
    who.check_body(body.project)
    changes = body.model_dump(exclude_unset=True, exclude={"project"})
    return engine.update_relationship(id, changes, project=who.project)


@router.delete("/relationships/{id}", tags=["relationships"])
def delete_relationship(id: IdPath, who: Writer, engine: EngineDep) -> Deleted:
    """Delete a relationship."""
    n = engine.delete("relationship", [id], project=who.project)
    return _one_deleted(n, "relationship", id)


@router.post("/relationships/bulk-delete", tags=["relationships"])
def delete_relationships(body: IdsBody, who: Writer, engine: EngineDep) -> Deleted:
    """Delete many relationships; unknown ids are skipped."""
    who.check_body(body.project)
    return Deleted(deleted=engine.delete("relationship", body.ids, project=who.project))
