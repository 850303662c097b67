"""A document's sections: Markdown and reStructuredText headings, and blocks read
from HTML or DOCX, into :class:`~kgsearch.document_values.Section` values (pure).

A section runs from its heading to the next heading; its path is the titles of the
headings above it, outer to inner. Text before the first heading is a section with
an empty path. A heading with no text of its own (``# Guide`` right before
``## Install``) is folded into the next section, so no chunk is a lone heading.
Headings, code blocks, inline code and tables stay in the text, and their ranges are
recorded as ``unmined`` so the extractors never see them (a heading is a label, and
mined it would run into the first sentence under it).

Markdown, as CommonMark and GitHub write it: ATX headings (``#`` to ``######``),
setext headings (a short paragraph, up to two lines, underlined with ``===`` or
``---``), fenced code (a fence that is never closed runs to the next ``#`` heading,
so one broken fence does not swallow the document), indented code after a blank line
(not inside a list), inline code spans, pipe tables and a YAML front matter block.
"""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from kgsearch.document_values import Section, Span

__all__ = [
    "Block",
    "markdown_sections",
    "markdown_unmined",
    "plain_sections",
    "rst_sections",
    "sections_from_blocks",
]

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_ATX_CLOSE = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_TITLE_CHARS = 200
_FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_INDENTED = re.compile(r"^(?: {4}|\t)")
_LIST = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_TABLE_RULE = re.compile(r"^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_RST_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$")
_RST_LITERAL = re.compile(r"^([ \t]*)(?:\.\. (?:code-block|code|sourcecode)::.*|.*::)[ \t]*$")
_RST_GRID = re.compile(r"^[ \t]*\+(?:[-=]+\+)+[ \t]*$")


@dataclass(frozen=True)
class _Heading:
    start: int
    body: int  # where the heading's own text ends (before its line break)
    level: int
    title: str


@dataclass(frozen=True)
class Block:
    """A piece of a document read from a structured format (HTML, DOCX).

    Attributes:
        kind: ``heading``, ``text``, ``code`` or ``table`` (code and tables are
            unmined whole).
        text: Its text.
        level: A heading's level (1 outermost).
        unmined: Ranges of a ``text`` block not to mine (inline code).
    """

    kind: Literal["heading", "text", "code", "table"]
    text: str
    level: int = 0
    unmined: tuple[Span, ...] = ()


def plain_sections(text: str) -> tuple[Section, ...]:
    """One section with an empty path (plain text has no headings); none if blank."""
    return (Section((), text),) if text.strip() else ()


def _clip(spans: Sequence[Span], start: int, end: int) -> tuple[Span, ...]:
    """The parts of ``spans`` (sorted, not overlapping) inside ``[start, end)``,
    relative to ``start``."""
    out: list[Span] = []
    for k in range(bisect.bisect_right(spans, start, key=lambda span: span[1]), len(spans)):
        a, b = spans[k]
        if a >= end:
            break
        out.append((max(a, start) - start, min(b, end) - start))
    return tuple(out)


def _build(text: str, headings: Sequence[_Heading], unmined: Sequence[Span]) -> tuple[Section, ...]:
    """Sections from the headings found in ``text`` (in order), heading-only ones
    folded into the next."""
    # headings are labels, not statements: mined, one would run into the first sentence
    unmined = _merged([*unmined, *((h.start, h.body) for h in headings)])
    if not headings:
        return (Section((), text, _clip(unmined, 0, len(text))),) if text.strip() else ()
    regions: list[tuple[int, int, int, tuple[str, ...]]] = []
    if text[: headings[0].start].strip():
        regions.append((0, 0, headings[0].start, ()))
    stack: list[tuple[int, str]] = []
    for i, heading in enumerate(headings):
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        stack.append((heading.level, heading.title))
        end = headings[i + 1].start if i + 1 < len(headings) else len(text)
        regions.append((heading.start, heading.body, end, tuple(t for _, t in stack)))
    sections: list[Section] = []
    folded: int | None = None
    for i, (start, body, end, path) in enumerate(regions):
        begin = start if folded is None else folded
        if not text[body:end].strip() and i + 1 < len(regions):
            folded = begin
            continue
        folded = None
        sections.append(Section(path, text[begin:end], _clip(unmined, begin, end)))
    return tuple(sections)


def _merged(spans: Iterable[Span]) -> list[Span]:
    out: list[Span] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


class _Lines:
    """A text's lines with their offsets."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines(keepends=True)
        self.starts: list[int] = []
        position = 0
        for line in self.lines:
            self.starts.append(position)
            position += len(line)

    def __len__(self) -> int:
        return len(self.lines)

    def bare(self, i: int) -> str:
        """Line ``i`` without its line break."""
        return self.lines[i].rstrip("\r\n")

    def end(self, i: int) -> int:
        """Where line ``i``'s text ends (before its line break)."""
        return self.starts[i] + len(self.bare(i))

    def after(self, i: int) -> int:
        """Where line ``i`` ends, line break included."""
        return self.starts[i] + len(self.lines[i])


def _front_matter(lines: _Lines) -> int:
    """How many lines a YAML front matter block at the top takes (0 without one)."""
    if not len(lines) or lines.bare(0).rstrip() != "---":
        return 0
    for j in range(1, len(lines)):
        if lines.bare(j).rstrip() in ("---", "..."):
            return j + 1
    return 0


class _Fences:
    """Where fenced blocks end, found without rescanning the text for every fence: the
    lines that can close a fence and the heading lines, listed once."""

    def __init__(self, lines: _Lines) -> None:
        self.lines = lines
        self.closers: dict[str, list[tuple[int, int]]] = {"`": [], "~": []}
        self.headings: list[int] = []
        for j in range(len(lines)):
            bare = lines.bare(j)
            closer = _FENCE_CLOSE.match(bare)
            if closer:
                self.closers[closer.group(1)[0]].append((j, len(closer.group(1))))
            elif _ATX.match(bare):
                self.headings.append(j)
        # a fence this long found no closer, so no later fence as long will
        self.unclosed = {"`": sys.maxsize, "~": sys.maxsize}

    def end(self, i: int, fence: str) -> int:
        """The last line of the fenced block opened on line ``i``."""
        char, length = fence[0], len(fence)
        if length < self.unclosed[char]:
            closers = self.closers[char]
            for j, size in closers[bisect.bisect_right(closers, (i, sys.maxsize)) :]:
                if size >= length:
                    return j
            self.unclosed[char] = length
        at = bisect.bisect_right(self.headings, i)
        last = self.headings[at] - 1 if at < len(self.headings) else len(self.lines) - 1
        while last > i and not self.lines.bare(last).strip():
            last -= 1
        return last


def _indented_end(lines: _Lines, i: int) -> int:
    """The last non-blank line of the indented code block starting on line ``i``."""
    last = i
    for j in range(i, len(lines)):
        bare = lines.bare(j)
        if bare.strip() and not _INDENTED.match(bare):
            break
        if bare.strip():
            last = j
    return last


def _table_end(lines: _Lines, i: int) -> int:
    """The last row of the pipe table whose header is line ``i``."""
    last = i + 1
    for j in range(i + 2, len(lines)):
        bare = lines.bare(j)
        if not bare.strip() or "|" not in bare:
            break
        last = j
    return last


def _atx(bare: str) -> tuple[int, str] | None:
    match = _ATX.match(bare)
    if not match:
        return None
    title = _ATX_CLOSE.sub("", match.group(2) or "").strip()
    return (len(match.group(1)), title) if title else None


def _is_table(lines: _Lines, i: int) -> bool:
    if "|" not in lines.bare(i) or i + 1 >= len(lines):
        return False
    rule = lines.bare(i + 1)
    return "|" in rule and bool(_TABLE_RULE.match(rule))


def _short(lines: _Lines, first: int, end: int) -> bool:
    """Whether lines ``first`` to ``end`` (excluded) may be a setext heading's title: a
    longer paragraph over ``---`` is far more often prose over a rule than a title, and
    taken as a title it would not be mined."""
    return end - first <= 2 and sum(len(lines.bare(j)) for j in range(first, end)) <= _TITLE_CHARS


def markdown_sections(text: str) -> tuple[Section, ...]:
    """Split Markdown into sections at its headings (see the module docstring)."""
    return _build(text, *_markdown(text))


def markdown_unmined(text: str) -> list[Span]:
    """The ranges of Markdown ``text`` not to mine: headings, code, tables."""
    headings, unmined = _markdown(text)
    return _merged([*unmined, *((h.start, h.body) for h in headings)])


def _markdown(text: str) -> tuple[list[_Heading], list[Span]]:
    """The headings and the unmined ranges of Markdown ``text``."""
    lines = _Lines(text)
    fences = _Fences(lines)
    headings: list[_Heading] = []
    unmined: list[Span] = []
    i = _front_matter(lines)
    if i:
        unmined.append((0, lines.end(i - 1)))
    paragraph: int | None = None  # first line of the prose paragraph being read
    blank_before, in_list = True, False
    while i < len(lines):
        bare = lines.bare(i)
        fence = _FENCE.match(bare)
        last = i
        if fence and not (fence.group(2)[0] == "`" and "`" in fence.group(3)):
            last = fences.end(i, fence.group(2))
            unmined.append((lines.starts[i], lines.end(last)))
        elif not bare.strip():
            paragraph, blank_before = None, True
            i += 1
            continue
        elif _INDENTED.match(bare) and blank_before and paragraph is None and not in_list:
            last = _indented_end(lines, i)
            unmined.append((lines.starts[i], lines.end(last)))
        elif (found := _atx(bare)) is not None:
            headings.append(_Heading(lines.starts[i], lines.end(i), *found))
            paragraph, blank_before, in_list = None, True, False
            i += 1
            continue
        elif _SETEXT.match(bare) and paragraph is not None and _short(lines, paragraph, i):
            title = " ".join(lines.bare(j).strip() for j in range(paragraph, i))
            level = 1 if bare.strip()[0] == "=" else 2
            headings.append(_Heading(lines.starts[paragraph], lines.end(i), level, title))
            paragraph, blank_before = None, True
            i += 1
            continue
        elif _is_table(lines, i):
            last = _table_end(lines, i)
            unmined.append((lines.starts[i], lines.end(last)))
        else:
            if _LIST.match(bare):
                in_list, paragraph = True, None
            elif blank_before and not _INDENTED.match(bare):
                in_list = False
            if paragraph is None and not in_list:
                paragraph = i
            unmined.extend(
                (lines.starts[i] + m.start(), lines.starts[i] + m.end())
                for m in _INLINE_CODE.finditer(bare)
            )
            blank_before = False
            i += 1
            continue
        paragraph, blank_before = None, False
        i = last + 1
    return headings, _merged(unmined)


def _rst_title(lines: _Lines, i: int) -> tuple[int, int, str, tuple[str, bool]] | None:
    """(first line, last line, title, adornment style) of a title on line ``i``."""
    title = lines.bare(i).strip()
    if not title or _RST_ADORNMENT.match(lines.bare(i)) or i + 1 >= len(lines):
        return None
    under = _RST_ADORNMENT.match(lines.bare(i + 1))
    if not under:
        return None
    over = i > 0 and lines.bare(i - 1).strip() == lines.bare(i + 1).strip()
    first = i - 1 if over else i
    if first > 0 and lines.bare(first - 1).strip():
        return None
    return first, i + 1, title, (under.group(1), over)


def rst_sections(text: str) -> tuple[Section, ...]:
    """Split reStructuredText into sections at its titles (levels in the order their
    adornment styles first appear, as docutils does); literal blocks (after ``::``
    and ``code-block`` directives) and grid tables are unmined."""
    lines = _Lines(text)
    headings: list[_Heading] = []
    unmined: list[Span] = []
    styles: list[tuple[str, bool]] = []
    i = 0
    while i < len(lines):
        bare = lines.bare(i)
        title = _rst_title(lines, i)
        if title is not None:
            first, last, name, style = title
            if style not in styles:
                styles.append(style)
            if headings and headings[-1].start >= lines.starts[first]:
                headings.pop()  # the overline was taken for a title of its own
            headings.append(
                _Heading(lines.starts[first], lines.end(last), styles.index(style) + 1, name)
            )
            i = last + 1
            continue
        if _RST_GRID.match(bare):
            last = i
            while last + 1 < len(lines) and lines.bare(last + 1).lstrip()[:1] in ("+", "|"):
                last += 1
            unmined.append((lines.starts[i], lines.end(last)))
            i = last + 1
            continue
        literal = _RST_LITERAL.match(bare)
        if literal and bare.strip():
            indent = len(literal.group(1).expandtabs())
            j, last = i + 1, -1
            while j < len(lines):
                line = lines.bare(j)
                if line.strip() and len(line) - len(line.lstrip()) <= indent:
                    break
                if line.strip():
                    last = j
                j += 1
            if last > i:
                unmined.append((lines.starts[i + 1], lines.end(last)))
                i = last + 1
                continue
        i += 1
    return _build(text, headings, unmined)


def sections_from_blocks(blocks: Iterable[Block]) -> tuple[str, tuple[Section, ...]]:
    """The text (blocks joined by blank lines) and sections of a structured document.

    Returns:
        The whole text and its sections (headings kept as a line of their section).
    """
    parts: list[str] = []
    headings: list[_Heading] = []
    unmined: list[Span] = []
    position = 0
    for block in blocks:
        text = block.text.strip("\n").rstrip() if block.kind == "code" else block.text.strip()
        if not text:
            continue
        lead = len(block.text) - len(block.text.lstrip()) if block.kind == "text" else 0
        if parts:
            position += 2
        if block.kind == "heading":
            title = " ".join(text.split())
            headings.append(_Heading(position, position + len(text), max(block.level, 1), title))
        elif block.kind in ("code", "table"):
            unmined.append((position, position + len(text)))
        else:
            unmined.extend(
                (position + a, position + b)
                for a, b in _clip(block.unmined, lead, lead + len(text))
            )
        parts.append(text)
        position += len(text)
    text = "\n\n".join(parts)
    return text, _build(text, headings, unmined)
