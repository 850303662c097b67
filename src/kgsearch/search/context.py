"""RAG context: search hits formatted as prompt lines within a token budget (seed 000).

Objects render as ``- **Person**: Ada — role=CEO, company=Acme`` (fields in sorted
order, so the same hits always give the same text), relationships as their triplet
text and chunks as snippets. Lines are added best first until the budget is used;
the last line may be shortened, always at a character boundary, never inside one.

On a graph built from documents, :func:`pack_evidence` leads with the passages
instead: each chunk's whole body (not the search's snippet) with its source title and
section path, skipped rather than cut when it does not fit, and the entities and
relationships cited beside them in a share of the budget.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kgsearch.search.request import GraphResult, RelationshipResult, TextResult

__all__ = [
    "FACT_SHARE",
    "Passage",
    "format_context",
    "format_line",
    "format_sections",
    "pack_evidence",
    "sentences",
]

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


# Passages as the evidence (graphs built from documents) --------------------------------


@dataclass(frozen=True)
class Passage:
    """A chunk as the context shows it: its whole body, with where it came from.

    Attributes:
        text: The chunk's whole text (not the search's snippet).
        title: The title of its source document, if it has one.
        section: Its section path in that document (``Guide > Install``), if known.
    """

    text: str
    title: str | None = None
    section: str | None = None

    @property
    def body(self) -> str:
        """The text without its leading heading lines when the section is known (the
        label names it: the heading is not repeated)."""
        return _without_headings(self.text) if self.section else self.text

    @property
    def label(self) -> str:
        """``Title › Section`` (either part may be missing; '' for neither)."""
        return " › ".join(part for part in (self.title, self.section) if part)


FACT_SHARE = 0.0
"""Share of the budget kept for entities and relationships while passages are packed
(given back to passages when the graph items need less). At 0, the passages have the
whole budget first, and the facts fill what they leave (a passage that does not fit
leaves room, and a fact is a line). Measured on the document-QA benchmark
(scripts/bench_docqa.py): a fifth kept for facts cost HotpotQA's default recipe two
answers against naive chunk search (0.864 against 0.909); with none it answers as many,
with 3–4 facts cited beside 9–10 passages a question."""

_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+")


def sentences(text: str) -> list[str]:
    """``text`` split after sentence-ending punctuation followed by white space."""
    return [s.strip() for s in _SENTENCE_END.split(" ".join(text.split())) if s.strip()]


_HEADING_LINE = re.compile(r"\A[ \t]*#{1,6}[ \t][^\n]*(?:\n|\Z)")


def _passage_line(passage: Passage, body: str, cite: str | None) -> str:
    head = f"[{cite}] " if cite is not None else "- "
    where = f"({passage.label}) " if passage.label else ""
    if passage.section:  # the label names the section: its heading line is not repeated
        body = _without_headings(body)
    return f"{head}{where}{' '.join(body.split())}"


def _without_headings(text: str) -> str:
    """``text`` without the Markdown heading lines it starts with."""
    while _HEADING_LINE.match(text.lstrip("\n")):
        text = _HEADING_LINE.sub("", text.lstrip("\n"), count=1)
    return text


def _cut_at_sentence(passage: Passage, fits: Callable[[str], bool], cite: str | None) -> str | None:
    """The longest run of whole leading sentences of ``passage`` whose line fits; if
    not even the first sentence fits, its longest character prefix (with …)."""
    parts = sentences(passage.text)
    lo, hi = 0, len(parts)
    while lo < hi:  # the most whole sentences that fit
        mid = (lo + hi + 1) // 2
        if fits(_passage_line(passage, " ".join(parts[:mid]), cite)):
            lo = mid
        else:
            hi = mid - 1
    if lo:
        return _passage_line(passage, " ".join(parts[:lo]), cite)
    first = parts[0] if parts else passage.text
    lo, hi = 0, len(first)
    while lo < hi:  # str slicing never splits a character
        mid = (lo + hi + 1) // 2
        if fits(_passage_line(passage, first[:mid] + "…", cite)):
            lo = mid
        else:
            hi = mid - 1
    return _passage_line(passage, first[:lo] + "…", cite) if lo >= _MIN_CUT else None


def pack_evidence(
    results: Sequence[GraphResult | RelationshipResult | TextResult],
    passages: Mapping[str, Passage],
    *,
    max_tokens: int,
    count_tokens: Callable[[str], int],
    cited: bool = True,
) -> tuple[str, dict[str, str]]:
    """The context of a graph built from documents: the passages first, whole, and the
    entities and relationships beside them.

    Packing, within ``max_tokens``:

    1. Passages (the text results, in the search's order), each whole, in the budget
       less :data:`FACT_SHARE` of it when there are entities or relationships. A passage
       that does not fit is skipped for a later, smaller one; only the first passage,
       when it alone is over the budget, is cut, at a sentence boundary.
    2. Entities and relationships, whole, in the search's order, in what is left.
    3. Then the passages skipped in 1, if the graph items left room for them.

    Args:
        results: Search results, best first.
        passages: The whole body and origin of each text result, by chunk id (a text
            result missing here is shown by its snippet).
        max_tokens: Budget in the counter's tokens.
        count_tokens: Token counter (the embedder's).
        cited: Sections with citations (``## Sources`` [S1]…, then ``## Entities``
            [E1]… and ``## Relationships`` [R1]…); False: one line per item, the
            passages first.

    Returns:
        The text ('' when nothing fits) and the citations (citation → row id; empty
        when not ``cited``).
    """
    texts = [i for i, r in enumerate(results) if isinstance(r, TextResult)]
    others = [i for i, r in enumerate(results) if not isinstance(r, TextResult)]
    shown = {
        i: passages.get(r.id) or Passage(text=" ".join(r.snippet.split()))
        for i, r in enumerate(results)
        if isinstance(r, TextResult)
    }
    cite = "{cite}" if cited else None
    lines: dict[int, str] = {
        **{i: _passage_line(shown[i], shown[i].text, cite) for i in texts},
        **{
            i: _cited_line(results[i], "{cite}") if cited else format_line(results[i])
            for i in others
        },
    }
    chosen: dict[int, str] = {}

    def fits(extra: dict[int, str], budget: int = max_tokens) -> bool:
        text = _render_evidence(results, {**chosen, **extra}, cited)[0]
        return count_tokens(text) <= budget

    reserve = int(max_tokens * FACT_SHARE) if others else 0
    if texts:  # the best passage whole, or (alone over the budget) its leading sentences
        first, budget = texts[0], max(max_tokens - reserve, 1)

        def fits_first(line: str) -> bool:
            return fits({first: line}, budget)

        cut = lines[first] if fits({first: lines[first]}) else None
        cut = cut or _cut_at_sentence(shown[first], fits_first, cite)
        if cut is not None:
            chosen[first] = cut
    for i in texts[1:]:
        if fits({i: lines[i]}, max_tokens - reserve):
            chosen[i] = lines[i]
    for i in [*others, *texts]:
        if i not in chosen and fits({i: lines[i]}):
            chosen[i] = lines[i]
    return _render_evidence(results, chosen, cited)


def _render_evidence(
    results: Sequence[GraphResult | RelationshipResult | TextResult],
    chosen: dict[int, str],
    cited: bool,
) -> tuple[str, dict[str, str]]:
    """Sources first, then entities and relationships (or, uncited, passage lines then
    the others, each group in the search's order)."""
    order = sorted(chosen, key=lambda i: (_section_of(results[i]) != 2, i))
    if not cited:
        return "\n".join(chosen[i] for i in order), {}
    blocks: list[str] = []
    citations: dict[str, str] = {}
    for section in (2, 0, 1):
        title, prefix = _SECTIONS[section]
        lines: list[str] = []
        for i in order:
            if _section_of(results[i]) == section:
                cite = f"{prefix}{len(lines) + 1}"
                citations[cite] = results[i].id
                lines.append(chosen[i].replace("{cite}", cite, 1))
        if lines:
            blocks.append("\n".join([f"## {title}", *lines]))
    return "\n\n".join(blocks), citations
