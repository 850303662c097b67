"""How well a relation path answers a question: the relations it asks for, and the kind
of object it asks about.

A path (a sequence of relationship types, each walked forwards or backwards) is scored
from three signals, all read off the graph's own vocabulary (its relationship types and
object types, humanised: ``directed_by`` → "directed by", ``Person`` → "person"), so
nothing here knows any one graph:

* **Precision**: every step's relation should be one the question asks for. Each
  relationship type gets a match in (0, 1]: the cosine between its text and the
  question, plus a lexical bonus when the question (without the linked names) shares
  its words ("directors" and "directed", see :func:`overlap`), as
  ``exp((match - best) / τ)``; or 1 when a word of the question names it, by its
  letters or by an embedding clearly closest to it ("wrote" and "written by"). A
  path's precision is the mean match of its steps.
* **Recall**: the relations the question names (by their words or by a word whose
  embedding is clearly closest to them) should all be on the path. A path's recall is
  the share of them it holds, so "directors of the films written by" prefers *written
  by, directed by* over *written by, written by*. Each step costs a little, and a step
  on a relation the question does not name costs more: without names every type
  matches a little, and a long path would otherwise gain.
* **Answer type**: the question's answer phrase (its wh-word, or the words after
  "which"/"what": "which films", "what genres", "who", "when") is compared with the
  object types at the path's end, so a path that ends at films answers "which films"
  and one that ends at people answers "who".
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from kgsearch.search.plan import Vector
from kgsearch.text.stopwords import STOPWORDS

__all__ = ["PathScorer", "answer_phrase", "content_words", "named_relations", "overlap"]

# Softmax temperature over relation matches (cosines of short texts differ by a few 0.01).
_RELATION_TEMPERATURE = 0.1
# Added to a relation's cosine when all its words are in the question (in part when some are).
_LEXICAL = 0.3
# Softmax temperature over object-type matches of the answer phrase.
_TYPE_TEMPERATURE = 0.05
# What a step costs on a relation the question does not name (one it names: _LENGTH_COST).
_UNNAMED_COST = 0.15
# An answer phrase whose best type match is below this says nothing about the type
# ("which directors" is closer to "movie" than to "person" for a small embedder).
_TYPE_CONFIDENT = 0.35
# How much the answer type weighs beside precision and recall (each in [0, 1]).
_TYPE_WEIGHT = 1.0
# A step that adds nothing the question asks for costs this much (shorter paths win ties).
_LENGTH_COST = 0.02
# A word names a relation when its embedding is this close to the relation's text, and
# this much closer than to any other relation met.
_WORD_MATCH = 0.55
_WORD_MARGIN = 0.1
_WORDS = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[\s_\-:./]+")
_WH_ALONE = frozenset({"who", "whom", "whose", "when", "where"})
_WH_NOUN = frozenset({"which", "what", "how"})

Step = tuple[str, bool]  # relationship type, walked from source to target
Signature = tuple[Step, ...]


def content_words(text: str) -> list[str]:
    """Lower-case words of a text, stopwords left out."""
    return list(_content_words(text))


@functools.lru_cache(maxsize=256)
def _content_words(text: str) -> tuple[str, ...]:
    """:func:`content_words`, cached: the anchored leg splits the same relation type
    texts, and the same question's rest twice (prefetch, match), in every search (few
    entries: each is a list the cyclic collector walks, see ``Engine.warm``)."""
    return tuple(w for w in _WORDS.findall(text.lower()) if w not in STOPWORDS)


def overlap(query: Sequence[str], relation: Sequence[str]) -> float:
    """Share of the relation's words that some query word matches: the same word, or
    (for words of four letters or more) the same first four letters ("director" and
    "directed", "writer" and "written"), also as the last part of a compound
    ("screenwriter" and "written", "co-star" and "starred")."""
    if not relation:
        return 0.0
    hits = sum(any(_stem_match(q, r) for q in query) for r in relation)
    return hits / len(relation)


def _stem_match(word: str, relation_word: str) -> bool:
    if word == relation_word:
        return True
    if min(len(word), len(relation_word)) < 4:
        return False
    stem = relation_word[:4]
    # a compound's head: at least two letters before it, and more than the stem after
    at = word.find(stem, 2)
    return word[:4] == stem or (at >= 2 and len(word) - at > 4)


def named_relations(
    words: Sequence[str], types: Sequence[str], text_vector: Callable[[str], Vector]
) -> set[str]:
    """The relation types some word names by meaning: its embedding is close to the
    type's humanised text (at least ``_WORD_MATCH``) and clearly closer than to any other
    type given (by ``_WORD_MARGIN``): "wrote" names *written by*, "director" names
    *directed by*.

    Args:
        words: The question's content words (without its linked names).
        types: The relationship types to choose among.
        text_vector: Unit vector of a word or humanised type text (cached by the caller).
    """
    if not types or not words:
        return set()
    relations = np.stack([text_vector(humanise(t)) for t in types])
    found: set[str] = set()
    for word in words:
        cosines = relations @ text_vector(word)
        order = np.argsort(-cosines)
        best = float(cosines[order[0]])
        second = float(cosines[order[1]]) if len(order) > 1 else 0.0
        if best >= _WORD_MATCH and best - second >= _WORD_MARGIN:
            found.add(types[int(order[0])])
    return found


def answer_phrase(words: Sequence[str | None]) -> str:
    """What the question asks for, in its own words: "who", "when", "where" alone, or the
    first content words after "which"/"what"/"how" ("which films share" → "films share",
    "what are the genres of" → "genres"), up to the linked name (None in ``words``):
    "what does [X] star in" asks for no noun, so its phrase is "what". Empty when the
    question has no wh-word."""
    lower = [w.lower().strip("?.,!;:'\"()") if w is not None else None for w in words]
    for i, word in enumerate(lower):
        if word in _WH_ALONE:
            return word
        if word is None or word not in _WH_NOUN:
            continue
        taken: list[str] = []
        for other in lower[i + 1 :]:
            if other is None:
                break
            if not other or other in STOPWORDS:
                if taken:
                    break
                continue
            taken.append(other)
            if len(taken) == 2:
                break
        return " ".join(taken) or word
    return ""


@dataclass
class PathScorer:
    """Scores relation paths against one question (see the module docstring).

    Attributes:
        vector: The unit vector of the question.
        words: The content words of the question without its linked names.
        answer: The unit vector of the answer phrase, or None without one.
        answer_words: The answer phrase's content words.
        text_vector: Unit vector of a relation, type or word text (cached by the caller).
    """

    vector: Vector
    words: list[str]
    answer: Vector | None
    answer_words: list[str]
    text_vector: Callable[[str], Vector]
    _raw: dict[str, float] = field(default_factory=dict)
    _lexical: dict[str, float] = field(default_factory=dict)
    _types: dict[str, float] = field(default_factory=dict)
    _matches: dict[str, float] | None = None
    _asked: set[str] = field(default_factory=set)
    _named_types: set[str] = field(default_factory=set)

    def add_relations(self, types: Iterable[str]) -> None:
        """Match relationship types not met yet against the question."""
        for type_ in types:
            if type_ not in self._raw:
                text = humanise(type_)
                cosine = float(np.dot(self.vector, self.text_vector(text)))
                lexical = overlap(self.words, content_words(text))
                self._raw[type_] = cosine + _LEXICAL * lexical
                self._lexical[type_] = lexical
                self._matches = None

    def add_object_types(self, types: Iterable[str]) -> None:
        """Match object types not met yet against the answer phrase."""
        if self.answer is None:
            return
        for type_ in types:
            if type_ not in self._types:
                vector = self.text_vector(humanise(type_))
                self._types[type_] = float(np.dot(self.answer, vector))

    def relation_matches(self) -> dict[str, float]:
        """Each relationship type met, with its match in (0, 1]: by the whole question's
        meaning, relative to the best match; or 1 when a word of the question names it
        (its words, see :func:`overlap`, or a word whose embedding is clearly closest to
        it: "wrote" and "written by"), whichever is more. A question that names two
        relations embeds close to one of them only."""
        if self._matches is not None:
            return self._matches
        top = max(self._raw.values(), default=0.0)
        matches = {
            t: max(math.exp((raw - top) / _RELATION_TEMPERATURE), self._lexical[t])
            for t, raw in self._raw.items()
        }
        named = self._named(self.words)
        self._asked = {
            t for t in self._raw if overlap(self.answer_words, content_words(humanise(t)))
        } | self._named(self.answer_words)
        for type_ in named:
            matches[type_] = 1.0
        self._named_types = named | {t for t, share in self._lexical.items() if share >= 0.5}
        self._matches = matches
        return matches

    def _named(self, words: Sequence[str]) -> set[str]:
        """The relation types some word's embedding is clearly closest to."""
        return named_relations(words, list(self._raw), self.text_vector)

    def score(self, sig: Signature, end_type: str | None, *, final: bool = True) -> float:
        """Precision + recall + answer match of a path (see the module docstring);
        ``final=False`` scores a prefix still walked on (its end is not the answer yet)."""
        matches = self.relation_matches()
        if not sig:
            return 0.0
        steps = [matches.get(t, 0.0) for t, _ in sig]
        precision = sum(steps) / len(steps)
        named = self._named_types
        recall = len(named & {t for t, _ in sig}) / len(named) if named else 0.0
        # a step on a relation the question does not name costs more: without names,
        # every type matches a little, and a longer path would otherwise gain
        cost = sum(_LENGTH_COST if t in named else _UNNAMED_COST for t, _ in sig)
        answer = self.answer_match(sig, end_type) if final else 1.0
        return precision + recall + _TYPE_WEIGHT * answer - cost

    def answer_match(self, sig: Signature, end_type: str | None) -> float:
        """How well a path's end answers the answer phrase, in [0, 1]. When the phrase
        names a relation ("which directors", "what genres"), the path must end on it,
        walked forwards (to the objects the relation points at); otherwise the end's
        object type is matched with the phrase (1 without evidence either way)."""
        self.relation_matches()
        if self._asked:
            type_, forward = sig[-1]
            return 1.0 if forward and type_ in self._asked else 0.0
        return self.type_match(end_type)

    def type_match(self, end_type: str | None) -> float:
        """How well an object type answers the answer phrase, in (0, 1] (1 without an
        answer phrase, a known type or a confident match)."""
        if self.answer is None or end_type is None or end_type not in self._types:
            return 1.0
        top = max(self._types.values())
        if top < _TYPE_CONFIDENT:
            return 1.0
        return math.exp((self._types[end_type] - top) / _TYPE_TEMPERATURE)


@functools.lru_cache(maxsize=1024)
def humanise(name: str) -> str:
    """A relationship or object type as words: ``directed_by`` → ``directed by``,
    ``WORKS_FOR`` → ``works for``, ``hasGenre`` → ``has genre``. Cached: a graph has
    few types, and the anchored leg humanises each type it meets in every search."""
    spaced = _CAMEL.sub(" ", name)
    return " ".join(_SEPARATORS.split(spaced)).strip().lower()
