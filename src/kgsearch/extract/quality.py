"""The quality filter between a parsed reply and the graph: what is kept, merged or dropped.

:func:`apply_quality` checks one chunk's :class:`ExtractionResult` against
:class:`QualityRules` and moves each item it drops to ``rejected`` with a stable reason:

- entities: ``empty_name`` (blank, or nothing left once quotes and punctuation are
  removed), ``long_name`` (the name or the type), ``not_in_text`` (hallucination check),
  ``short_description``, ``long_description``; same casefolded name and type twice in a
  chunk is merged (descriptions joined), not rejected;
- relationships: ``empty_name``, ``long_name``, ``self_loop``, ``unknown_entity`` (an
  endpoint that is neither a kept entity nor in the text), ``short_description``,
  ``long_description``, ``trivial_description`` ("X is related to Y"), ``duplicate``
  (merged into the first), ``over_cap`` (beyond ``max_relationships``).

With a graph schema (``rules.schema``), items are first held to it
(:mod:`kgsearch.extract.conform`): labels and types mapped onto the schema's, or
rejected ``off_schema``; endpoints of the wrong type rejected ``pattern_mismatch``.

A relationship without a description (``relation(subject, object)`` triples, JSON with
only a label) is described by a template, "subject relation object", instead of being
rejected as short; only one with neither a description nor a label that says anything
is ``trivial_description``. Keywords longer than a name are dropped and at most
:data:`MAX_KEYWORDS` kept. An endpoint that was not listed as an entity but occurs in
the chunk is added as an entity of type ``entity`` rather than rejected (models often
skip listing them).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields

from kgsearch.extract.conform import SimilarLabels, conform
from kgsearch.extract.ontology import GraphSchema
from kgsearch.extract.schema import (
    ChunkText,
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    ExtractionResult,
    Extractor,
    Rejection,
)
from kgsearch.text.names import entity_key

__all__ = [
    "MAX_KEYWORDS",
    "TRIVIAL_PATTERNS",
    "UNGROUNDED_CONFIDENCE",
    "QualityFiltered",
    "QualityRules",
    "apply_quality",
    "grounding_form",
    "normalize_name",
    "rules_digest",
]

TRIVIAL_PATTERNS: tuple[str, ...] = (
    "is related to",
    "are related",
    "relates to",
    "related to",
    "is associated with",
    "are associated",
    "associated with",
    "is connected to",
    "are connected",
    "connected to",
    "is linked to",
    "linked to",
    "has a relationship with",
    "have a relationship",
    "has a connection with",
    "interacts with",
    "is mentioned with",
    "mentioned together",
    "appears with",
    "simple connection",
    "relationship",
)
"""Descriptions that say nothing: matched against the whole description once both
endpoint names, articles and punctuation are removed."""


MAX_KEYWORDS = 20
"""Keywords kept per relationship."""


@dataclass(frozen=True)
class QualityRules:
    """What :func:`apply_quality` keeps.

    Attributes:
        min_description_length: Shortest relationship description kept (characters);
            seed 003's 50 filters "A relates to B" and most one-clause answers.
        min_entity_description_length: Shortest entity description kept (0: any).
        trivial_patterns: Relationship descriptions that carry no meaning once the
            endpoint names are removed (matched on the whole remainder).
        max_name_length: Longest entity name kept (characters); longer ones are
            usually a sentence the model put in the name slot.
        check_in_text: Drop entities whose name does not occur in the chunk
            (case-, whitespace- and NFKC-insensitive) and relationships whose
            endpoints are neither kept entities nor in the chunk.
        max_relationships: Keep at most this many relationships per chunk (the rest
            are rejected ``over_cap``); None for no cap.
        strict_in_text: With ``check_in_text``, reject an entity the chunk does not
            spell (``not_in_text``); otherwise it is kept and recorded in the result's
            ``signals`` with a lower confidence.
        example_names: Names in the prompt's worked examples: one the chunk does not
            spell was copied from the prompt, and is rejected ``copied_from_examples``
            even under soft grounding.
        max_description_length: Longest description kept (characters); a longer one
            is rejected ``long_description`` (no chunk needs pages to describe a fact).
        describe_missing: Describe a relationship that has no description by a
            template ("Ada Lovelace wrote programs for Analytical Engine") instead of
            rejecting it as ``short_description``.
        schema: Hold every item to this graph schema first
            (:func:`kgsearch.extract.conform.conform`: labels mapped onto it, or
            rejected ``off_schema`` / ``pattern_mismatch``); None: open extraction.
        similar_labels: Under a schema, map a type or label no name matches onto the
            most similar one by embedding (:class:`~kgsearch.extract.conform.SimilarLabels`);
            None: by name only.
    """

    min_description_length: int = 50
    min_entity_description_length: int = 0
    trivial_patterns: tuple[str, ...] = TRIVIAL_PATTERNS
    max_name_length: int = 120
    check_in_text: bool = True
    max_relationships: int | None = None
    max_description_length: int = 4000
    describe_missing: bool = True
    strict_in_text: bool = False
    example_names: tuple[str, ...] = ()
    schema: GraphSchema | None = None
    similar_labels: SimilarLabels | None = field(default=None, compare=False)


def rules_digest(rules: QualityRules) -> str:
    """Eight hex digits that change with any rule (the schema by its digest; without
    one, the same digest as before schemas existed)."""
    skipped = ("schema", "similar_labels")
    values = {f.name: getattr(rules, f.name) for f in fields(rules) if f.name not in skipped}
    text = repr(sorted(values.items()))
    if rules.schema is not None:
        text += f"|schema:{rules.schema.digest}"
        if rules.similar_labels is not None:
            text += f"|labels:{rules.similar_labels.id}"
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def normalize_name(text: str) -> str:
    """NFKC, casefolded, whitespace collapsed: how names are compared."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


UNGROUNDED_CONFIDENCE = 0.5
"""The confidence recorded for an entity the chunk does not spell (soft grounding)."""
_STOPWORDS = frozenset({"the", "a", "an", "of", "and", "for", "in", "on", "at", "to", "de"})
_POSSESSIVE = re.compile(r"(?<=\w)['’]s?\b")
_NOT_WORD = re.compile(r"[^\w]+")


def _plain(text: str) -> str:
    """NFKC, then diacritics removed (case kept)."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def grounding_form(text: str) -> str:
    """How a name is looked for in its chunk: NFKC, diacritics removed, casefolded,
    possessives dropped ("Babbage's" → "babbage"), punctuation as spaces, one space
    between words, one space at each end (so words match whole)."""
    plain = _POSSESSIVE.sub("", _plain(text)).casefold()
    return " " + " ".join(_NOT_WORD.sub(" ", plain).split()) + " "


def _proper_words(text: str) -> list[str]:
    """The capitalised words of ``text`` (names, abbreviations), casefolded."""
    words = _NOT_WORD.sub(" ", _POSSESSIVE.sub("", _plain(text))).split()
    return [w.casefold() for w in words if w[:1].isupper()]


def _initials(text: str) -> set[str]:
    """Initials of every run of 2 to 6 capitalised words, little words between them
    skipped: "International Business Machines" and "Bank of England" → "ibm", "boe"."""
    found: set[str] = set()
    run: list[str] = []  # capitals only: "be"
    full: list[str] = []  # little words too: "boe"
    for word in [*_NOT_WORD.sub(" ", _plain(text)).split(), "."]:
        if word[:1].isupper():
            run.append(word[0].casefold())
            full.append(word[0].casefold())
            continue
        if word.casefold() in _STOPWORDS and run:
            full.append(word[0].casefold())
            continue
        for letters in (run, full):
            for size in range(2, 7):
                found.update("".join(letters[i : i + size]) for i in range(len(letters) - size + 1))
        run, full = [], []
    return found


def _abbreviation(name: str) -> str | None:
    """``name`` as an abbreviation ("IBM", "B.N." → "ibm", "bn"), or None if it is not
    one (two to six capitals and nothing else)."""
    letters = _NOT_WORD.sub("", _plain(name))
    return letters.casefold() if 2 <= len(letters) <= 6 and letters.isupper() else None


@dataclass
class _Text:
    """A chunk as names are looked for in it (built once per chunk)."""

    spaced: str
    proper: frozenset[str]
    initials: set[str]
    abbreviations: set[str]

    @classmethod
    def of(cls, text: str) -> _Text:
        words = _NOT_WORD.sub(" ", _plain(text)).split()
        return cls(
            grounding_form(text),
            frozenset(_proper_words(text)),
            _initials(text),
            {a for a in map(_abbreviation, words) if a is not None},
        )

    def spells(self, name: str) -> bool:
        """Whether the chunk spells ``name``: whole, in part (a capitalised word of it
        the chunk capitalises too), as its abbreviation, or expanded from it."""
        form = grounding_form(name)
        if form == " ":
            return False
        if form in self.spaced:
            return True
        if any(
            len(w) >= 3 and w not in _STOPWORDS and w in self.proper for w in _proper_words(name)
        ):
            return True  # "Lovelace" for "Ada Lovelace"
        short = _abbreviation(name)
        if short is not None and short in self.initials:
            return True  # "IBM" where the chunk says "International Business Machines"
        return bool(_initials(name) & self.abbreviations)  # the reverse


@dataclass
class _Pass:
    text: str
    rules: QualityRules
    grounding: _Text
    rejected: list[Rejection] = field(default_factory=list)
    signals: list[Rejection] = field(default_factory=list)
    copied: frozenset[str] = frozenset()
    entities: dict[tuple[str, str], ExtractedEntity] = field(default_factory=dict)
    by_name: dict[str, ExtractedEntity] = field(default_factory=dict)

    def reject(self, kind: str, reason: str, item: ExtractedEntity | ExtractedRelation) -> None:
        self.rejected.append(Rejection(kind=kind, reason=reason, item=item.model_dump()))

    def in_text(self, name: str) -> bool:
        if not self.rules.check_in_text or normalize_name(name) in self.text:
            return True
        return self.grounding.spells(name)


def apply_quality(result: ExtractionResult, text: str, rules: QualityRules) -> ExtractionResult:
    """Filter one chunk's extraction.

    Args:
        result: The parsed extraction (its ``rejected`` list is kept and extended).
        text: The chunk text the items must be supported by.
        rules: What to keep.

    Returns:
        A copy of ``result`` with the kept graph and every rejection with its reason.
    """
    graph_in = result.graph
    schema_rejected: list[Rejection] = []
    schema_signals: list[Rejection] = []
    if rules.schema is not None:
        held = conform(graph_in, rules.schema, similar=rules.similar_labels)
        graph_in, schema_rejected, schema_signals = held.graph, held.rejected, held.signals
    state = _Pass(
        text=normalize_name(text),
        rules=rules,
        grounding=_Text.of(text),
        copied=frozenset(grounding_form(n) for n in rules.example_names),
        rejected=schema_rejected,
        signals=schema_signals,
    )
    for entity in graph_in.entities:
        _keep_entity(state, entity)
    relations = _keep_relations(state, graph_in.relationships)
    graph = ExtractedGraph(entities=list(state.entities.values()), relationships=relations)
    return result.model_copy(
        update={
            "graph": graph,
            "rejected": [*result.rejected, *state.rejected],
            "signals": [*result.signals, *state.signals],
        }
    )


def _keep_entity(state: _Pass, entity: ExtractedEntity) -> None:
    rules = state.rules
    name = " ".join(entity.name.split())
    entity = entity.model_copy(update={"name": name, "type": entity.type.strip() or "entity"})
    if not entity_key(name):
        state.reject("entity", "empty_name", entity)
    elif max(len(name), len(entity.type)) > rules.max_name_length:
        state.reject("entity", "long_name", entity)
    elif rules.strict_in_text and not state.in_text(name):
        state.reject("entity", "not_in_text", entity)
    elif grounding_form(name) in state.copied and not state.in_text(name):
        state.reject("entity", "copied_from_examples", entity)
    elif len(entity.description.strip()) < rules.min_entity_description_length:
        state.reject("entity", "short_description", entity)
    elif len(entity.description) > rules.max_description_length:
        state.reject("entity", "long_description", entity)
    else:
        key = (normalize_name(entity.type), normalize_name(name))
        known = state.entities.get(key)
        if known is None and not state.in_text(name):
            item = {**entity.model_dump(), "confidence": UNGROUNDED_CONFIDENCE}
            state.signals.append(Rejection(kind="entity", reason="not_in_text", item=item))
        if known is None:
            state.entities[key] = entity
            state.by_name.setdefault(normalize_name(name), entity)
        else:
            known.description = _merge_text(known.description, entity.description)


def _merge_text(first: str, second: str) -> str:
    first, second = first.strip(), second.strip()
    if not second or normalize_name(second) in normalize_name(first):
        return first
    if not first or normalize_name(first) in normalize_name(second):
        return second
    return f"{first} {second}"


def _keep_relations(
    state: _Pass, relations: Iterable[ExtractedRelation]
) -> list[ExtractedRelation]:
    rules = state.rules
    kept: dict[tuple[str, str, str], ExtractedRelation] = {}
    for relation in relations:
        relation = relation.model_copy(
            update={
                "source": " ".join(relation.source.split()),
                "target": " ".join(relation.target.split()),
                "keywords": [k for k in relation.keywords if len(k) <= rules.max_name_length][
                    :MAX_KEYWORDS
                ],
            }
        )
        reason = _relation_problem(state, relation)
        if reason is not None:
            state.reject("relationship", reason, relation)
            continue
        if not relation.description.strip():
            relation.description = _described(relation)
        key = (
            normalize_name(relation.source),
            normalize_name(relation.target),
            normalize_name(relation.relation),
        )
        known = kept.get(key)
        if known is not None:
            known.description = _merge_text(known.description, relation.description)
            known.keywords = list(dict.fromkeys([*known.keywords, *relation.keywords]))
            state.reject("relationship", "duplicate", relation)
            continue
        if rules.max_relationships is not None and len(kept) >= rules.max_relationships:
            state.reject("relationship", "over_cap", relation)
            continue
        for name in (relation.source, relation.target):
            _ensure_endpoint(state, name)
        kept[key] = relation
    return list(kept.values())


def _relation_problem(state: _Pass, relation: ExtractedRelation) -> str | None:
    rules = state.rules
    source, target = normalize_name(relation.source), normalize_name(relation.target)
    if not entity_key(source) or not entity_key(target):
        return "empty_name"
    if source == target:
        return "self_loop"
    longest = max(len(relation.source), len(relation.target), len(relation.relation))
    if longest > rules.max_name_length:
        return "long_name"
    soft = rules.schema is not None and not rules.strict_in_text
    for name in (relation.source, relation.target):
        if normalize_name(name) not in state.by_name and not state.in_text(name) and not soft:
            return "unknown_entity"
    description = relation.description.strip()
    if not description and rules.describe_missing:
        label = _label_words(relation.relation)
        if not label or _is_trivial(label, relation, rules.trivial_patterns):
            return "trivial_description"
        return None
    if len(description) < rules.min_description_length:
        return "short_description"
    if len(description) > rules.max_description_length:
        return "long_description"
    if _is_trivial(description, relation, rules.trivial_patterns):
        return "trivial_description"
    return None


def _label_words(label: str) -> str:
    """A relation label as words: ``countryOfOrigin`` and ``country_of_origin`` →
    "country of origin"."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", label)
    return " ".join(re.sub(r"[_\W]+", " ", spaced).split()).lower()


def _described(relation: ExtractedRelation) -> str:
    """The template description of a relationship the model did not describe."""
    return f"{relation.source} {_label_words(relation.relation)} {relation.target}"


def _is_trivial(description: str, relation: ExtractedRelation, patterns: Iterable[str]) -> bool:
    rest = normalize_name(description)
    for name in sorted((relation.source, relation.target), key=len, reverse=True):
        rest = rest.replace(normalize_name(name), " ")
    rest = re.sub(r"[^\w\s]", " ", rest)
    rest = " ".join(w for w in rest.split() if w not in {"the", "a", "an", "and", "each", "other"})
    return not rest or any(rest == normalize_name(p) for p in patterns)


def _ensure_endpoint(state: _Pass, name: str) -> None:
    """An endpoint the model did not list as an entity, but that occurs in the text."""
    key = normalize_name(name)
    if key in state.by_name:
        return
    entity = ExtractedEntity(name=name, type="entity", description="")
    if not state.in_text(name):  # only under a schema with soft grounding
        item = {**entity.model_dump(), "confidence": UNGROUNDED_CONFIDENCE}
        state.signals.append(Rejection(kind="entity", reason="not_in_text", item=item))
    state.entities[("entity", key)] = entity
    state.by_name[key] = entity


class QualityFiltered:
    """Any extractor with the quality filter applied to each successful result.

    Args:
        inner: The extractor (spaCy, an imported extraction…).
        rules: The filter.
    """

    def __init__(self, inner: Extractor, rules: QualityRules) -> None:
        self.inner = inner
        self.rules = rules

    @property
    def name(self) -> str:
        """The inner extractor's name."""
        return self.inner.name

    @property
    def version(self) -> str:
        """The inner version and a digest of the rules."""
        return f"{self.inner.version}|quality:{rules_digest(self.rules)}"

    def extract(self, chunks: Sequence[ChunkText]) -> list[ExtractionResult]:
        """The inner results, filtered (failed ones are passed through)."""
        results = self.inner.extract(chunks)
        return [
            r if r.error is not None else apply_quality(r, c.text, self.rules)
            for c, r in zip(chunks, results, strict=True)
        ]
