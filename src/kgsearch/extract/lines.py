"""The line formats of a reply: ``Entity1 [relation] Entity2: description`` (seed 003;
a wrapped description continues on the next lines) and ``relation(subject, object)``
triples (Text2KGBench style; several per line, ``\\_`` escapes, bullets, numbering).

Both are read in time linear in the line's length: each part of a bracket line stops at
the one character that may follow it, triple heads cannot start inside a word, and
parentheses are matched in one pass.
"""

from __future__ import annotations

import re

from kgsearch.extract.parsed import MAX_MALFORMED, PIECE_KEPT, QUOTES, Parsed, unquote
from kgsearch.extract.schema import ExtractedRelation

__all__ = ["parse_lines"]

_LIST_PREFIX = re.compile(r"^\s*(?:[-*•]+|\d+[.)]|[a-z][.)]|#+)\s+", re.I)
# Each part stops at the one character that may follow it, so a line is matched in one
# pass (a lazy part followed by \s* backtracked quadratically over long runs of spaces).
_BRACKET_LINE = re.compile(
    r"^(?P<src>[^\[\]:]+)\[(?P<rel>[^\[\]]+)\](?P<tgt>[^\[\]:]+):(?P<desc>.*)$"
)
# The look-behind keeps a head from starting inside a word: without it each position of
# a long word was tried, and each try ran to the word's end.
_TRIPLE_HEAD = re.compile(r"(?<![A-Za-z0-9_\\])([A-Za-z][A-Za-z0-9_\\]*)\(")


def parse_lines(text: str) -> Parsed:
    """Read bracket lines and triples from ``text`` (format ``brackets``, ``triples``,
    both joined by ``+``, or ``none``)."""
    parsed = Parsed(format="none")
    last: ExtractedRelation | None = None
    wrapped: list[str] = []  # joined once: appending line by line was quadratic
    formats: set[str] = set()

    def finish() -> None:
        if last is not None and wrapped:
            last.description = " ".join([last.description, *wrapped]).strip()
        wrapped.clear()

    for raw_line in text.replace("\\_", "_").replace("\\*", "*").split("\n"):
        line = _strip_list_prefix(raw_line.strip().strip("`").strip())
        if not line:
            finish()
            last = None
            continue
        bracket = _bracket_relation(line.strip(QUOTES + " "))
        if bracket is not None:
            finish()
            last = bracket
            parsed.add_relation(last)
            formats.add("brackets")
            continue
        if _read_triples(line, parsed):
            finish()
            formats.add("triples")
            last = None
            continue
        if last is not None:  # a wrapped description
            wrapped.append(line.strip(QUOTES))
    finish()
    if formats:
        parsed.format = "+".join(sorted(formats))
    return parsed


def _strip_list_prefix(line: str) -> str:
    return _LIST_PREFIX.sub("", line, count=1).strip()


def _bracket_relation(line: str) -> ExtractedRelation | None:
    match = _BRACKET_LINE.match(line)
    if match is None:
        return None
    source, target = unquote(match.group("src")), unquote(match.group("tgt"))
    if not source or not target:
        return None
    return ExtractedRelation(
        source=source,
        target=target,
        relation=match.group("rel").strip(),
        description=match.group("desc").strip().strip(QUOTES).strip(),
    )


def _read_triples(line: str, parsed: Parsed) -> bool:
    """Read every ``rel(s, o)`` in ``line``; True when the line held at least one.

    A triple nested in another's argument (``rank(a, next_rank(b, c))``) is read on
    its own and the outer one, which has no plain endpoint, is rejected.
    """
    if "(" not in line or ")" not in line:
        return False
    closing = _closing_parentheses(line)
    heads = (
        m
        for m in _TRIPLE_HEAD.finditer(line)
        if m.end() - 1 in closing and not (m.start() > 0 and line[m.start() - 1].isalnum())
    )
    seen = False
    pos = 0
    match = next(heads, None)
    while match is not None:
        following = next(heads, None)
        close = closing[match.end() - 1]
        if match.start() >= pos:
            seen = True
            if following is not None and following.start() < close:
                # nested: the heads inside are read in turn
                _malformed_span(parsed, line, match.start(), close + 1)
            else:
                subject, obj = _split_args(line[match.end() : close])
                if re.search(r"\w", subject) and re.search(r"\w", obj):
                    relation = match.group(1).replace("\\", "")
                    parsed.add_relation(
                        ExtractedRelation(source=subject, target=obj, relation=relation)
                    )
                else:
                    _malformed_span(parsed, line, match.start(), close + 1)
                pos = close + 1
        match = following
    return seen


def _malformed_span(parsed: Parsed, line: str, start: int, end: int) -> None:
    """Reject ``line[start:end]``, copying at most its start, and only while kept."""
    if len(parsed.rejected) >= MAX_MALFORMED:
        parsed.more_malformed += 1
    else:
        parsed.malformed(line[start : min(end, start + PIECE_KEPT)])


def _closing_parentheses(line: str) -> dict[int, int]:
    """Each balanced ``(``'s position mapped to its ``)``'s, in one pass."""
    closing: dict[int, int] = {}
    opened: list[int] = []
    for match in re.finditer(r"[()]", line):
        if match.group() == "(":
            opened.append(match.start())
        elif opened:
            closing[opened.pop()] = match.start()
    return closing


def _split_args(args: str) -> tuple[str, str]:
    """Subject and object: split at the first comma outside quotes."""
    quote: str | None = None
    for pos, char in enumerate(args):
        if quote:
            if char == quote:
                quote = None
        elif char in '"“':
            quote = "”" if char == "“" else '"'
        elif char == ",":
            return unquote(args[:pos]), unquote(args[pos + 1 :])
    return unquote(args), ""
