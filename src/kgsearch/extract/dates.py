"""When a fact held: dates as written, normalised, and the periods they name.

A fact's ``valid_from``/``valid_to`` (:class:`~kgsearch.extract.schema.ExtractedRelation`)
are ISO 8601 dates at the precision the text gives: ``"1667"`` (a year), ``"2002-06"``
(a month) or ``"2002-06-29"`` (a day). :func:`normalise_date` reads what models and
texts write:

- ISO dates and date-times (``2019-03-04``, ``2019-03``, ``2019/03/04``,
  ``2019-03-04T10:00:00Z``, the time dropped);
- a year (``1999``, ``875``), a month and year (``March 2019``, ``Mar. 2019``), a day
  (``4 March 2019``, ``4th of March 2019``, ``March 4, 2019``);
- a decade (``the 1990s``) or a century (``the 17th century``): its first year for a
  start, its last year for an end (``valid_to`` of "in the 1990s" is ``1999``);
- a range in one string (``1991 to 1996``, ``1664–1667``, ``between 1690 and 1693``):
  its first part for a start, its last part for an end;
- "c.", "circa", "around", "early", "mid", "late" and "AD"/"CE" are ignored.

Anything else (``present``, ``300 BC``, ``February 30, 2001``, a sentence) is no date:
``None``, never an error, so a fact with an unreadable date is kept undated.

A date names a period; validity is an interval of instants. A fact starts at the first
instant of its ``valid_from`` period (:func:`period_start`) and ends at the first
instant after its ``valid_to`` period (:func:`period_end`, exclusive, as the store's
``as_of`` test is ``valid_to > as_of``): "from 1664 to 1667" holds from 1664-01-01 up
to, not including, 1668-01-01.

Offline, :func:`fact_dates` reads the DATE entities the dependency parse attaches to the
word that states a fact ("became CEO of Apple in 2011", "was Prime Minister of Togo
from 29 June 2002 to 9 June 2005", "has led it since 2003", "until 1512").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token

__all__ = [
    "fact_dates",
    "normalise_date",
    "period_end",
    "period_start",
    "split_range",
]

_MONTHS = {
    name: n
    for n, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(\d{3,4})"
_MAX_CHARS = 60
"""Longer values are prose, not dates."""

_ISO = re.compile(r"(\d{4})[-/](\d{1,2})(?:[-/](\d{1,2}))?(?:[t ]\S*)?")
_BARE_YEAR = re.compile(_YEAR)
_DECADE = re.compile(r"(\d{2,3})0'?s")
_CENTURY = re.compile(r"(\d{1,2})(?:st|nd|rd|th) century")
_MONTH_YEAR = re.compile(rf"{_MONTH},? {_YEAR}")
_DAY_MONTH_YEAR = re.compile(rf"{_DAY} (?:of )?{_MONTH},? {_YEAR}")
_MONTH_DAY_YEAR = re.compile(rf"{_MONTH} {_DAY},? {_YEAR}")
_HEDGES = re.compile(r"^(?:(?:the|c\.|ca\.|c|circa|around|about|approximately|early|mid|late)\s+)+")
_ERA = re.compile(r"\s*(?:ad|a\.d\.|ce|c\.e\.)$")
_RANGE = re.compile(
    r"^(?:between\s+|from\s+)?(.+?)\s*(?:\s(?:to|until|till|through|and)\s|[–—]|\s-\s|(?<=\d)-(?=\d{4}\b))\s*(.+)$"
)


def split_range(text: str) -> tuple[str, str] | None:
    """The two ends of a range written in one string ("1991 to 1996", "1664–1667",
    "between 1690 and 1693"), or None when ``text`` is not a range of two dates."""
    match = _RANGE.match(_clean(text))
    if match is None:
        return None
    first, last = match.group(1), match.group(2)
    if _single(first) is None or _single(last, end=True) is None:
        return None
    return first, last


def normalise_date(value: object, *, end: bool = False) -> str | None:
    """``value`` as an ISO date at the precision it gives, or None when it is no date.

    Args:
        value: What a model or text wrote (a string, or a year as an int).
        end: Read it as the end of a fact: a decade or century gives its last year, a
            range its last part.

    Returns:
        ``"YYYY"``, ``"YYYY-MM"`` or ``"YYYY-MM-DD"`` (years 1-9999), or None.
    """
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    text = _clean(str(value))
    if not text or len(text) > _MAX_CHARS:
        return None
    found = _single(text, end=end)
    if found is not None:
        return found
    parts = split_range(text)
    if parts is None:
        return None
    return _single(parts[1] if end else parts[0], end=end)


def _clean(text: str) -> str:
    text = " ".join(text.replace("\u2019", "'").split()).casefold().strip(" .,;")
    text = _HEDGES.sub("", text)
    return _ERA.sub("", text)


def _single(text: str, *, end: bool = False) -> str | None:
    """One date (not a range) as ISO, or None."""
    text = _HEDGES.sub("", text.strip(" .,;"))
    if match := _ISO.fullmatch(text):
        return _iso(match.group(1), match.group(2), match.group(3))
    if match := _BARE_YEAR.fullmatch(text):
        return _iso(match.group(1))
    if match := _DECADE.fullmatch(text):
        return _iso(str(int(match.group(1)) * 10 + (9 if end else 0)))
    if match := _CENTURY.fullmatch(text):
        first = (int(match.group(1)) - 1) * 100
        return _iso(str(max(first, 1) + (99 if end else 0)))
    if match := _MONTH_YEAR.fullmatch(text):
        return _iso(match.group(2), str(_MONTHS[match.group(1)]))
    if match := _DAY_MONTH_YEAR.fullmatch(text):
        return _iso(match.group(3), str(_MONTHS[match.group(2)]), match.group(1))
    if match := _MONTH_DAY_YEAR.fullmatch(text):
        return _iso(match.group(3), str(_MONTHS[match.group(1)]), match.group(2))
    return None


def _iso(year: str, month: str | None = None, day: str | None = None) -> str | None:
    try:
        when = date(int(year), int(month or 1), int(day or 1))
    except ValueError:  # year 0, month 13, February 30
        return None
    if day is not None:
        return when.isoformat()
    if month is not None:
        return f"{when.year:04d}-{when.month:02d}"
    return f"{when.year:04d}"


def _parts(iso: str) -> tuple[int, int | None, int | None]:
    pieces = [int(p) for p in iso.split("-")]
    return pieces[0], pieces[1] if len(pieces) > 1 else None, pieces[2] if len(pieces) > 2 else None


def period_start(iso: str) -> datetime | None:
    """The first instant (UTC) of the period an ISO date names; None if unreadable."""
    found = normalise_date(iso)
    if found is None:
        return None
    year, month, day = _parts(found)
    return datetime(year, month or 1, day or 1, tzinfo=UTC)


def period_end(iso: str) -> datetime | None:
    """The first instant (UTC) after the period an ISO date names (an exclusive end);
    the last representable instant for a period that ends with year 9999."""
    found = normalise_date(iso, end=True)
    if found is None:
        return None
    year, month, day = _parts(found)
    try:
        if day is not None:
            return datetime.fromordinal(date(year, month or 1, day).toordinal() + 1).replace(
                tzinfo=UTC
            )
        if month is not None:
            return datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
        return datetime(year + 1, 1, 1, tzinfo=UTC)
    except (ValueError, OverflowError):
        return datetime.max.replace(tzinfo=UTC)


# --- offline: dates the dependency parse attaches to a fact ------------------------

_STARTS = frozenset({"from", "since", "starting", "beginning"})
_ENDS = frozenset({"to", "until", "till", "through", "thru"})
_AT = frozenset({"in", "on", "during", "at"})
_CLIMB = frozenset({"attr", "dobj", "pobj", "prep", "appos", "oprd", "compound", "acomp"})
_CLIMB_STEPS = 3


def fact_dates(doc: Doc, trigger: int) -> tuple[str | None, str | None]:
    """(valid_from, valid_to) of the fact stated by the token at ``trigger`` (a verb or
    the noun of "CEO of"), from the DATE entities attached to it or to its verb.

    "from"/"since" give the start and "to"/"until" the end; "in", "on", "during",
    "at" or a bare date ("in 2011", "2011") give the start; a range in one entity
    ("1991 to 1996") gives both; "between X and Y" gives both. Dates attached elsewhere
    in the sentence (a birth date in brackets, another verb's date) are not the fact's.
    """
    if doc[trigger].ent_type_ and doc[trigger].ent_type_ != "DATE":
        return None, None  # two names side by side ("London, England") state no time
    dates = {
        i: ent
        for ent in doc.ents
        if ent.label_ == "DATE" and not _before_christ(doc, ent)
        for i in range(ent.start, ent.end)
    }
    if not dates:
        return None, None
    start: str | None = None
    end: str | None = None
    at: str | None = None
    for kind, ent in _attached(doc[trigger], dates):
        both = split_range(ent.text)
        if both is not None or kind == "between":
            first, last = both if both is not None else (ent.text, ent.text)
            start = start or normalise_date(first)
            end = end or normalise_date(last, end=True)
        elif kind == "start":
            start = start or normalise_date(ent.text)
        elif kind == "end":
            end = end or normalise_date(ent.text, end=True)
        else:
            at = at or normalise_date(ent.text)
    return start or at, end


def _before_christ(doc: Doc, ent: Span) -> bool:
    """Whether the date is BC ("the 1st century BC", "95 BC"): the era may be a word
    of its own after the entity, or inside it."""
    era = {"bc", "bce", "b.c.", "b.c.e."}
    after = doc[ent.end].lower_ if ent.end < len(doc) else ""
    return after in era or any(t.lower_ in era for t in ent)


def _anchors(trigger: Token) -> list[Token]:
    """The trigger and, for a noun, the verb it hangs from ("was" in "was the CEO")."""
    found = [trigger]
    token = trigger
    for _ in range(_CLIMB_STEPS):
        if token.pos_ in ("VERB", "AUX") or token.dep_ not in _CLIMB or token.head is token:
            break
        token = token.head
        if token.pos_ in ("VERB", "AUX"):
            found.append(token)
            break
    return found


def _attached(trigger: Token, dates: dict[int, Span]) -> Iterator[tuple[str, Span]]:
    """(kind, DATE entity) pairs hanging from the trigger's anchors, in text order:
    kind is ``start``, ``end``, ``at`` or ``between``."""
    seen: set[int] = set()
    for anchor in _anchors(trigger):
        for child in anchor.children:
            for kind, ent in _dated(child, dates):
                if ent.start not in seen:
                    seen.add(ent.start)
                    yield kind, ent


def _dated(child: Token, dates: dict[int, Span]) -> Iterator[tuple[str, Span]]:
    word = child.lower_
    if child.dep_ in ("npadvmod", "tmod") and child.i in dates:
        yield "at", dates[child.i]
        return
    if child.dep_ != "prep":
        return
    kind = (
        "start"
        if word in _STARTS
        else "end"
        if word in _ENDS
        else "at"
        if word in _AT
        else "between"
        if word == "between"
        else None
    )
    if kind is None:
        return
    for obj in child.children:
        if obj.dep_ != "pobj" or obj.i not in dates:
            continue
        ent = dates[obj.i]
        if kind == "between":
            ends = [c for c in obj.children if c.dep_ == "conj" and c.i in dates]
            if ends:
                yield "start", ent
                yield "end", dates[ends[0].i]
                continue
        yield kind, ent
    if kind != "start":
        return
    for sub in child.subtree:  # "from 29 June 2002 to 9 June 2005": "to" hangs off either
        if sub.dep_ == "prep" and sub.lower_ in _ENDS and sub is not child:
            for far in sub.children:
                if far.dep_ == "pobj" and far.i in dates:
                    yield "end", dates[far.i]
