"""Graph-aware text for objects, queries and chunks (seed 001).

An object is embedded as its type tags, a few key fields, its name and its content::

    [Type: #person] [Role: CEO] [Company: Acme] Ada Lovelace — content

Which fields appear is configured per type (:class:`EnrichmentConfig`, loaded from a
JSON file). When an embedder's token budget is given, the lowest-priority parts are
trimmed or dropped first, but the text keeps its template order. Everything here is
pure and deterministic except :func:`load_enrichment_config`, which reads one file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kgsearch.errors import ConfigError, InvalidRequest
from kgsearch.text.fields import (
    LONG_TEXT_CHARS,
    FieldKind,
    classify_field,
    cut,
    field_label,
    normalize_tag,
    render_value,
    renders,
)
from kgsearch.text.triplet import display_name

__all__ = [
    "CONTENT_FIELDS",
    "TEXT_VERSION",
    "EnrichmentConfig",
    "TypeRule",
    "chunk_text",
    "config_fingerprint",
    "enrich_query",
    "load_enrichment_config",
    "object_text",
    "text_hash",
]

TEXT_VERSION: int = 1
"""Version of the text templates in :mod:`kgsearch.text`.

Bump it whenever any builder here changes its output for the same input (template,
value rendering, field selection, truncation); stores record it per row so the change
marks rows stale and they are re-embedded.
"""

CONTENT_FIELDS = ("content", "description", "summary", "text")
"""Properties holding an object's free text, joined in this order after the name."""

_KIND_SELECTORS = {
    "options": FieldKind.OPTION,
    "enum": FieldKind.OPTION,
    "date": FieldKind.DATE,
    "instance": FieldKind.REFERENCE,
    "reference": FieldKind.REFERENCE,
}


def _type_key(type_: str) -> str:
    """The override key of a type: its tag without ``#`` (``"Movie Star"`` → ``movie_star``)."""
    return normalize_tag(type_).removeprefix("#")


class TypeRule(BaseModel):
    """How objects of one type are enriched.

    Attributes:
        include_fields: Properties to show, in order, matched case-insensitively by
            name (JSON ``includeFields``). An entry that names no property and is one of
            ``options``/``enum``, ``date`` or ``instance``/``reference`` selects every
            field of that kind. ``None`` selects all non-empty short fields.
        max_fields: At most this many ``[Field: value]`` brackets (``maxFieldsPerTag``).
        disabled: Embed this type as plain text (name and content only).
        include_tag_name: Render the ``[Type: #tag]`` brackets (``includeTagName``).
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", validate_by_name=True, validate_by_alias=True
    )

    include_fields: list[str] | None = Field(default=None, alias="includeFields")
    max_fields: int = Field(default=5, ge=0, alias="maxFieldsPerTag")
    disabled: bool = False
    include_tag_name: bool = Field(default=True, alias="includeTagName")


class EnrichmentConfig(BaseModel):
    """Per-type enrichment rules: ``defaults`` plus ``overrides`` keyed by type.

    Override keys match the object type case-insensitively, with or without ``#`` and
    with blanks and underscores equal (``"Movie Star"`` matches ``movie_star``). An
    override only changes the settings it spells out; the rest come from ``defaults``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    defaults: TypeRule = Field(default_factory=TypeRule)
    overrides: dict[str, TypeRule] = Field(default_factory=dict)

    @field_validator("overrides")
    @classmethod
    def _normalize_keys(cls, overrides: dict[str, TypeRule]) -> dict[str, TypeRule]:
        normalized: dict[str, TypeRule] = {}
        for key, rule in overrides.items():
            tag = _type_key(key)
            if not tag:
                raise ValueError("override keys must name a type")
            if tag in normalized:
                raise ValueError(f"override {key!r} duplicates another key for type {tag}")
            normalized[tag] = rule
        return normalized

    def rule_for(self, type_: str) -> TypeRule:
        """Return the effective rule for a type: its override laid over ``defaults``.

        Args:
            type_: The object type.

        Returns:
            The merged rule (``defaults`` when the type has no override).
        """
        override = self.overrides.get(_type_key(type_))
        if override is None:
            return self.defaults
        update = {name: getattr(override, name) for name in override.model_fields_set}
        return self.defaults.model_copy(update=update)


_DEFAULT_CONFIG = EnrichmentConfig()


def load_enrichment_config(path: Path | None) -> EnrichmentConfig:
    """Read an enrichment config JSON file (seed 001 shape, camelCase keys accepted).

    Args:
        path: The file, or ``None`` for the defaults.

    Returns:
        The parsed config; the defaults when ``path`` is ``None`` or does not exist.

    Raises:
        ConfigError: The file cannot be read, is not JSON, or does not match the schema.
    """
    if path is None or not path.exists():
        return _DEFAULT_CONFIG
    try:
        raw = path.read_text(encoding="utf-8")
        return EnrichmentConfig.model_validate_json(raw)
    except ValidationError as exc:
        errors = [
            {"loc": ".".join(map(str, error["loc"])), "msg": error["msg"]}
            for error in exc.errors(include_url=False)
        ]
        raise ConfigError(
            f"Invalid enrichment config {path}: {exc}. Fix the file or remove it to use "
            "the defaults.",
            details={"path": str(path), "errors": errors},
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"Cannot read enrichment config {path}: {exc}",
            details={"path": str(path)},
        ) from exc


def config_fingerprint(config: EnrichmentConfig) -> str:
    """Return a short stable hash of what ``config`` does, to detect config edits.

    Configs that behave the same hash the same: override keys are normalized and each
    override is hashed as merged with the defaults.

    Args:
        config: The enrichment config.

    Returns:
        16 lowercase hex characters.
    """
    payload = {
        "defaults": config.defaults.model_dump(mode="json"),
        "overrides": {
            key: config.rule_for(key).model_dump(mode="json") for key in sorted(config.overrides)
        },
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


# Template slots (render order) and truncation priorities (lower is kept longer).
_TAGS, _FIELDS, _NAME, _CONTENT = range(4)
# The name ranks between references and plain-text fields (FieldKind 3 and 5).
_NAME_PRIORITY = 4
_CONTENT_PRIORITY = 6


@dataclass(frozen=True)
class _Part:
    slot: int
    order: int
    priority: int
    text: str
    trimmable: bool = False


def _render(parts: Sequence[_Part]) -> str:
    ordered = sorted(parts, key=lambda part: (part.slot, part.order))
    head = " ".join(part.text for part in ordered if part.slot != _CONTENT)
    content = " ".join(part.text for part in ordered if part.slot == _CONTENT)
    if not content:
        return head
    return f"{head} — {content}" if head else content


def _content(properties: Mapping[str, Any]) -> str:
    pieces: list[str] = []
    for key in CONTENT_FIELDS:
        piece = render_value(properties.get(key))
        if piece and piece not in pieces:
            pieces.append(piece)
    return " ".join(pieces)


def _is_default_field(key: str, value: Any) -> bool:
    long_text = isinstance(value, str) and len(render_value(value)) > LONG_TEXT_CHARS
    return not key.startswith("_") and not long_text


def _select_fields(properties: Mapping[str, Any], rule: TypeRule) -> list[tuple[str, Any]]:
    candidates = [
        (key, value)
        for key, value in properties.items()
        if key != "name" and key not in CONTENT_FIELDS and renders(value)
    ]
    defaults = [(key, value) for key, value in candidates if _is_default_field(key, value)]
    if rule.include_fields is None:
        return defaults[: rule.max_fields]
    by_name: dict[str, tuple[str, Any]] = {}
    for key, value in candidates:
        by_name.setdefault(key.lower(), (key, value))
    chosen: dict[str, Any] = {}
    for entry in rule.include_fields:
        wanted = entry.strip().lower()
        if wanted in by_name:
            key, value = by_name[wanted]
            chosen.setdefault(key, value)
        elif wanted in _KIND_SELECTORS:
            kind = _KIND_SELECTORS[wanted]
            for key, value in defaults:
                if classify_field(key, value) is kind:
                    chosen.setdefault(key, value)
    return list(chosen.items())[: rule.max_fields]


def _enriched_parts(
    type_: str, properties: Mapping[str, Any], tags: Sequence[str], rule: TypeRule
) -> list[_Part]:
    parts: list[_Part] = []
    if rule.include_tag_name:
        names = dict.fromkeys(tag for tag in map(normalize_tag, [type_, *tags]) if tag)
        brackets = " ".join(f"[Type: {tag}]" for tag in names)
        parts.append(_Part(_TAGS, 0, 0, brackets))
    for order, (key, value) in enumerate(_select_fields(properties, rule)):
        bracket = f"[{field_label(key)}: {cut(render_value(value))}]"
        parts.append(_Part(_FIELDS, order, classify_field(key, value), bracket))
    return parts


def _longest_fit(pieces: Sequence[str], sep: str, fits: Callable[[str], bool]) -> str:
    """Binary-search the longest prefix of ``pieces`` whose join satisfies ``fits``."""
    low, high = 0, len(pieces)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(sep.join(pieces[:middle]).rstrip()):
            low = middle
        else:
            high = middle - 1
    return sep.join(pieces[:low]).rstrip()


def _trim_to_fit(
    kept: Sequence[_Part], part: _Part, count_tokens: Callable[[str], int], max_tokens: int
) -> _Part | None:
    """The longest word prefix of ``part`` that fits beside ``kept``, if any."""

    def fits(text: str) -> bool:
        return count_tokens(_render([*kept, replace(part, text=text)])) <= max_tokens

    text = _longest_fit(part.text.split(" "), " ", fits)
    return replace(part, text=text) if text else None


def _fit(parts: Sequence[_Part], count_tokens: Callable[[str], int], max_tokens: int) -> str:
    """Add parts from highest priority down while the rendered text stays within budget.

    A part that does not fit is trimmed (name, content) or skipped (fields), so a
    smaller lower-priority part after it may still fit.
    """
    full = _render(parts)
    if count_tokens(full) <= max_tokens:
        return full
    kept: list[_Part] = []
    for part in sorted(parts, key=lambda part: (part.priority, part.order)):
        if count_tokens(_render([*kept, part])) <= max_tokens:
            kept.append(part)
        elif part.slot == _TAGS:
            # The type is never dropped; when it alone is over budget, cut it.
            return _longest_fit(part.text, "", lambda text: count_tokens(text) <= max_tokens)
        elif part.trimmable and (trimmed := _trim_to_fit(kept, part, count_tokens, max_tokens)):
            kept.append(trimmed)
    return _render(kept)


def object_text(
    type_: str,
    key: str,
    properties: Mapping[str, Any],
    *,
    tags: Sequence[str] = (),
    config: EnrichmentConfig | None = None,
    graph_aware: bool = True,
    count_tokens: Callable[[str], int] | None = None,
    max_tokens: int | None = None,
) -> str:
    """Build the embedded text of an object.

    Graph-aware text is ``[Type: #type] [Type: #tag] [Field: value] … Name — content``:
    the primary type then extra tags, the selected fields (values cut to 50 characters),
    the display name (``properties["name"]``, else ``key``) and the free text of
    :data:`CONTENT_FIELDS`. Plain text (``graph_aware=False``, a blank type, or a type
    whose rule is disabled) is ``Name — content``.

    With both ``count_tokens`` and ``max_tokens``, an over-budget text loses its
    lowest-priority parts first: content is trimmed, then plain-text fields dropped, the
    name trimmed, references, dates and options fields dropped. The type tags are always
    kept (cut only when they alone exceed the budget).

    Args:
        type_: The object's primary type; its rule in ``config`` applies.
        key: The object's key, the name when ``properties`` has none.
        properties: The object's properties.
        tags: Extra type tags, rendered after the primary type.
        config: Enrichment rules; ``None`` uses the defaults.
        graph_aware: ``False`` builds plain text.
        count_tokens: Counts the embedder's tokens in a text.
        max_tokens: The embedder's input budget.

    Returns:
        The text to embed.
    """
    if isinstance(tags, str):
        tags = (tags,)
    rule = (config or _DEFAULT_CONFIG).rule_for(type_)
    enriched = graph_aware and bool(normalize_tag(type_)) and not rule.disabled
    parts = _enriched_parts(type_, properties, tags, rule) if enriched else []
    name = " ".join(display_name(properties, key, "").split())
    if name:
        parts.append(_Part(_NAME, 0, _NAME_PRIORITY, name, trimmable=True))
    content = _content(properties)
    if content:
        parts.append(_Part(_CONTENT, 0, _CONTENT_PRIORITY, content, trimmable=True))
    if count_tokens is None or max_tokens is None:
        return _render(parts)
    return _fit(parts, count_tokens, max_tokens)


def enrich_query(query: str, type_hint: str | None) -> str:
    """Prefix a search query with a type tag so it lands near objects of that type.

    Args:
        query: The user's query.
        type_hint: A type name, e.g. ``"person"``; ``None`` or blank for no hint.

    Returns:
        ``"[Type: #person] query"`` with a hint, else ``query`` unchanged.
    """
    tag = normalize_tag(type_hint or "")
    if not tag:
        return query
    return f"[Type: {tag}] {query}" if query else f"[Type: {tag}]"


def chunk_text(text: str, source_title: str | None = None) -> str:
    """Build the embedded text of a chunk.

    Args:
        text: The chunk's text.
        source_title: The title of the chunk's source, if any.

    Returns:
        ``"{title}: {text}"`` with a non-blank title, else ``text``.
    """
    if source_title is None or not source_title.strip():
        return text
    return f"{source_title.strip()}: {text}"


def text_hash(text: str) -> str:
    """Return the SHA-256 hex digest of ``text`` (UTF-8), used to detect stale rows.

    Args:
        text: The text that is or would be embedded.

    Returns:
        64 lowercase hex characters.

    Raises:
        InvalidRequest: The text is not valid Unicode (e.g. a lone surrogate).
    """
    return hashlib.sha256(utf8(text)).hexdigest()


def utf8(text: str) -> bytes:
    """UTF-8 bytes of ``text``; invalid Unicode is the caller's error, not a crash.

    Raises:
        InvalidRequest: The text holds a lone surrogate or similar.
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidRequest(
            f"text is not valid Unicode ({exc.reason} at position {exc.start}): {text[:60]!r}"
        ) from None
