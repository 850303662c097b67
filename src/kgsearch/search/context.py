"""RAG context: search hits formatted as prompt lines within a token budget (seed 000).

Objects render as ``- **Person**: Ada — role=CEO, company=Acme`` (fields in sorted
order, so the same hits always give the same text), relationships as their triplet
text and chunks as snippets. Lines are added best first until the budget is used;
the last line may be shortened, always at a character boundary, never inside one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from kgsearch.search.request import GraphResult, RelationshipResult, TextResult

__all__ = ["format_context", "format_line"]

_MAX_FIELD_CHARS = 80


def _value(value: Any) -> str:
    if isinstance(value, list):
        text = ", ".join(str(v) for v in value)
    elif isinstance(value, dict):
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    else:
        text = str(value)
    return text if len(text) <= _MAX_FIELD_CHARS else text[: _MAX_FIELD_CHARS - 1] + "…"


def format_line(result: GraphResult | RelationshipResult | TextResult) -> str:
    """One context line for a result."""
    if isinstance(result, GraphResult):
        fields = ", ".join(
            f"{k}={_value(v)}"
            for k, v in sorted(result.fields.items())
            if v not in (None, "", [], {})
        )
        line = f"- **{result.object_type}**: {result.name}"
        return f"{line} — {fields}" if fields else line
    if isinstance(result, RelationshipResult):
        return f"- {result.triplet_text}"
    return "- " + " ".join(result.snippet.split())


def format_context(
    results: Sequence[GraphResult | RelationshipResult | TextResult],
    *,
    max_tokens: int,
    count_tokens: Callable[[str], int],
) -> str:
    """Join result lines, best first, while they fit in ``max_tokens``.

    Args:
        results: Search results, best first.
        max_tokens: Budget in the counter's tokens.
        count_tokens: Token counter (the embedder's, or any other).

    Returns:
        The context text ('' when nothing fits).
    """
    lines: list[str] = []
    for result in results:
        line = format_line(result)
        candidate = "\n".join([*lines, line])
        if count_tokens(candidate) <= max_tokens:
            lines.append(line)
            continue
        # Shorten the last line by whole characters (str slicing never splits one).
        lo, hi = 0, len(line)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count_tokens("\n".join([*lines, line[:mid] + "…"])) <= max_tokens:
                lo = mid
            else:
                hi = mid - 1
        if lo > len(line.split(" ", 1)[0]) + 1:
            lines.append(line[:lo] + "…")
        break
    return "\n".join(lines)
