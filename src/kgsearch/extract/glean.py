"""Gleaning: "some entities and relationships were missed" rounds after the first answer.

Each round re-sends the conversation so far plus :func:`gleaning_message`, parses the
answer and merges it into what was already read: entities by (chunk tag, casefolded
type, casefolded name), relationships by (chunk tag, source, target, relation), joining
descriptions that add something. GraphRAG and LightRAG found one round adds 20-40 %
more entities on long chunks; each round costs one more call with the whole history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgsearch.extract.parse import Parsed, is_empty_reply, parse_reply_lenient
from kgsearch.extract.prompts import DomainPrompt, gleaning_message
from kgsearch.extract.quality import normalize_name
from kgsearch.extract.schema import ExtractedEntity, ExtractedRelation
from kgsearch.llm.base import LLM, Completion, Message

__all__ = ["Gleaned", "glean", "merge_parsed"]


@dataclass
class Gleaned:
    """The merged parse of a first answer and its gleaning rounds.

    Attributes:
        parsed: Everything read, merged.
        completions: Every completion, first answer first.
        failed: The first answer could not be parsed at all (no gleaning was tried).
    """

    parsed: Parsed
    completions: list[Completion] = field(default_factory=list)
    failed: bool = False


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
) -> Gleaned:
    """Ask ``messages``, then up to ``rounds`` gleaning follow-ups, and merge the answers.

    Args:
        llm: The chat model.
        messages: The rendered extraction prompt.
        prompt: The domain prompt (for the follow-up's wording).
        rounds: Gleaning rounds after the first answer (0: none).
        json_schema: The output schema passed to the model.
        max_tokens: Cap on each reply.

    Returns:
        The merged parse and every completion. A first answer with nothing readable
        (and not an intentionally empty graph) sets ``failed`` and stops there.

    Raises:
        ProviderError: A model call failed.
    """
    history = list(messages)
    first = llm.complete(history, json_schema=json_schema, max_tokens=max_tokens)
    parsed = parse_reply_lenient(first.text)
    result = Gleaned(parsed=parsed, completions=[first])
    if not parsed.items:
        result.failed = not is_empty_reply(first.text)
        return result
    for _ in range(rounds):
        history += [Message("assistant", result.completions[-1].text), gleaning_message(prompt)]
        more = llm.complete(history, json_schema=json_schema, max_tokens=max_tokens)
        result.completions.append(more)
        merge_parsed(parsed, parse_reply_lenient(more.text))
    return result
