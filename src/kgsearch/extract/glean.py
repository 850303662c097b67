"""Gleaning: "some entities and relationships were missed" rounds after the first answer.

Each round re-sends the conversation so far plus :func:`gleaning_message`, parses the
answer and merges it into what was already read: entities by (chunk tag, casefolded
type, casefolded name), relationships by (chunk tag, source, target, relation), joining
descriptions that add something. GraphRAG and LightRAG found one round adds 20-40 %
more entities on long chunks; each round costs one more call with the whole history.

Every reply is checked before it is parsed: one longer than ``max_reply_chars`` or cut
at the model's token limit (``finish_reason == "length"``) fails the chunk with that
reason (a gleaning round's is dropped, keeping what came before), and is evicted from
the response cache so a retry asks the model again. Lone surrogates (half an escaped
emoji) become U+FFFD and NUL and other control characters are removed, noted as a
``cleaned`` record in the chunk's rejections, so no reply can carry text a store
refuses.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgsearch.extract.parse import Parsed, is_empty_reply, parse_reply_lenient
from kgsearch.extract.prompts import DomainPrompt, gleaning_message
from kgsearch.extract.quality import normalize_name
from kgsearch.extract.schema import ExtractedEntity, ExtractedRelation, Rejection
from kgsearch.llm.base import LLM, Completion, Forgetting, Message

__all__ = ["MAX_REPLY_CHARS", "Gleaned", "clean_reply", "glean", "merge_parsed", "storable"]

MAX_REPLY_CHARS = 1_000_000
"""The longest reply read (``extract.max_reply_chars``): a reply to one chunk is a few
thousand characters; a megabyte is a model that never stopped."""
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_reply(text: str) -> tuple[str, list[str]]:
    """``text`` with lone surrogates replaced by U+FFFD and control characters other
    than tab and new lines removed, and what was changed (empty: nothing)."""
    notes = []
    if _SURROGATE.search(text):
        text, count = _SURROGATE.subn("\ufffd", text)
        notes.append(f"{count} lone surrogate(s) replaced by U+FFFD")
    if _CONTROL.search(text):
        text, count = _CONTROL.subn("", text)
        notes.append(f"{count} control character(s) (NUL…) removed")
    return text, notes


def storable(text: str) -> str:
    """``text`` as any store keeps it: lone surrogates and NUL written as escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")


def reply_problem(completion: Completion, max_chars: int) -> str | None:
    """Why a reply cannot be used as it is (None: it can)."""
    if len(completion.text) > max_chars:
        return (
            f"reply_too_long: the reply has {len(completion.text):,} characters, over "
            f"extract.max_reply_chars ({max_chars:,})"
        )
    if completion.finish_reason == "length":
        return (
            "truncated_reply: the model stopped at its token limit (finish_reason=length); "
            "raise llm.max_tokens or lower extract.chunk_chars"
        )
    return None


@dataclass
class Gleaned:
    """The merged parse of a first answer and its gleaning rounds.

    Attributes:
        parsed: Everything read, merged.
        completions: Every completion, first answer first.
        error: Why the first answer cannot be used (too long, cut off, nothing
            readable); None when it can. No gleaning is tried after it.
    """

    parsed: Parsed
    completions: list[Completion] = field(default_factory=list)
    error: str | None = None

    @property
    def failed(self) -> bool:
        """The first answer could not be used."""
        return self.error is not None


def _entity_key(entity: ExtractedEntity, tag: int | None) -> tuple[Any, ...]:
    return (tag, normalize_name(entity.type), normalize_name(entity.name))


def _relation_key(relation: ExtractedRelation, tag: int | None) -> tuple[Any, ...]:
    return (
        tag,
        normalize_name(relation.source),
        normalize_name(relation.target),
        normalize_name(relation.relation),
    )


def _join(first: str, second: str) -> str:
    if not second.strip() or normalize_name(second) in normalize_name(first):
        return first
    if not first.strip():
        return second
    return f"{first.strip()} {second.strip()}"


def merge_parsed(into: Parsed, extra: Parsed) -> None:
    """Merge ``extra`` into ``into`` in place (new items appended, known ones enriched)."""
    entities = {
        _entity_key(e, t): e for e, t in zip(into.graph.entities, into.entity_tags, strict=True)
    }
    for entity, tag in zip(extra.graph.entities, extra.entity_tags, strict=True):
        known = entities.get(_entity_key(entity, tag))
        if known is None:
            entities[_entity_key(entity, tag)] = entity
            into.add_entity(entity, tag)
        else:
            known.description = _join(known.description, entity.description)
    relations = {
        _relation_key(r, t): r
        for r, t in zip(into.graph.relationships, into.relation_tags, strict=True)
    }
    for relation, tag in zip(extra.graph.relationships, extra.relation_tags, strict=True):
        known_relation = relations.get(_relation_key(relation, tag))
        if known_relation is None:
            relations[_relation_key(relation, tag)] = relation
            into.add_relation(relation, tag)
        else:
            known_relation.description = _join(known_relation.description, relation.description)
            known_relation.keywords = list(
                dict.fromkeys([*known_relation.keywords, *relation.keywords])
            )
    into.rejected.extend(extra.rejected)


def glean(
    llm: LLM,
    messages: Sequence[Message],
    prompt: DomainPrompt,
    *,
    rounds: int,
    json_schema: Mapping[str, Any] | None,
    max_tokens: int | None = None,
    max_reply_chars: int = MAX_REPLY_CHARS,
) -> Gleaned:
    """Ask ``messages``, then up to ``rounds`` gleaning follow-ups, and merge the answers.

    Args:
        llm: The chat model.
        messages: The rendered extraction prompt.
        prompt: The domain prompt (for the follow-up's wording).
        rounds: Gleaning rounds after the first answer (0: none).
        json_schema: The output schema passed to the model.
        max_tokens: Cap on each reply.
        max_reply_chars: Longer replies are not read.

    Returns:
        The merged parse and every completion. A first answer that cannot be used (too
        long, cut off, or nothing readable and not an intentionally empty graph) sets
        ``error``, is evicted from the response cache and stops there.

    Raises:
        ProviderError: A model call failed.
    """
    history = list(messages)
    first = llm.complete(history, json_schema=json_schema, max_tokens=max_tokens)
    result = Gleaned(parsed=Parsed(), completions=[first])
    result.error = reply_problem(first, max_reply_chars)
    if result.error is None:
        result.parsed = _parse(first.text)
        if not result.parsed.items and not is_empty_reply(first.text):
            result.error = (
                "unparseable: the model's reply holds no entity or relationship in any known format"
            )
    if result.error is not None:
        _forget(llm, history, json_schema, max_tokens)
        return result
    if not result.parsed.items:
        return result
    for _ in range(rounds):
        history += [Message("assistant", result.completions[-1].text), gleaning_message(prompt)]
        more = llm.complete(history, json_schema=json_schema, max_tokens=max_tokens)
        if reply_problem(more, max_reply_chars) is not None:
            _forget(llm, history, json_schema, max_tokens)
            break
        result.completions.append(more)
        merge_parsed(result.parsed, _parse(more.text))
    return result


def _parse(text: str) -> Parsed:
    """Parse a cleaned reply, then clean what was read: a JSON escape (``"\\ud83d"``)
    decodes to a lone surrogate the text itself did not hold."""
    cleaned, notes = clean_reply(text)
    parsed = parse_reply_lenient(cleaned)
    changes: dict[str, int] = {}
    for item in [*parsed.graph.entities, *parsed.graph.relationships]:
        updates: dict[str, Any] = {}
        for name, value in item:
            if isinstance(value, str):
                updates[name] = _cleaned(value, changes)
            elif isinstance(value, list):
                updates[name] = [_cleaned(v, changes) for v in value]
        for name, value in updates.items():
            setattr(item, name, value)
    notes += [f"{n} {what}" for what, n in changes.items()]
    parsed.rejected.extend(Rejection(kind="record", reason="cleaned", item=n) for n in notes)
    return parsed


def _cleaned(value: str, changes: dict[str, int]) -> str:
    if _SURROGATE.search(value):
        value, count = _SURROGATE.subn("\ufffd", value)
        key = "lone surrogate(s) replaced by U+FFFD"
        changes[key] = changes.get(key, 0) + count
    if _CONTROL.search(value):
        value, count = _CONTROL.subn("", value)
        key = "control character(s) (NUL…) removed"
        changes[key] = changes.get(key, 0) + count
    return value


def _forget(
    llm: LLM,
    history: Sequence[Message],
    json_schema: Mapping[str, Any] | None,
    max_tokens: int | None,
) -> None:
    """Evict a reply that cannot be used, so a retry asks the model again."""
    if isinstance(llm, Forgetting):
        llm.forget(history, json_schema=json_schema, max_tokens=max_tokens)
