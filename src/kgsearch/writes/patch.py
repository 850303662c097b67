"""PATCH semantics for objects and relationships (REST/MCP updates).

Properties follow a one-level JSON merge patch (a None value removes a key); the other
changeable fields are replaced; fields that identify a row (type, key, endpoints) are
fixed. These functions only build the new input value; :mod:`kgsearch.writes.graph`
writes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import ValidationError

from kgsearch.errors import InvalidRequest
from kgsearch.model import GraphObject, ObjectIn, Relationship, RelationshipIn

__all__ = [
    "check_object_changes",
    "check_relationship_changes",
    "patched_object",
    "patched_relationship",
]

_OBJECT_FIELDS = {"tags", "labels", "properties"}
_RELATIONSHIP_FIELDS = {"label", "weight", "valid_from", "valid_to", "description", "source_chunks"}


def check_object_changes(changes: Mapping[str, Any]) -> None:
    """Reject fields an object patch may not change."""
    _check_fields(changes, _OBJECT_FIELDS)


def check_relationship_changes(changes: Mapping[str, Any]) -> None:
    """Reject fields a relationship patch may not change."""
    _check_fields(changes, _RELATIONSHIP_FIELDS | {"properties"})


def patched_object(current: GraphObject, changes: Mapping[str, Any]) -> ObjectIn:
    """The object input after applying ``changes`` to ``current``."""
    data: dict[str, Any] = {
        "type": current.type,
        "key": current.key,
        "id": current.id,
        "tags": current.tags,
        "labels": current.labels,
    }
    data |= {k: v for k, v in changes.items() if k != "properties"}
    data["properties"] = _merge_patch(current.properties, changes.get("properties"))
    return _validated(ObjectIn, data)


def patched_relationship(current: Relationship, changes: Mapping[str, Any]) -> RelationshipIn:
    """The relationship input after applying ``changes`` to ``current``."""
    data = current.model_dump(include=_RELATIONSHIP_FIELDS | {"type", "id"})
    data |= {"source": current.source_id, "target": current.target_id}
    data |= {k: v for k, v in changes.items() if k != "properties"}
    data["properties"] = _merge_patch(current.properties, changes.get("properties"))
    return _validated(RelationshipIn, data)


def _check_fields(changes: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(changes) - allowed)
    if unknown:
        raise InvalidRequest(
            f"cannot change {', '.join(unknown)}; changeable: {', '.join(sorted(allowed))}",
            details={"unknown": unknown},
        )


def _merge_patch(current: Mapping[str, Any], patch: Any) -> dict[str, Any]:
    """RFC 7396 merge patch of a properties object (one level: None removes a key)."""
    if patch is None:
        return dict(current)
    if not isinstance(patch, Mapping):
        raise InvalidRequest("properties must be an object")
    merged = dict(current)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


_M = TypeVar("_M", ObjectIn, RelationshipIn)


def _validated(model: type[_M], data: dict[str, Any]) -> _M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidRequest(
            f"invalid change: {_errors(exc)}",
            details={"errors": exc.errors(include_url=False, include_context=False)},
        ) from None


def _errors(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
