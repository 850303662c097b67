"""Tolerant parsing of what chat models actually write back when asked for a graph.

:func:`parse_reply` turns one reply into an :class:`ExtractedGraph` plus the pieces it
could not use (``Rejection(kind="record", reason="malformed")``). It reads four formats,
chosen per reply:

- **JSON** (what our prompts ask for): an object with ``entities``/``relationships``
  (any case, common aliases), inside ```json fences or prose, field aliases
  (``src``/``tgt``/``source_entity``/``entity_name``…), strength as a string, keywords
  as a comma string, a relationship's dates (``valid_from``/``valid_to``, Graphiti's
  ``valid_at``/``invalid_at``; normalised, an unreadable one dropped); a truncated
  reply keeps every item that was complete.
- **Tuple records** (GraphRAG, nano-graphrag, LightRAG):
  ``("entity"<|>NAME<|>TYPE<|>DESC)##("relationship"<|>SRC<|>TGT<|>DESC<|>7)<|COMPLETE|>``,
  LightRAG's ``…<|>DESC<|>KEYWORDS<|>STRENGTH)`` and ``<|#|>`` variants, with markdown
  headers, numbering, curly or missing quotes and no completion marker.
- **Bracket lines**: ``Entity1 [relation] Entity2: description`` (one per line; a wrapped
  description continues on the next lines).
- **Triples** (Text2KGBench style): ``relation(subject, object)``, several per line or
  one per line, with ``\\_`` escapes, bullets and numbering.

Prose around the records (notes, echoed sentences, headers) is ignored; only a piece
that looks like a record and cannot be read is rejected. Only schema fields are copied
out of a reply, so extra keys a model (or an injected document) adds never survive.

Parsing takes time linear in the reply's length whatever it holds (a hostile reply of
1 MB of ``{``, ``a(`` or spaces parses in well under a second): every regular
expression is anchored or cannot backtrack over the same text twice, parentheses are
matched in one pass, and JSON decoding stops after :data:`MAX_DECODE_FAILURES` failed
attempts (each failure costs the decoder a scan back to the start of the text to count
lines). The caller caps the reply's size before parsing (``extract.max_reply_chars``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kgsearch.errors import ExtractionFailed
from kgsearch.extract.lines import parse_lines
from kgsearch.extract.parsed import MAX_MALFORMED, PIECE_KEPT, QUOTES, Parsed, unquote
from kgsearch.extract.schema import (
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    Rejection,
)

__all__ = [
    "MAX_DECODE_FAILURES",
    "MAX_MALFORMED",
    "Parsed",
    "is_empty_reply",
    "parse_reply",
    "parse_reply_lenient",
]

MAX_DECODE_FAILURES = 32
"""Failed JSON decoding attempts per reading of a reply; past it the rest is not read
as JSON. A real reply's object starts at one of its first braces; a hostile one with a
brace at every character would otherwise cost a scan of the text per brace."""
_MAX_DEPTH = 8
"""How deep a reply's JSON is searched for the entity and relationship lists."""

_ENTITY_LISTS = ("entities", "entity", "nodes", "node_list")
_RELATION_LISTS = ("relationships", "relationship", "relations", "edges", "triples", "links")

_NAME_KEYS = ("name", "entity_name", "entity", "title", "label", "id")
_TYPE_KEYS = ("type", "entity_type", "category", "kind")
_DESC_KEYS = (
    "description",
    "desc",
    "entity_description",
    "relationship_description",
    "summary",
)
_SOURCE_KEYS = ("source", "src", "source_entity", "src_id", "from", "head", "subject")
_TARGET_KEYS = ("target", "tgt", "target_entity", "tgt_id", "to", "tail", "object")
_RELATION_KEYS = ("relation", "relation_type", "relationship", "predicate", "label", "type")
_KEYWORD_KEYS = ("keywords", "relationship_keywords", "keyword", "tags")
_STRENGTH_KEYS = ("strength", "relationship_strength", "weight", "score", "confidence")
_CHUNK_KEYS = ("chunk", "chunk_number", "section", "chunk_index")
# When the fact held (Graphiti writes valid_at/invalid_at); "from"/"to" name endpoints.
_VALID_FROM_KEYS = ("valid_from", "valid_at", "start_date", "start", "since", "date")
_VALID_TO_KEYS = ("valid_to", "invalid_at", "end_date", "end", "until")

_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)(?:```|\Z)", re.DOTALL)
_COMPLETE = re.compile(r"<\|\s*complete\s*\|>", re.IGNORECASE)
_TUPLE_DELIMS = ("<|#|>", "<|>")
_TAG = re.compile(r"(entity|relationship|relation|content_keywords)\b", re.I)


def parse_reply(text: str) -> tuple[ExtractedGraph, list[Rejection]]:
    """Parse a model's reply into a graph and the rejected pieces.

    Args:
        text: The reply exactly as the model wrote it.

    Returns:
        The entities and relationships read, and a ``malformed`` rejection per piece
        that looked like a record but could not be read.

    Raises:
        ExtractionFailed: Nothing in the reply could be read (carries the raw reply).
    """
    parsed = parse_reply_lenient(text)
    if not parsed.graph.entities and not parsed.graph.relationships and not is_empty_reply(text):
        raise ExtractionFailed(
            "the model's reply holds no entity or relationship in any known format "
            f"({len(parsed.rejected)} malformed records)",
            raw=text,
        )
    return parsed.graph, parsed.rejected


def is_empty_reply(text: str) -> bool:
    """Whether ``text`` is an empty graph written on purpose: blank, ``{}``, JSON with
    only empty lists, or a lone completion marker."""
    stripped = _COMPLETE.sub("", text).strip().strip("`").strip()
    if not stripped:
        return True
    found = _json_object(stripped, _Decoding())
    return isinstance(found, Mapping) and not any(isinstance(v, list) and v for v in found.values())


def parse_reply_lenient(text: str) -> Parsed:
    """Like :func:`parse_reply`, but never raises: an unreadable reply parses to nothing.

    Args:
        text: The reply exactly as the model wrote it.

    Returns:
        What was read, what was rejected, the format detected and any chunk tags.
    """
    from_json = _parse_json(text) if "{" in text else None
    if from_json is not None and from_json.items:
        return from_json
    if any(d in text for d in _TUPLE_DELIMS):
        return _parse_tuples(text)
    if from_json is not None and from_json.records:
        return from_json
    return parse_lines(text)


# --- JSON ---------------------------------------------------------------------------

_DECODER = json.JSONDecoder()


@dataclass
class _Decoding:
    """JSON decoding with a budget of failures (see :data:`MAX_DECODE_FAILURES`)."""

    left: int = MAX_DECODE_FAILURES

    def at(self, text: str, pos: int) -> tuple[Any, int] | None:
        """The value starting at ``pos`` and the position after it, or None."""
        if self.left <= 0:
            return None
        try:
            return _DECODER.raw_decode(text, pos)
        except (json.JSONDecodeError, RecursionError):  # too deep is unreadable too
            self.left -= 1
            return None


def _parse_json(text: str) -> Parsed:
    """The best reading of ``text`` as JSON: the first complete object, or the complete
    items of a truncated one (whichever reads more), in a fence or in the whole text."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoding = _Decoding()
    best = Parsed(format="json")
    for candidate in candidates:
        for reader in (_read_first_object, _salvage):
            parsed = Parsed(format="json")
            reader(candidate, parsed, decoding)
            if (parsed.items, parsed.records) > (best.items, best.records):
                best = parsed
        if best.items or decoding.left <= 0:
            return best
    return best


def _read_first_object(text: str, parsed: Parsed, decoding: _Decoding) -> None:
    found = _json_object(text, decoding)
    if found is not None:
        _read_container(found, parsed, 0)


def _json_object(text: str, decoding: _Decoding) -> Any:
    """The first complete JSON object or array in ``text``, or None."""
    for match in re.finditer(r"[{\[]", text):
        if decoding.left <= 0:
            return None
        decoded = decoding.at(text, match.start())
        if decoded is not None and isinstance(decoded[0], dict | list):
            return decoded[0]
    return None


def _norm_key(key: str) -> str:
    return re.sub(r"[\s\-]+", "_", key.strip().casefold())


def _normalized(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {_norm_key(str(k)): v for k, v in obj.items()}


def _read_container(found: Any, parsed: Parsed, depth: int) -> None:
    if isinstance(found, list):
        for item in found:
            _read_item(item, parsed, None)
        return
    if not isinstance(found, Mapping) or depth > _MAX_DEPTH:
        return
    data = _normalized(found)
    if not any(k in data for k in _ENTITY_LISTS + _RELATION_LISTS):
        for value in data.values():  # {"graph": {"entities": …}} or {"result": …}
            if isinstance(value, Mapping):
                _read_container(value, parsed, depth + 1)
                if parsed.items:
                    return
        if _first(data, _NAME_KEYS + _SOURCE_KEYS) is not None:
            _read_item(found, parsed, None)
        return
    for key in _ENTITY_LISTS:
        for item in _as_list(data.get(key)):
            _read_item(item, parsed, "entity")
    for key in _RELATION_LISTS:
        for item in _as_list(data.get(key)):
            _read_item(item, parsed, "relationship")


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _salvage(text: str, parsed: Parsed, decoding: _Decoding) -> None:
    """Read every complete item of a truncated reply's entity and relationship lists."""
    lists = "|".join(_ENTITY_LISTS + _RELATION_LISTS)
    for match in re.finditer(rf"[\"']?({lists})[\"']?\s*:\s*\[", text, re.IGNORECASE):
        if decoding.left <= 0:
            return
        kind = "entity" if _norm_key(match.group(1)) in _ENTITY_LISTS else "relationship"
        pos = match.end()
        while True:
            while pos < len(text) and text[pos] in " \t\r\n,":
                pos += 1
            if pos >= len(text) or text[pos] == "]":
                break
            decoded = decoding.at(text, pos)
            if decoded is None:
                rest = text[pos : pos + PIECE_KEPT].strip()
                if rest:
                    parsed.malformed(rest)
                break
            item, pos = decoded
            _read_item(item, parsed, kind)


def _first(data: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = data.get(key)
        if value is not None and value != "":
            return value
    return None


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return str(value)
    return None


def _tag(data: Mapping[str, Any]) -> int | None:
    value = _first(data, _CHUNK_KEYS)
    try:
        return int(str(value).strip().lstrip("#")) if value is not None else None
    except ValueError:
        return None


def _read_item(item: Any, parsed: Parsed, kind: str | None) -> None:
    if not isinstance(item, Mapping):
        parsed.malformed(_dump(item))
        return
    data = _normalized(item)
    is_relation = kind == "relationship" or (
        kind is None and _first(data, _SOURCE_KEYS) is not None
    )
    made = _relation_from(data) if is_relation else _entity_from(data)
    if made is None:
        parsed.malformed({str(k): v for k, v in item.items()})
    elif isinstance(made, ExtractedRelation):
        parsed.add_relation(made, _tag(data))
    else:
        parsed.add_entity(made, _tag(data))


def _dump(item: Any) -> str:
    """The start of ``item`` as JSON (or as text, when too deep to encode)."""
    try:
        return json.dumps(item, ensure_ascii=False, default=str)[:PIECE_KEPT]
    except (RecursionError, ValueError):
        return str(type(item).__name__)


def _entity_from(data: Mapping[str, Any]) -> ExtractedEntity | None:
    name = _text(_first(data, _NAME_KEYS))
    if not name:
        return None
    return ExtractedEntity(
        name=name,
        type=_text(_first(data, _TYPE_KEYS)) or "entity",
        description=_text(_first(data, _DESC_KEYS)) or "",
    )


def _relation_from(data: Mapping[str, Any]) -> ExtractedRelation | None:
    source = _text(_first(data, _SOURCE_KEYS))
    target = _text(_first(data, _TARGET_KEYS))
    if not source or not target:
        return None
    return ExtractedRelation(
        source=source,
        target=target,
        relation=_text(_first(data, _RELATION_KEYS)) or "",
        description=_text(_first(data, _DESC_KEYS)) or "",
        keywords=_keywords(_first(data, _KEYWORD_KEYS)),
        strength=_strength(_first(data, _STRENGTH_KEYS)),
        valid_from=_first(data, _VALID_FROM_KEYS),
        valid_to=_first(data, _VALID_TO_KEYS),
    )


def _keywords(value: Any) -> list[str]:
    if isinstance(value, str):
        parts: list[Any] = re.split(r"[,;]", value)
    elif isinstance(value, list):
        parts = value
    else:
        return []
    return [s for s in (_text(p) for p in parts) if s]


def _strength(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    match = re.search(r"-?\d+(?:\.\d+)?", str(value))
    return float(match.group()) if match else None


# --- tuple records ------------------------------------------------------------------


def _parse_tuples(text: str) -> Parsed:
    parsed = Parsed(format="tuples")
    # LightRAG's newer "<|#|>" prompts put the keywords before the description.
    keywords_first = "<|#|>" in text
    body = _COMPLETE.sub("\n", text).replace("<|#|>", "<|>")
    for piece in _tuple_pieces(body):
        _read_tuple(piece, parsed, keywords_first=keywords_first)
    return parsed


def _tuple_pieces(body: str) -> Iterator[str]:
    """Records split on ``##`` and on new lines; lines without a delimiter are noise
    (markdown headers, fences, stray quotes) unless they continue a record."""
    for chunk in body.split("##"):
        current: list[str] = []
        for line in chunk.split("\n"):
            if "<|>" in line:
                if current:
                    yield "\n".join(current)
                current = [line]
            elif current and line.strip() and not _is_noise(line):
                current.append(line)
        if current:
            yield "\n".join(current)


def _is_noise(line: str) -> bool:
    stripped = line.strip()
    return (
        not re.search(r"\w", stripped)
        or stripped.startswith(("**", "#", "```"))
        or bool(re.fullmatch(r"[\w\s]{0,40}:", stripped))
    )


def _repair_delimiters(piece: str) -> str:
    """Delimiters as models mistype them: ``</|>``, ``"|>`` (lost ``<``)."""
    piece = re.sub(r"<\s*/\s*\|\s*>", "<|>", piece)
    return re.sub(r"(?<![<|])\|>", "<|>", piece)


def _read_tuple(piece: str, parsed: Parsed, *, keywords_first: bool) -> None:
    raw = piece.strip()
    piece = _repair_delimiters(raw)
    tag_match = _TAG.search(piece.split("<|>", 1)[0])
    if tag_match is None:
        parsed.malformed(raw[:PIECE_KEPT])
        return
    start = tag_match.start()
    if start and piece[start - 1] in QUOTES:
        start -= 1  # the opening quote of '"entity"', which _unquote removes
    inner = piece[start:]
    end = max(inner.rfind(")"), inner.rfind("]"))
    if end > inner.rfind("<|>"):
        inner = inner[:end]
    fields = [unquote(f) for f in inner.split("<|>")]
    kind = fields[0].casefold().strip(QUOTES)
    if kind == "content_keywords":
        return
    values = fields[1:]
    if kind == "entity" and len(values) >= 2 and values[0]:
        description = " ".join(values[2:]).strip()
        parsed.add_entity(
            ExtractedEntity(name=values[0], type=values[1] or "entity", description=description)
        )
        return
    if kind in ("relationship", "relation") and len(values) >= 3 and values[0] and values[1]:
        if keywords_first and len(values) == 4:
            values = [values[0], values[1], values[3], values[2]]
        parsed.add_relation(_tuple_relation(values))
        return
    parsed.malformed(raw[:PIECE_KEPT])


def _tuple_relation(values: list[str]) -> ExtractedRelation:
    source, target, description, *rest = values
    glued = re.fullmatch(r"(.*?)[\"”]\s*(-?\d+(?:\.\d+)?)", description, re.DOTALL)
    if not rest and glued:  # '…description."7' : the delimiter before the strength lost
        description, rest = glued.group(1), [glued.group(2)]
    strength: float | None = None
    keywords: list[str] = []
    if rest and _is_number(rest[-1]):
        strength = float(rest[-1])
        rest = rest[:-1]
    elif rest and not rest[-1]:
        rest = rest[:-1]
    if rest:
        keywords = _keywords(", ".join(rest))
    return ExtractedRelation(
        source=source,
        target=target,
        description=description,
        keywords=keywords,
        strength=strength,
    )


def _is_number(value: str) -> bool:
    return bool(re.fullmatch(r"-?\d+(?:\.\d+)?", value.strip()))
