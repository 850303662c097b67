"""Rendering and classifying object property values for graph-aware text.

Turns one property (name and raw JSON-ish value) into the ``Label`` and ``value`` of a
``[Label: value]`` bracket, and sorts it into the truncation priority classes of seed 001:
options/enum fields, dates, references and plain text. Everything here is pure.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from datetime import date, datetime
from enum import IntEnum
from typing import Any

__all__ = [
    "LONG_TEXT_CHARS",
    "MAX_VALUE_CHARS",
    "FieldKind",
    "classify_field",
    "cut",
    "field_label",
    "normalize_tag",
    "render_value",
]

MAX_VALUE_CHARS = 50
"""A rendered field value is cut to at most this many characters (ellipsis included)."""

LONG_TEXT_CHARS = 200
"""Strings longer than this are paragraphs: content, not a field, in the default selection."""

_SHORT_OPTION_CHARS = 30
_SHORT_OPTION_WORDS = 3
_DATE_WORDS = frozenset({"date", "dates", "year", "years"})
_ISO_DATE = re.compile(
    r"\d{4}-\d{2}-\d{2}"
    r"(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?",
)
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[\s_\-]+")
_TRAILING_PUNCTUATION = " \t,;:-"


class FieldKind(IntEnum):
    """Truncation priority of a field; a lower value is kept longer."""

    OPTION = 1
    DATE = 2
    REFERENCE = 3
    TEXT = 5


@functools.lru_cache(maxsize=4096)
def normalize_tag(tag: str) -> str:
    """Return the ``#tag`` form of a type name: lowercased, blanks as underscores.

    Args:
        tag: A type or tag name, with or without a leading ``#``.

    Returns:
        ``"#movie_star"`` for ``"Movie Star"``; ``""`` when nothing is left.
    """
    words = tag.strip().lstrip("#").lower().split()
    return "#" + "_".join(words) if words else ""


@functools.lru_cache(maxsize=4096)
def field_label(name: str) -> str:
    """Humanize a property name into a bracket label.

    Underscores, hyphens and camelCase boundaries become spaces; words are lowercased
    except all-caps acronyms; the first letter is capitalised.

    Args:
        name: The property name, e.g. ``"release_year"`` or ``"releaseYear"``.

    Returns:
        ``"Release year"`` for both examples above.
    """
    words = [
        word if len(word) > 1 and word.isupper() else word.lower()
        for word in _SEPARATORS.split(_CAMEL_BOUNDARY.sub(" ", name))
        if word
    ]
    label = " ".join(words)
    return label[:1].upper() + label[1:]


def _label_words(name: str) -> set[str]:
    return {word.lower() for word in _SEPARATORS.split(_CAMEL_BOUNDARY.sub(" ", name)) if word}


def cut(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    """Shorten ``text`` to at most ``limit`` characters, ending with ``…`` when cut.

    The cut falls on the last word boundary when that keeps at least half of the
    allowed characters; otherwise it falls mid-word.

    Args:
        text: Text whose whitespace is already collapsed.
        limit: Maximum length of the result, ellipsis included.

    Returns:
        ``text`` itself when short enough, else the shortened text plus ``…``.
    """
    if len(text) <= limit:
        return text
    room = limit - 1
    boundary = text.rfind(" ", 0, room + 1)
    head = text[:boundary] if boundary >= room // 2 else text[:room]
    return head.rstrip(_TRAILING_PUNCTUATION) + "…"


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _ref_name(value: Mapping[str, Any]) -> str | None:
    for key in ("name", "key"):
        candidate = value.get(key)
        if isinstance(candidate, str) and candidate.strip():
            return _collapse(candidate)
    return None


def _render_number(value: float) -> str:
    if math.isfinite(value) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def render_value(value: Any) -> str:
    """Render a property value compactly on one line (not yet cut).

    Strings have their whitespace collapsed; booleans become ``yes``/``no``; integral
    floats lose their ``.0``; dates use ISO format (datetimes to the minute); lists are
    joined with ``", "``; a reference dict (one with a ``name`` or ``key``) becomes that
    name; any other dict becomes compact JSON. Empty values render as ``""``.

    Args:
        value: A JSON-ish property value, or a ``date``/``datetime``.

    Returns:
        The rendered value, ``""`` for ``None`` and empty strings, lists or dicts.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return _collapse(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _render_number(value)
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="minutes")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        if not value:
            return ""
        name = _ref_name(value)
        if name is not None:
            return name
        return json.dumps(value, ensure_ascii=False, default=str)
    if isinstance(value, list | tuple):
        return ", ".join(item for item in map(render_value, value) if item)
    return _collapse(str(value))


def renders(value: Any) -> bool:
    """Whether :func:`render_value` gives ``value`` a non-empty text, found without
    rendering a dict (a non-empty one always has its name or its JSON)."""
    if isinstance(value, Mapping):
        return bool(value)
    if isinstance(value, list | tuple):
        return any(renders(item) for item in value)
    return bool(render_value(value))


def _is_date_value(value: Any) -> bool:
    if isinstance(value, date):
        return True
    return isinstance(value, str) and _ISO_DATE.fullmatch(value.strip()) is not None


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | date) and not isinstance(value, bool)


def classify_field(name: str, value: Any) -> FieldKind:
    """Sort a non-empty property into its truncation priority class (seed 001).

    - dates: ``date``/``datetime`` values, ISO date(time) strings, lists of those, and
      scalars under a name with the word ``date`` or ``year`` (``release_year``,
      ``startDate``; whole words, so ``update_count`` is not a date);
    - references: dicts with a ``name`` or ``key``, and lists of names or such dicts;
    - options: booleans, numbers and short strings (at most 30 characters, 3 words);
    - text: everything else (longer strings, other dicts and lists).

    Args:
        name: The property name.
        value: The raw property value.

    Returns:
        The field's kind.
    """
    items = list(value) if isinstance(value, list | tuple) else None
    if _is_date_value(value) or (items and all(_is_date_value(item) for item in items)):
        return FieldKind.DATE
    if _is_scalar(value) and _label_words(name) & _DATE_WORDS:
        return FieldKind.DATE
    if isinstance(value, Mapping):
        return FieldKind.REFERENCE if _ref_name(value) is not None else FieldKind.TEXT
    if items is not None:
        names = all(
            isinstance(item, str) or (isinstance(item, Mapping) and _ref_name(item) is not None)
            for item in items
        )
        return FieldKind.REFERENCE if names else FieldKind.TEXT
    if isinstance(value, bool | int | float):
        return FieldKind.OPTION
    if isinstance(value, str):
        text = _collapse(value)
        short = len(text) <= _SHORT_OPTION_CHARS and len(text.split()) <= _SHORT_OPTION_WORDS
        return FieldKind.OPTION if short else FieldKind.TEXT
    return FieldKind.TEXT
