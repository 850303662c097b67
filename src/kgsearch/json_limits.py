"""Limits on the JSON that properties and metadata may hold (:func:`check_json`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_JSON_CHARS", "MAX_JSON_DEPTH", "check_json"]

MAX_JSON_DEPTH = 32
"""Properties and metadata nest at most this deep (objects and lists)."""

MAX_JSON_CHARS = 8_000_000
"""Properties and metadata hold at most about this many characters of keys and text."""


def check_json(value: Mapping[str, Any], what: str) -> Mapping[str, Any]:
    """Refuse a JSON value nested deeper than :data:`MAX_JSON_DEPTH`, larger than
    :data:`MAX_JSON_CHARS`, or holding a non-finite number (they would be stored and
    then break every read of the row).

    Raises:
        ValueError: With the path of the first problem.
    """
    if isinstance(value, dict) and _within_limits(value):
        return value
    size = 0
    # each item's place is (its parent's place, its key or index), spelled out only
    # for an error message
    stack: list[tuple[Any, Any, int]] = [(value, None, 1)]
    while stack:
        item, place, depth = stack.pop()
        if isinstance(item, dict | list) and depth > MAX_JSON_DEPTH:
            raise ValueError(f"{_path(what, place)} nests deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(item, dict):
            for key, inner in item.items():
                size += len(str(key))
                stack.append((inner, (place, f".{key}"), depth + 1))
        elif isinstance(item, list):
            stack.extend((inner, (place, i), depth + 1) for i, inner in enumerate(item))
        elif isinstance(item, str):
            size += len(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"{_path(what, place)} is {item}; numbers must be finite")
        if size > MAX_JSON_CHARS:
            raise ValueError(f"{what} is larger than {MAX_JSON_CHARS:,} characters")
    return value


def _within_limits(value: dict[str, Any]) -> bool:
    """Whether :func:`check_json` finds nothing wrong with ``value``: the same checks
    without tracking each item's place (large properties, such as a popular object's
    contributions, are checked on every write); :func:`check_json` walks again, slowly,
    only to name the place of a problem."""
    size = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return False
        if isinstance(item, dict):
            size += sum(len(str(key)) for key in item)
            children: Any = item.values()
        else:
            children = item
        for inner in children:
            if isinstance(inner, str):
                size += len(inner)
            elif isinstance(inner, dict | list):
                stack.append((inner, depth + 1))
            elif isinstance(inner, float) and not math.isfinite(inner):
                return False
    return size <= MAX_JSON_CHARS


def _path(what: str, place: Any) -> str:
    """``what.key[0]…`` from a place of :func:`check_json` (a chain of (parent, step))."""
    steps: list[str] = []
    while place is not None:
        place, step = place
        steps.append(f"[{step}]" if isinstance(step, int) else step)
    return what + "".join(reversed(steps))
