"""Rule-based coreference for the offline extractor, within one text (a chunk).

No model: a few rules that cover most of what encyclopaedic and report text does.

- **Short names**: a person's name that ends an earlier, longer person's name
  ("Curie" after "Marie Curie") is that person; when two earlier names fit ("Marie
  Curie", "Pierre Curie"), the most recent wins. Only people: for other kinds the
  shorter name is mostly another entity ("French" / "French Resistance", "Toyota" /
  "Toyota Avalon", "Labour Party" / "Irish Labour Party": 204 of 616 such merges on
  Re-DocRED dev joined two different gold entities before this rule).
- **Aliases** given by the text ("Energy Security Initiative (ESI)", "X, also known as
  Y") are found by the dependency rules and merged here through :func:`merge_aliases`.
- **Pronouns**: ``he/him/his/she/her/hers`` → the most recent person that was a
  sentence subject (else the most recent person); ``it/its`` as a subject or possessive
  → the text's topic (the subject of its first sentence) when that is not a person,
  else the most recent non-person subject. Pronouns before any candidate stay
  unresolved; ``they`` is left alone (on Re-DocRED dev, resolving it to the most recent
  organisation or group gave 1 right pair in 27).

The result maps token indices to entity keys; :mod:`kgsearch.extract.spacy` treats a
resolved pronoun as a mention of its entity for relationships (never for entity
descriptions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token

__all__ = [
    "Mention",
    "merge_aliases",
    "resolve_nominals",
    "resolve_pronouns",
    "resolve_short_names",
]

_MALE_FEMALE = frozenset({"he", "him", "his", "himself", "she", "her", "hers", "herself"})
_FEMALE = frozenset({"she", "her", "hers", "herself"})
_NEUTER = frozenset({"it", "its", "itself"})
_SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass"})
# "it" as an expletive ("it is said that", "it was decided to") refers to nothing.
_EXPLETIVE_HEADS = frozenset({"ccomp", "xcomp"})
_PERSON = "PERSON"
# Where "the company" may stand for the topic: a subject or a possessor.
_NOMINAL_DEPS = frozenset({"nsubj", "nsubjpass", "poss"})


@dataclass(frozen=True)
class Mention:
    """One entity mention: token range ``[start, end)``, entity key, NER label."""

    start: int
    end: int
    key: str
    label: str


def resolve_short_names(mentions: list[Mention], words: dict[str, list[str]]) -> list[Mention]:
    """The mentions with each short name replaced by the earlier longer name it abbreviates.

    Args:
        mentions: In text order.
        words: Each key's words (casefolded), for matching.

    Returns:
        The same mentions, some with the key of a longer name.
    """
    resolved: list[Mention] = []
    for mention in mentions:
        short = words[mention.key]
        target = None
        for earlier in reversed(resolved):
            long = words[earlier.key]
            if (
                mention.label == earlier.label == _PERSON
                and len(long) > len(short)
                and long[-len(short) :] == short
            ):
                target = earlier.key
                break
        resolved.append(
            mention
            if target is None
            else Mention(mention.start, mention.end, target, mention.label)
        )
    return resolved


def merge_aliases(mentions: list[Mention], aliases: dict[str, str]) -> list[Mention]:
    """The mentions with every alias key (``EESI``) replaced by its entity's key."""
    out = []
    for m in mentions:
        key = m.key
        seen = {key}
        while key in aliases and aliases[key] not in seen:
            key = aliases[key]
            seen.add(key)
        out.append(m if key == m.key else Mention(m.start, m.end, key, m.label))
    return out


def resolve_pronouns(doc: Doc, mentions: list[Mention]) -> dict[int, str]:
    """Token index of each resolvable pronoun → the key of the entity it refers to.

    A person once referred to as "she" is not taken for a later "he" (and the other way
    round). Candidates in order: the most recent subject (a title line counts as one)
    already referred to with this pronoun's gender, the most recent subject of unknown
    gender, then the same two among all people.
    """
    at = {m.start: m for m in mentions}
    heads = {m.start: _head(doc, m) for m in mentions}
    topic = _topic(doc, mentions, heads)
    people: list[str] = []  # most recent last; subjects are moved to the end again
    subjects: list[str] = []
    gender: dict[str, str] = {}
    thing_subject = None
    resolved: dict[int, str] = {}
    for token in doc:
        mention = at.get(token.i)
        if mention is not None:
            is_subject = _is_subject(doc, mention, heads[token.i])
            if mention.label == _PERSON:
                people.append(mention.key)
                if is_subject:
                    subjects.append(mention.key)
            elif is_subject:
                thing_subject = mention.key
            continue
        if token.pos_ != "PRON":
            continue
        word = token.lower_
        target = None
        if word in _MALE_FEMALE:
            sex = "f" if word in _FEMALE else "m"
            target = (
                _latest(subjects, gender, sex, known=True)
                or _latest(subjects, gender, sex)
                or _latest(people, gender, sex, known=True)
                or _latest(people, gender, sex)
            )
            if target is not None:
                gender.setdefault(target, sex)
        elif word in _NEUTER and _refers(token):
            target = topic or thing_subject
        if target is not None:
            resolved[token.i] = target
    return resolved


def resolve_nominals(doc: Doc, mentions: list[Mention]) -> dict[int, tuple[int, str]]:
    """Each "the company" that names the text's topic: noun token → (its determiner's
    token, the topic's key).

    The topic is the non-person subject of the text's first statement when that says
    what it is ("Kraft Foods is an American company"); later, "the company" or "this
    company" as a subject or possessor is the topic, as a reader takes it.
    """
    found: dict[int, tuple[int, str]] = {}
    defined = _defined_topic(doc, mentions)
    if defined is None:
        return found
    topic, noun, after = defined
    inside = {i for m in mentions for i in range(m.start, m.end)}
    for token in doc[after:]:
        if token.i in inside or token.pos_ != "NOUN" or token.lemma_.lower() != noun:
            continue
        dets = [c for c in token.children if c.dep_ == "det" and c.lower_ in ("the", "this")]
        if dets and token.dep_ in _NOMINAL_DEPS and dets[0].i == token.left_edge.i:
            found[token.i] = (dets[0].i, topic)
    return found


def _defined_topic(doc: Doc, mentions: list[Mention]) -> tuple[str, str, int] | None:
    """(topic key, the noun that says what it is, where its sentence ends) when the
    text's first statement is "X is a <noun>" with X no person."""
    first = _first_statement(doc)
    if first is None:
        return None
    for m in mentions:
        if m.start < first.start:
            continue
        head = doc[_head(doc, m)]
        if m.start >= first.end or head.dep_ not in _SUBJECT_DEPS:
            break
        if m.label == _PERSON or head.head.lemma_ != "be":
            return None
        for attr in head.head.children:
            if attr.dep_ == "attr" and attr.pos_ == "NOUN":
                return m.key, attr.lemma_.lower(), first.end
        return None
    return None


def _first_statement(doc: Doc) -> Span | None:
    """The first sentence with a verb (a title line has none)."""
    for sent in doc.sents:
        if any(t.pos_ in ("VERB", "AUX") for t in sent):
            return sent
    return None


def _is_subject(doc: Doc, mention: Mention, head: int) -> bool:
    """The mention is a sentence subject, or a title: a line of its own."""
    if doc[head].dep_ in _SUBJECT_DEPS:
        return True
    sent = doc[head].sent
    words = [t for t in sent if not (t.is_space or t.is_punct)]
    return bool(words) and mention.start <= words[0].i and words[-1].i < mention.end


def _latest(
    keys: list[str], gender: dict[str, str], sex: str, *, known: bool = False
) -> str | None:
    """The most recent key whose gender is ``sex`` (or unknown, unless ``known``)."""
    for key in reversed(keys):
        if gender.get(key, "" if known else sex) == sex:
            return key
    return None


def _refers(token: Token) -> bool:
    """``it``/``its`` that can name something: a possessive or a non-expletive subject."""
    if token.dep_ == "poss":
        return True
    if token.dep_ not in _SUBJECT_DEPS:
        return False
    return not any(c.dep_ in _EXPLETIVE_HEADS for c in token.head.children)


def _topic(doc: Doc, mentions: list[Mention], heads: dict[int, int]) -> str | None:
    """The non-person subject of the text's first sentence, if it has one."""
    first = next(iter(doc.sents), None)
    if first is None:
        return None
    for m in mentions:
        if m.start >= first.end:
            break
        if doc[heads[m.start]].dep_ in _SUBJECT_DEPS and m.label != _PERSON:
            return m.key
    return None


def _head(doc: Doc, mention: Mention) -> int:
    """The syntactic head of the mention's tokens (the one whose head is outside)."""
    for i in range(mention.start, mention.end):
        head = doc[i].head.i
        if head < mention.start or head >= mention.end or head == i:
            return i
    return mention.end - 1
