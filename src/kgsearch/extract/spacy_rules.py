"""Dependency-parse patterns of the offline extractor: what a sentence states.

Each pattern reads entity mentions (token index → entity key) and yields
:class:`Fact` records between two mention tokens, with the relation type taken from
the words that state it, lemmatised and lower-cased:

- **verb + object**: subject → verb → direct object or attribute (``meet``), a
  preposition's object with the preposition (``bear in``, ``base in``), a particle
  (``set up``); passive agents turned back into the active direction (``found``:
  "founded by Jobs" gives Jobs → company); subjects inherited by conjoined verbs,
  participles, relative clauses and "to" complements.
- **copula and apposition** through a common noun: "Paris is the capital of France",
  "Tim Cook, the CEO of Apple", "Apple's CEO Tim Cook" (``capital of``, ``ceo of``),
  and nationality or place modifiers: "X is a French physicist" (``be physicist``).
- **entity = entity**: two places in apposition ("Berlin, Germany") give ``located
  in``; "X in Y" between places too. Any other pair of names in apposition or joined
  by a copula ("Emilio Estevez is Pat Hingle") is no fact and is dropped; a
  parenthesised acronym ("Initiative (EESI)") or "also known as" name is an alias,
  returned by :func:`aliases`, not a relationship.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

__all__ = ["FAMILIES", "LOCATED_IN", "Fact", "aliases", "facts"]

LOCATED_IN = "located in"

FAMILIES = (
    "verb object",  # "Jobs founded Apple"
    "verb prep",  # "born in Warsaw", "based in Chicago"
    "passive agent",  # "founded by Jobs"
    "verb noun",  # through the object's own name: "joined the band Queen"
    "copula noun",  # "Paris is the capital of France", "X is a French physicist"
    "role apposition",  # "Tim Cook, the CEO of Apple", "Apple's CEO Tim Cook"
    "role modifier",  # "Cuban photographer Alberto Korda"
    "possessive",  # "Iceland's Yohanna"
    "place apposition",  # "Berlin, Germany", "Huangpi, Wuhan, Hubei, China"
    "place in place",  # "Buttenhausen in Münsingen"
    "place noun",  # "the U.S. state of Michigan"
)
"""The pattern families of :func:`facts`, for measuring each on its own."""

_SUBJECTS = frozenset({"nsubj", "nsubjpass", "csubj"})
_OBJECTS = frozenset({"dobj", "attr", "dative", "oprd"})
_VERBS = frozenset({"VERB", "AUX"})
# A verb without its own subject takes the one of the verb it is conjoined to or
# completes ("was born in X and worked at Y", "wanted to visit Y").
_INHERITS_SUBJECT = frozenset({"conj", "xcomp", "advcl"})
_RELATIVE_PRONOUNS = frozenset({"who", "which", "that", "whom"})
_PLACES = frozenset({"GPE", "LOC"})
# What may come first in a comma chain of places ("Lincoln High School, Illinois").
_CHAIN_HEADS = frozenset({"FAC", "ORG"})
# Town, county, state, country: a longer comma run of places is a list.
_CHAIN_MAX = 4
# Modifiers of a role noun that say where someone or something is from.
_ORIGINS = frozenset({"NORP", "GPE", "LOC"})
# Dependencies that stay inside a noun phrase ("a town in X, Y and Z"); clauses
# (relcl, acl, advcl) are left to their own verbs.
_PHRASE_DEPS = frozenset({"prep", "pobj", "appos", "conj", "compound", "poss", "npadvmod"})
_PHRASE_DEPTH = 4
# Nouns that name a place by its kind: "the U.S. state of Michigan".
_PLACE_NOUNS = frozenset(
    {"state", "province", "county", "city", "town", "village", "region", "district"}
    | {"country", "municipality", "island", "department", "prefecture", "borough"}
)
_NAMED = frozenset({"NOUN", "PROPN", "PRON", "NUM", "X"})
# Nouns that only measure out what follows ("a series of articles for X", "a portion
# of Quincy"): no relation of their own.
_PARTITIVES = frozenset(
    {"portion", "list", "series", "number", "variety", "kind", "type", "range", "lot"}
    | {"couple", "pair", "set", "total", "majority", "half", "rest", "most", "host"}
    | {"collection", "selection", "array", "handful", "dozen", "sort"}
)


@dataclass(frozen=True)
class Fact:
    """A relationship stated between two mention tokens.

    Attributes:
        source: Token index of the source mention (or a resolved pronoun).
        target: Token index of the target mention.
        relation: Normalised relation type (``bear in``, ``ceo of``).
        keyword: The verb lemma or noun that states it.
        trigger: Token index of that verb or noun.
        family: The pattern that found it (:data:`FAMILIES`).
    """

    source: int
    target: int
    relation: str
    keyword: str
    trigger: int
    family: str = "verb object"


def facts(doc: Doc, keys: dict[int, str]) -> Iterator[Fact]:
    """Every fact the parse states between the mentions in ``keys``."""
    for chain in _comma_chains(doc, keys):
        for n, near in enumerate(chain):
            for far in chain[n + 1 :]:
                yield Fact(near, far, LOCATED_IN, "appos", far, "place apposition")
    for token in doc:
        if token.dep_ == "appos":
            yield from _apposition(token, keys)
        if token.i in keys:
            yield from _name_modifiers(token, keys)
            if token.ent_type_ in _PLACES:
                yield from _place_in_place(token, keys)
        elif _place_noun(token):
            yield from _place_kind(token, keys)
        if token.pos_ not in _VERBS or token.dep_ in ("aux", "auxpass") or _negated(token):
            continue
        yield from _verb_facts(token, keys)


_LINKING = frozenset({"be", "become", "remain"})
"""Verbs that link their subject to the object noun ("became CEO of Apple"): the name
after the noun is the fact's, as after a copula."""


def _verb_facts(verb: Token, keys: dict[int, str]) -> Iterator[Fact]:
    """Subject → verb → object facts, passive agents turned active.

    An entity that only qualifies the verb's object noun through a preposition or a
    possessive ("took the phone of X", "at the request of X") is not the verb's
    argument and gets no fact, but for a linking verb ("is the capital of X", "became
    CEO of X") and a place
    noun ("born in the city of X"); nor does a nationality adjective on the object of a
    thing's verb (:func:`_origin_of_thing`).
    """
    lemma = _verb_phrase(verb)
    subjects = [s for s in _subjects(verb) if s.i in keys]
    for obj, relation, passive_agent in _objects(verb, lemma):
        for target, suffix in _object_tokens(obj, keys):
            label = f"{relation} {suffix}" if suffix else relation
            if " " in suffix and lemma not in _LINKING and not _place_noun(obj):
                continue
            if lemma not in _LINKING and _origin_of_thing(obj, target, subjects):
                continue
            for subject in subjects:
                if obj.dep_ == "attr" and not suffix and target == obj.i:
                    continue  # "X is Y" between two names: no fact (identity at best)
                if passive_agent and not suffix:
                    yield Fact(target, subject.i, label, lemma, verb.i, "passive agent")
                elif not passive_agent:  # "founded by men in New York": not New York
                    family = _verb_family(lemma, relation, suffix)
                    yield Fact(subject.i, target, label, lemma, verb.i, family)


def aliases(doc: Doc, keys: dict[int, str]) -> Iterator[tuple[int, int]]:
    """(alias token, entity token) pairs the text declares: "Initiative (EESI)",
    "X, also known as Y", "X (also called Y)"."""
    for token in doc:
        if token.dep_ == "appos" and token.i in keys and token.head.i in keys:
            if _parenthesised(token) and _is_acronym(doc, token, keys):
                yield token.i, token.head.i
        elif token.lemma_.lower() in ("know", "call") and token.dep_ == "acl":
            head = token.head
            for prep in token.children:
                if prep.dep_ in ("prep", "oprd") and prep.lower_ == "as":
                    for obj in prep.children:
                        if obj.dep_ == "pobj" and obj.i in keys and head.i in keys:
                            yield obj.i, head.i
                elif prep.dep_ == "oprd" and prep.i in keys and head.i in keys:
                    yield prep.i, head.i


def _origin_of_thing(obj: Token, target: int, subjects: list[Token]) -> bool:
    """The target is a nationality adjective on the object of a verb whose subject is no
    person ("detonated over the Japanese cities", "played on Swedish radio"): it says
    where the object is from, nothing of the subject."""
    adjective = obj.doc[target]
    return (
        adjective.dep_ == "amod"
        and adjective.head.i == obj.i
        and adjective.ent_type_ == "NORP"
        and not any(s.ent_type_ == "PERSON" for s in subjects)
    )


def _verb_family(lemma: str, relation: str, suffix: str) -> str:
    if suffix:
        return "copula noun" if lemma == "be" else "verb noun"
    return "verb object" if relation == lemma else "verb prep"


def _negated(verb: Token) -> bool:
    """The verb, or the verb it completes, is negated ("did not agree to align with X")."""
    while True:
        if any(c.dep_ == "neg" for c in verb.children):
            return True
        if verb.dep_ not in ("xcomp", "ccomp") or verb.head is verb:
            return False
        verb = verb.head


def _verb_phrase(verb: Token) -> str:
    """The verb's lemma with its particle, lower-case ("set up", "take over"); "born"
    stays "born" (its lemma "bear" reads as another verb: "born in", not "bear in")."""
    particles = [c.lower_ for c in verb.children if c.dep_ == "prt"]
    lemma = "born" if verb.lower_ == "born" else verb.lemma_.lower()
    return " ".join([lemma, *particles])


def _subjects(verb: Token) -> list[Token]:
    """The verb's subjects, inherited from a conjoined verb or a modified noun."""
    found = [_named(c) for c in verb.children if c.dep_ in _SUBJECTS]
    if verb.dep_ == "relcl":
        found = [verb.head if c.lower_ in _RELATIVE_PRONOUNS else c for c in found] or [verb.head]
    elif not found and verb.dep_ == "acl":
        head = verb.head
        if head.dep_ == "attr" and head.head.pos_ in _VERBS and head.ent_type_ == "":
            return _subjects(head.head)  # "X is a lake located in Y": X is located in Y
        found = [head.head if head.dep_ == "appos" and head.ent_type_ == "" else head]
    elif not found and verb.dep_ in _INHERITS_SUBJECT and verb.head.pos_ in _VERBS:
        return _subjects(verb.head)
    return [c for s in found for c in (s, *s.conjuncts)]


def _named(noun: Token) -> Token:
    """The name a role noun stands for ("Apple's CEO Tim Cook visited" → Tim Cook)."""
    if noun.pos_ in ("NOUN", "PROPN") and noun.ent_type_ == "":
        for child in noun.children:
            if child.dep_ == "appos" and child.ent_type_:
                return child
    return noun


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


def _object_tokens(token: Token, keys: dict[int, str]) -> list[tuple[int, str]]:
    """(entity token, label suffix) for the entities an object's noun phrase names.

    The object itself, or through a common noun ("the capital of X" → ``capital of``,
    "a French physicist" → ``physicist``), and then whatever hangs off those by
    preposition, apposition or conjunction ("born in Mediaș, Romania" reaches Romania
    too), never into a clause.
    """
    if token.pos_ not in _NAMED and token.i not in keys:
        return []
    found: list[tuple[int, str]] = []
    suffix = noun = ""
    if token.i in keys:
        found.append((token.i, ""))
    else:
        links = _noun_links(token, keys)
        found += links
        suffix = links[0][1] if links else ""
        if token.pos_ == "NOUN" and token.lemma_.lower() not in _PARTITIVES:
            noun = token.lemma_.lower()  # "the lead singer of the band X" → "singer of"
    for t, prep in _phrase_entities(token, keys, "", _PHRASE_DEPTH):
        found.append((t, suffix or " ".join(w for w in (noun, prep) if w)))
    return list(dict.fromkeys(found))


def _phrase_entities(
    token: Token, keys: dict[int, str], prep: str, depth: int
) -> list[tuple[int, str]]:
    """(entity token, first preposition on the way) below ``token`` along noun-phrase links."""
    found: list[tuple[int, str]] = []
    if depth == 0:
        return found
    for child in token.children:
        if child.dep_ not in _PHRASE_DEPS or _parenthesised(child):
            continue
        if child.dep_ == "conj" and token.pos_ == "NOUN" and token.i not in keys:
            continue  # "averages 135 inches, and Sapporo": another object, not a name
        if child.dep_ == "compound" and token.pos_ == "NOUN" and not _place_noun(token):
            continue  # "noted Philadelphia architect X": Philadelphia only qualifies
        if token.lemma_.lower() in _PARTITIVES:
            continue
        via = prep or (child.lower_ if child.dep_ == "prep" else "")
        if child.i in keys and keys[child.i] != keys.get(token.i):
            found.append((child.i, via))
        found += _phrase_entities(child, keys, via, depth - 1)
    return found


def _noun_links(noun: Token, keys: dict[int, str]) -> list[tuple[int, str]]:
    """(entity token, relation) reached from a common noun: of-phrases, possessives,
    name compounds and origin modifiers ("a French physicist")."""
    word = noun.lemma_.lower() if noun.pos_ == "NOUN" else noun.lower_
    found: list[tuple[int, str]] = []
    if word in _PARTITIVES:
        return found
    for child in noun.children:
        if child.dep_ == "prep":
            for pobj in child.children:
                if pobj.dep_ != "pobj":
                    continue
                for obj in (pobj, *pobj.conjuncts):
                    if obj.i in keys:
                        found.append((obj.i, f"{word} {child.lower_}"))
        elif child.dep_ == "poss" and child.i in keys:
            found.append((child.i, f"{word} of"))
        elif child.i in keys and (
            child.dep_ == "compound" or (child.dep_ == "amod" and child.ent_type_ in _ORIGINS)
        ):
            found.append((child.i, word))
    return found


def _apposition(appos: Token, keys: dict[int, str]) -> list[Fact]:
    """ "X, the CEO of Y" / "Y's CEO X" → X ``ceo of`` Y; "Berlin, Germany" → ``located in``."""
    head = appos.head
    if head.i in keys and appos.i in keys:
        both_places = head.ent_type_ in _PLACES and appos.ent_type_ in _PLACES
        if both_places and _next_to(head, appos, keys):
            return [Fact(head.i, appos.i, LOCATED_IN, "appos", appos.i, "place apposition")]
        return []  # two names side by side: an alias or a list, not a fact
    if head.i in keys:
        return [
            Fact(head.i, t, rel, rel, appos.i, "role apposition")
            for t, rel in _noun_links(appos, keys)
        ]
    if appos.i in keys and head.pos_ in ("NOUN", "PROPN"):
        facts = []
        place = _place_noun(head) or appos.ent_type_ in _PLACES
        for t, rel in _noun_links(head, keys):
            if place and head.doc[t].ent_type_ in _PLACES and _next_to(head, appos, keys):
                # "Kanyakumari district, Tamil Nadu": the place named is in the other
                facts.append(Fact(t, appos.i, LOCATED_IN, "appos", appos.i, "place apposition"))
            else:  # "Apple's CEO Tim Cook": the name stands in apposition to its role
                facts.append(Fact(appos.i, t, rel, rel, head.i, "role apposition"))
        return facts
    return []


def _name_modifiers(name: Token, keys: dict[int, str]) -> Iterator[Fact]:
    """ "Cuban photographer Alberto Korda" → Korda ``photographer`` Cuban (a role noun
    before a person's name, with where the person is from); "Iceland's Yohanna" →
    Yohanna ``of`` Iceland."""
    for child in name.children:
        if child.i in keys:
            if child.dep_ == "poss" and keys[child.i] != keys[name.i]:
                yield Fact(name.i, child.i, "of", "'s", child.i, "possessive")
        elif child.dep_ == "compound" and child.pos_ == "NOUN" and name.ent_type_ == "PERSON":
            word = child.lemma_.lower()
            for mod in child.children:
                if mod.i in keys and mod.dep_ in ("amod", "compound") and mod.ent_type_ in _ORIGINS:
                    yield Fact(name.i, mod.i, word, word, child.i, "role modifier")


def _place_kind(noun: Token, keys: dict[int, str]) -> Iterator[Fact]:
    """ "the U.S. state of Michigan", "the Canadian province of Saskatchewan" →
    Michigan ``located in`` U.S."""
    outer = [c for c in noun.children if c.i in keys and c.dep_ in ("compound", "amod", "poss")]
    outer = [c for c in outer if c.ent_type_ in _ORIGINS]
    if not outer:
        return
    for place in _places_named(noun, keys):
        for o in outer:
            if keys[o.i] != keys[place.i]:
                yield Fact(place.i, o.i, LOCATED_IN, "of", noun.i, "place noun")


def _place_in_place(place: Token, keys: dict[int, str]) -> Iterator[Fact]:
    """ "Buttenhausen in Münsingen", "a lake in the U.S. state of Michigan" → ``located
    in``; "Springfield, Illinois, United States" → each place is in every later one."""
    for prep in place.children:
        if prep.dep_ == "prep" and prep.lower_ == "in":
            for obj in prep.children:
                if obj.dep_ != "pobj":
                    continue
                for target in _places_named(obj, keys):
                    yield Fact(place.i, target.i, LOCATED_IN, "in", prep.i, "place in place")
    if place.dep_ not in ("appos", "conj") and not _parenthesised(place):
        chain = _place_chain(place, keys)
        for n, near in enumerate(chain):
            for far in chain[n + 1 :]:
                yield Fact(near.i, far.i, LOCATED_IN, "appos", far.i, "place apposition")


def _mention_spans(keys: dict[int, str]) -> list[tuple[int, int]]:
    """[start, end) of each mention: runs of tokens with one key."""
    spans: list[tuple[int, int]] = []
    for i in sorted(keys):
        if spans and spans[-1][1] == i and keys[i] == keys[i - 1]:
            spans[-1] = (spans[-1][0], i + 1)
        else:
            spans.append((i, i + 1))
    return spans


def _comma_chains(doc: Doc, keys: dict[int, str]) -> list[list[int]]:
    """Places written one after another with only a comma between them ("Dortmund,
    West Germany", "Lincoln High School, East St. Louis, Illinois"), as read from the
    text, not the parse (which often takes them for a list): the first token of each
    mention. The first may be a facility or organisation, the others are places; a run
    followed by "and"/"or" ("Paris, London and Rome"), longer than :data:`_CHAIN_MAX`, or
    run on by a comma into other names is a list, not a chain."""
    chains: list[list[int]] = []
    run: list[tuple[int, int]] = []

    def close() -> None:
        if not run:
            return
        start, end = run[0][0], run[-1][1]
        after = [t.lower_ for t in doc[end : end + 2]]
        listed = after[:1] in (["and"], ["or"]) or after in ([",", "and"], [",", "or"])
        # a comma before it, or one after it and another name: part of a longer list
        listed = listed or (start > 0 and doc[start - 1].text == ",")
        listed = listed or (after[:1] == [","] and end + 1 in keys)
        if 1 < len(run) <= _CHAIN_MAX and not listed:
            chains.append([start for start, _ in run])

    for start, end in _mention_spans(keys):
        label = doc[start].ent_type_
        joined = bool(run) and [t.text for t in doc[run[-1][1] : start]] == [","]
        if joined and label in _PLACES and doc[start].sent == doc[run[-1][0]].sent:
            run.append((start, end))
            continue
        close()
        run = [(start, end)] if label in _PLACES or label in _CHAIN_HEADS else []
    close()
    return chains


def _place_noun(token: Token) -> bool:
    return token.lemma_.lower() in _PLACE_NOUNS


def _places_named(obj: Token, keys: dict[int, str]) -> list[Token]:
    """The place an object names, directly or as "the state of X"."""
    if obj.i in keys:
        return [obj] if obj.ent_type_ in _PLACES else []
    if obj.pos_ != "NOUN" or not _place_noun(obj):
        return []
    return [
        pobj
        for prep in obj.children
        if prep.dep_ == "prep" and prep.lower_ == "of"
        for pobj in prep.children
        if pobj.dep_ == "pobj" and pobj.i in keys and pobj.ent_type_ in _PLACES
    ]


def _place_chain(place: Token, keys: dict[int, str]) -> list[Token]:
    """The places of a comma list that nests them ("Huangpi, Wuhan, Hubei, China"),
    starting at ``place``; empty when the list has "and"/"or" (a list of places side by
    side) or fewer than two places."""
    chain = [place]
    todo = [place]
    while todo:
        for child in todo.pop().children:
            if child.dep_ == "cc":
                return []
            if (
                child.dep_ in ("conj", "appos")
                and child.i in keys
                and child.ent_type_ in _PLACES
                and not _parenthesised(child)
            ):
                chain.append(child)
                todo.append(child)
    chain.sort(key=lambda t: t.i)
    if not all(_next_to(near, far, keys) for near, far in pairwise(chain)):
        return []
    return chain if len(chain) > 1 else []


def _next_to(near: Token, far: Token, keys: dict[int, str]) -> bool:
    """Only a comma stands between the two mentions ("Springfield, Illinois"; not
    "Georgia (186), Alabama" nor "Kristiania (now Oslo)")."""
    start, end = _mention_edge(near, keys, 1) + 1, _mention_edge(far, keys, -1)
    return [t.text for t in near.doc[start:end]] == [","]


def _mention_edge(token: Token, keys: dict[int, str], step: int) -> int:
    """Index of the last (``step`` 1) or first (``step`` -1) token of the mention."""
    i, key = token.i, keys.get(token.i)
    while key is not None and keys.get(i + step) == key:
        i += step
    return i


def _parenthesised(token: Token) -> bool:
    """The token's phrase opens with a bracket ("Kristiania (now Oslo)")."""
    left = token.left_edge.i
    return left > 0 and token.doc[left - 1].text in ("(", "[")


def _is_acronym(doc: Doc, token: Token, keys: dict[int, str]) -> bool:
    """The mention at ``token`` is written in capitals ("EESI", "NAVFORGER")."""
    letters = [c for c in keys[token.i] if c.isalpha()]
    return bool(letters) and token.text.isupper() and len(letters) <= 12
