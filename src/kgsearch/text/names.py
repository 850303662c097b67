"""Keys and types for extracted names: the same entity written two ways gets one key.

A key is the name under Unicode NFKC, casefolded, with runs of whitespace made one
space and surrounding quotes and punctuation removed. It never drops non-Latin
letters, so "東京" and "Москва" keep keys of their own instead of collapsing to "".
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["entity_key", "entity_type", "relation_type"]

_SPACE = re.compile(r"\s+")
_EDGE = "\"'`“”‘’«»()[]{}<>.,;:!?*#_-–— "
_NOT_WORD = re.compile(r"[^\w]+")


def _clean(text: str) -> str:
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip().strip(_EDGE).strip()


def entity_key(name: str) -> str:
    """The key of an extracted entity name ("" when nothing is left)."""
    return _clean(name).casefold()


def _label(text: str, default: str) -> str:
    cleaned = _NOT_WORD.sub("_", _clean(text).casefold()).strip("_")
    return cleaned or default


def entity_type(type_: str) -> str:
    """A type as stored: casefolded words joined by ``_`` ("Person" → ``person``,
    "GEO" → ``geo``, "legal case" → ``legal_case``); ``entity`` when blank."""
    return _label(type_, "entity")


def relation_type(relation: str) -> str:
    """A relationship type from a label ("works for" → ``works_for``); ``related_to``
    when blank."""
    return _label(relation, "related_to")
