"""Value encoding shared by the SQL stores: UTC timestamps, stored JSON, query words."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from kgsearch.text.stopwords import STOPWORDS

__all__ = ["dumps", "iso", "now_iso", "parse_dt", "query_terms", "words"]

_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_QUERY_TERMS = 32
_QUERY_STOPWORDS = STOPWORDS | {"had", "will"}


def now_iso() -> str:
    """Current UTC time as ISO-8601."""
    return datetime.now(UTC).isoformat()


def iso(value: datetime | None) -> str | None:
    """A datetime as ISO-8601 in UTC (naive values are taken as UTC)."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat()


def parse_dt(value: str | datetime | None) -> datetime | None:
    """Parse a stored ISO-8601 timestamp (a driver's ``datetime`` passes through)."""
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value) if value else None


def dumps(value: Any) -> str:
    """Compact, deterministic JSON for stored columns."""
    if not value and isinstance(value, dict | list | tuple):
        return "{}" if isinstance(value, dict) else "[]"
    return json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), sort_keys=False, default=str
    )


def query_terms(query: str) -> list[str]:
    """The searchable words of any user string: ``\\w`` runs, lowercased, deduplicated,
    stopwords dropped (unless nothing else is left), at most 32."""
    words = [w.lower() for w in _WORD.findall(query)]
    terms = [w for w in dict.fromkeys(words) if w not in _QUERY_STOPWORDS][:_MAX_QUERY_TERMS]
    if not terms and words:
        terms = list(dict.fromkeys(words))[:_MAX_QUERY_TERMS]
    return terms


def words(text: str, limit: int = 200_000) -> str:
    """The text's ``\\w`` runs joined by spaces (at most ``limit`` characters): what a
    lexical index that splits words like :func:`query_terms` should see, so "3.12",
    "docs.python.org" or "guido@python.org" are found by their parts."""
    return " ".join(_WORD.findall(text[: limit * 2]))[:limit]
