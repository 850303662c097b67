"""Entity names for the offline extractor: cleaning a mention and refusing junk.

spaCy's NER, run over notes, HTML and PDF text, also tags code words (``NULL``,
``False``, ``Integer``), identifiers (``os.path``, ``get_item``, ``parseInt``),
numbers, single characters and pronouns. :func:`junk_reason` says why such a name is
no entity; a name it refuses is never an entity nor a relationship's endpoint.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # spaCy is imported when a model is loaded, not with the engine
    from spacy.tokens import Doc, Span, Token

__all__ = [
    "MAX_NAME_CHARS",
    "MAX_NAME_WORDS",
    "clean_name",
    "junk_reason",
    "name_key",
    "repaired_entities",
]

MAX_NAME_CHARS = 80
MAX_NAME_WORDS = 10

_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those"})
# Literals and type names of programming languages: as a one-word name they are code.
_CODE_WORDS = frozenset(
    {"null", "none", "nil", "nan", "true", "false", "undefined", "void", "self"}
    | {"int", "integer", "str", "string", "float", "double", "bool", "boolean", "char"}
    | {"object", "array", "dict", "tuple", "list", "set", "bytes", "byte", "long", "enum"}
)
_STOP_NAMES = frozenset(
    {"i", "me", "you", "he", "him", "she", "her", "it", "we", "us", "they", "them"}
    | {"his", "hers", "its", "our", "their", "my", "your", "one", "ones", "which", "who"}
    | {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
    | {"today", "yesterday", "tomorrow", "tonight"}
    | _DETERMINERS
)
# Titles and offices that stand before a person's name in running text ("Governor Rick
# Scott", "Pope Benedict XVI", "Sir John Boyd"): not part of the name, which is then
# the one other mentions use ("Rick Scott"). _TITLE_MODIFIERS may come first
# ("Prime Minister", "Petty Officer").
_TITLES = frozenset(
    {"mr", "mrs", "ms", "miss", "dr", "prof", "professor", "sir", "dame", "lady", "lord"}
    | {"king", "queen", "prince", "princess", "emperor", "empress", "pope", "tsar", "czar"}
    | {"sultan", "shah", "sheikh", "duke", "duchess", "countess", "baron", "baroness"}
    | {"earl", "marquess", "viscount", "rev", "reverend", "bishop", "archbishop"}
    | {"cardinal", "general", "gen", "colonel", "col", "captain", "capt", "lieutenant"}
    | {"lt", "sergeant", "sgt", "admiral", "commander", "officer", "corporal", "president"}
    | {"senator", "sen", "governor", "gov", "mayor", "judge", "justice", "chancellor"}
    | {"minister", "secretary", "commissioner", "ambassador", "chairman", "coach"}
    | {"guitarist", "singer", "drummer", "bassist", "pianist", "composer", "rapper"}
    | {"actor", "actress", "director", "producer", "author", "poet", "painter"}
)
_TITLE_MODIFIERS = frozenset(
    {"vice", "prime", "home", "foreign", "chief", "petty", "deputy", "field", "rear"}
    | {"grand", "crown", "attorney", "supreme", "lord", "first", "state"}
)
_CODE_CHARS = re.compile(r"[_(){}\[\]<>=;`|\\#@$*^~]|::|->")
# A dotted identifier (os.path, numpy.ndarray); web domains are names, not code.
_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[a-z_]\w*)+$")
_DOMAIN = re.compile(r"\.(com|org|net|io|edu|gov|co|uk|de|fr)$", re.IGNORECASE)
_HUMPS = re.compile(r"[a-z][A-Z]")
_ACRONYM_HUMP = re.compile(r"[A-Z]{2}[a-z]")
# A name cut short by the tagger ends with a word that cannot end one.
_OPEN_ENDS = frozenset({"of", "and", "the", "for", "in", "on", "at", "to", "&", "de", "or"})


def repaired_entities(doc: Doc) -> list[Span]:
    """The document's entities, a person's name stretched over a first name the tagger
    left out or took for another entity ("Anatoly Borisovich Chubais" tagged
    ``[Anatoly]GPE [Borisovich Chubais]PERSON``): a proper noun just before the name
    that the parse attaches to it as part of a compound name."""
    from spacy.tokens import Span

    out: list[Span] = []
    for ent in doc.ents:
        start = ent.start
        while ent.label_ == "PERSON" and start > ent.sent.start:
            prev = doc[start - 1]
            joins = prev.pos_ == "PROPN" and prev.dep_ == "compound"
            joins = joins and prev.lower_.rstrip(".") not in _TITLES | _TITLE_MODIFIERS
            joins = joins and start <= prev.head.i < ent.end
            alone = prev.ent_iob_ == "O" or (
                bool(out) and out[-1].start == prev.i and out[-1].end == start
            )
            if not (joins and alone):
                break
            start -= 1
            if out and out[-1].start == start:
                out.pop()
        out.append(ent if start == ent.start else Span(doc, start, ent.end, label="PERSON"))
    return out


def clean_name(mention: Span) -> str:
    """The mention without leading determiners, a trailing 's, edge punctuation, or what
    follows a line break (a title line glued to the text's first words)."""
    tokens = list(mention)
    for n, token in enumerate(tokens):
        if token.is_space and "\n" in token.text:
            tokens = tokens[:n]
            break
    while tokens and (tokens[0].lower_ in _DETERMINERS or tokens[0].is_punct):
        tokens.pop(0)
    while tokens and (tokens[-1].is_punct or tokens[-1].lower_ in ("'s", "’s")):
        tokens.pop()
    if mention.label_ == "PERSON":
        tokens = tokens[_title_words(tokens) :]
    if not tokens:
        return ""
    return mention.doc[tokens[0].i : tokens[-1].i + 1].text.strip()


def _title_words(tokens: list[Token]) -> int:
    """How many leading tokens are a title before the name ("Prime Minister", "Sir"):
    the longest run of titles and title modifiers that ends with a title and leaves a
    word that is neither."""
    words = [t.lower_.rstrip(".") for t in tokens]
    cut = 0
    for n, word in enumerate(words[:-1]):
        if word in _TITLES:
            cut = n + 1
        elif word not in _TITLE_MODIFIERS:
            break
    return cut


def name_key(name: str) -> str:
    """The key that merges mentions: casefolded, spaces collapsed."""
    return " ".join(name.casefold().split())


def junk_reason(name: str) -> str | None:
    """Why ``name`` is no entity (``code``, ``number``, ``short``, ``stop``, ``long``,
    ``fragment``, ``lowercase``), or None when it may be one.

    Examples:
        ``NULL``, ``Integer``, ``os.path``, ``get_item()``, ``parseInt`` → ``code``;
        ``1999``, ``3.5`` → ``number``; ``X`` → ``short``; ``She``, ``Monday`` →
        ``stop``; a name over 80 characters or 10 words → ``long``; ``Church of`` →
        ``fragment``; ``sandy beach`` (no capital, no digit) → ``lowercase``.
    """
    words = name.split()
    if not words:
        return "short"
    if not any(c.isalpha() for c in name):
        return "number"
    if sum(c.isalnum() for c in name) <= 1:
        return "short"
    if len(name) > MAX_NAME_CHARS or len(words) > MAX_NAME_WORDS:
        return "long"
    if name.casefold() in _STOP_NAMES and not name.isupper():  # "US", "IT" are names
        return "stop"
    if name.casefold().rstrip(".") in _TITLES:  # "Bishop", "Queen": a title, no name
        return "title"
    if _CODE_CHARS.search(name):
        return "code"
    if len(words) > 1 and words[-1].casefold() in _OPEN_ENDS:
        return "fragment"
    if len(words) == 1 and _is_code_word(name):
        return "code"
    cased = [c for c in name if c.lower() != c.upper()]
    if cased and not any(c.isupper() or c.isdigit() for c in name):
        return "lowercase"
    return None


def _is_code_word(word: str) -> bool:
    if word.casefold() in _CODE_WORDS:
        return True
    if _DOTTED.match(word) and not _DOMAIN.search(word):
        return True
    humps = len(_HUMPS.findall(word))
    # camelCase (parseInt, getElementById), several humps (getItemById) or an acronym
    # run into a hump (XMLHttpRequest); one hump after a capital is a name (McDonald,
    # PlayStation, DiCaprio).
    if humps >= 2 or (humps >= 1 and _ACRONYM_HUMP.search(word)):
        return True
    return word[0].islower() and humps >= 1 and len(word) >= 7
