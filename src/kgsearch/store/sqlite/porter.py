"""The index tokens FTS5's ``porter unicode61`` tokenizer makes of a query word, in
Python: what the BM25 legs look up, without a trip through SQLite.

:class:`~kgsearch.store.sqlite.lexical.LexicalStats` needs each query word's index
tokens (its stem) to read its document frequency. Asking FTS5 means indexing the words
in a temporary FTS5 table and reading its vocabulary back, five statements and ~0.3 ms
of CPU for a search holding a word the process had not met (most first-time questions;
`python scripts/bench_question_tail.py`, pass 1: 82 ms over 275 such searches).
FTS5's ``porter`` tokenizer is Martin Porter's original algorithm (the 1980 paper, with
the changes of his own C version: ``bli`` → ``ble``, ``logi`` → ``log``) over the tokens
``unicode61`` splits, and words of fewer than 3 or more than 64 characters are left as
they are; :func:`tokens` applies the same rules to a word made only of ASCII characters
(``unicode61`` splits those at every character that is not a letter or a digit, and
lower-cases them), with FTS5's own edges ("eed", "sses" and "ies" alone). It gave FTS5's
tokens for each of the 85,836 distinct ASCII words and vocabulary terms of the five
bench-data stores (MetaQA, the REST sample, SciFact, HotpotQA/MuSiQue passages: `python
scripts/check_porter.py`), none differing, and ``tests/store/sqlite/test_sqlite_porter.py``
checks 20,000 generated words made of short stems and Porter's suffixes against FTS5
itself; 8 µs of CPU a word (the same script). nltk's ``PorterStemmer`` in its
``ORIGINAL_ALGORITHM`` mode and snowballstemmer's ``porter`` (the same script, run where
they are installed) differ from FTS5 on 124 and 126 of those words under FTS5's length
rule ("anthology" → ``anthologi``, FTS5 ``antholog``), so neither is a dependency. Any
other word (``unicode61`` folds case and strips diacritics by Unicode's tables) returns
None, and FTS5 stems it.
"""

from __future__ import annotations

import re

__all__ = ["tokens"]

# unicode61 over ASCII: letters and digits make tokens, anything else separates them
_ASCII_TOKEN = re.compile(r"[a-z0-9]+")
# FTS5's porter leaves shorter and longer tokens as they are (FTS5_PORTER_MAX_TOKEN)
_MIN_STEMMED = 3
_MAX_STEMMED = 64
_VOWELS = frozenset("aeiou")

# (suffix, replacement) by step, grouped as Porter's C version tries them: the first
# suffix of a group that the word ends with decides, whether or not its condition holds
_STEP2: tuple[tuple[str, str], ...] = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("bli", "ble"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("logi", "log"),
)
_STEP3: tuple[tuple[str, str], ...] = (
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
)
_STEP4 = (
    "al",
    "ance",
    "ence",
    "er",
    "ic",
    "able",
    "ible",
    "ant",
    "ement",
    "ment",
    "ent",
    "ion",
    "ou",
    "ism",
    "ate",
    "iti",
    "ous",
    "ive",
    "ize",
)


def tokens(word: str) -> tuple[str, ...] | None:
    """The index tokens of one lower-case query word, as FTS5's ``porter unicode61``
    makes them (``directed_by`` → ``direct``, ``by``); None for a word with any
    character outside ASCII (FTS5 must tokenize it)."""
    if not word.isascii():
        return None
    return tuple(stem(t) for t in _ASCII_TOKEN.findall(word.lower()))


def stem(word: str) -> str:
    """Porter's stem of one lower-case ASCII token (see the module docstring)."""
    if not _MIN_STEMMED <= len(word) <= _MAX_STEMMED:
        return word
    word = _step1(word)
    word = _replace(word, _STEP2, 0)
    word = _replace(word, _STEP3, 0)
    word = _step4(word)
    return _step5(word)


def _consonants(word: str) -> list[bool]:
    """Per letter, whether it is a consonant: not a vowel, and ``y`` only after a
    vowel or first."""
    out: list[bool] = []
    for i, c in enumerate(word):
        if c == "y":
            out.append(i == 0 or not out[-1])
        else:
            out.append(c not in _VOWELS)
    return out


def _measure(stem: str) -> int:
    """Porter's *m*: the number of vowel-consonant sequences in ``[C](VC)^m[V]``."""
    m, previous = 0, True
    for consonant in _consonants(stem):
        if consonant and not previous:
            m += 1
        previous = consonant
    return m


def _has_vowel(stem: str) -> bool:
    return not all(_consonants(stem))


def _cvc(stem: str) -> bool:
    """Porter's *o: consonant, vowel, consonant at the end, the last not w, x or y."""
    if len(stem) < 3 or stem[-1] in "wxy":
        return False
    c = _consonants(stem)
    return c[-3] and not c[-2] and c[-1]


def _step1(word: str) -> str:
    """Plurals and -ed/-ing (steps 1a, 1b and 1c)."""
    # FTS5 keeps a letter before "sses" and "ies": "sses" alone is "sse", "ies" is "ie"
    if (word.endswith("sses") and len(word) > 4) or (word.endswith("ies") and len(word) > 3):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if word.endswith("eed") and len(word) > 3:  # FTS5 stems "eed" alone as "ed"
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    else:
        for suffix in ("ed", "ing"):
            if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
                word = _step1b(word[: -len(suffix)])
                break
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    return word


def _step1b(word: str) -> str:
    """What follows the removal of -ed or -ing: "hop(p)ing" → "hop", "fil(ing)" →
    "file"."""
    if word.endswith(("at", "bl", "iz")):
        return word + "e"
    if len(word) >= 2 and word[-1] == word[-2] and word[-1] not in "aeioulsz":
        return word[:-1]
    if _measure(word) == 1 and _cvc(word):
        return word + "e"
    return word


def _replace(word: str, rules: tuple[tuple[str, str], ...], above: int) -> str:
    """Steps 2 and 3: the first rule whose suffix ends the word applies when what stays
    measures more than ``above``."""
    for suffix, replacement in rules:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem + replacement if _measure(stem) > above else word
    return word


def _step4(word: str) -> str:
    """Step 4: a last suffix removed where what stays measures more than 1."""
    for suffix in _STEP4:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if suffix == "ion" and not stem.endswith(("s", "t")):
                return word
            return stem if _measure(stem) > 1 else word
    return word


def _step5(word: str) -> str:
    """Step 5: a final e removed (5a), a final double l made single (5b)."""
    if word.endswith("e"):
        stem = word[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _cvc(stem)):
            word = stem
    if word.endswith("ll") and _measure(word) > 1:
        word = word[:-1]
    return word
