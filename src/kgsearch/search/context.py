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

__all__ = ["format_context", "format_line", "format_sections"]

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
            if v not in (None, "", [], {}) and not k.startswith("_")
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


_SECTIONS = (("Entities", "E"), ("Relationships", "R"), ("Sources", "S"))


def _section_of(result: GraphResult | RelationshipResult | TextResult) -> int:
    if isinstance(result, GraphResult):
        return 0
    return 1 if isinstance(result, RelationshipResult) else 2


def _cited_line(result: GraphResult | RelationshipResult | TextResult, cite: str) -> str:
    if isinstance(result, GraphResult):
        description = str(result.fields.get("description") or "")
        head = f"[{cite}] {result.name} ({result.object_type})"
        return f"{head}: {' '.join(description.split())}" if description else head
    if isinstance(result, RelationshipResult):
        return f"[{cite}] {' '.join(result.triplet_text.split())}"
    return f"[{cite}] {' '.join(result.snippet.split())}"


def format_sections(
    results: Sequence[GraphResult | RelationshipResult | TextResult],
    *,
    max_tokens: int,
    count_tokens: Callable[[str], int],
) -> tuple[str, dict[str, str]]:
    """The hits as ``Entities``, ``Relationships`` and ``Sources`` sections, each item
    with a citation (``[E1]``, ``[R1]``, ``[S1]``), within ``max_tokens``.

    Packing: first each section's best hit (entities, relationships, sources, so no
    section starves while another fills the budget), then every other hit in the
    search's order. An item that does not fit whole is cut at a character boundary
    when at least :data:`_MIN_CUT` characters of it fit, else skipped (a smaller later
    one may still fit). Within a section items keep the search's order.

    Returns:
        The text ('' when nothing fits) and the citations: citation → row id.
    """
    firsts: dict[int, int] = {}
    for i, result in enumerate(results):
        firsts.setdefault(_section_of(result), i)
    order = [
        *sorted(firsts.values()),
        *(i for i in range(len(results)) if i not in firsts.values()),
    ]
    lines = {i: _cited_line(r, "{cite}") for i, r in enumerate(results)}
    chosen: dict[int, str] = {}

    def fits(extra: dict[int, str]) -> bool:
        return count_tokens(_render(results, {**chosen, **extra})[0]) <= max_tokens

    for i in order:
        if fits({i: lines[i]}):
            chosen[i] = lines[i]
            continue
        lo, hi = 0, len(lines[i])
        while lo < hi:  # the longest prefix that fits (str slicing never splits a character)
            mid = (lo + hi + 1) // 2
            if fits({i: lines[i][:mid] + "…"}):
                lo = mid
            else:
                hi = mid - 1
        if lo >= _MIN_CUT:
            chosen[i] = lines[i][:lo] + "…"
    return _render(results, chosen)


_MIN_CUT = 40
"""Characters of an item worth keeping when it must be cut."""


def _render(
    results: Sequence[GraphResult | RelationshipResult | TextResult], chosen: dict[int, str]
) -> tuple[str, dict[str, str]]:
    blocks: list[str] = []
    citations: dict[str, str] = {}
    for section, (title, prefix) in enumerate(_SECTIONS):
        lines: list[str] = []
        for i in sorted(chosen):
            if _section_of(results[i]) != section:
                continue
            cite = f"{prefix}{len(lines) + 1}"
            citations[cite] = results[i].id
            lines.append(chosen[i].replace("{cite}", cite, 1))
        if lines:
            blocks.append("\n".join([f"## {title}", *lines]))
    return "\n\n".join(blocks), citations
