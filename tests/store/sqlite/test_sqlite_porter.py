"""Query words stemmed in Python give the very tokens FTS5's porter tokenizer indexes."""

from __future__ import annotations

import random
from pathlib import Path

from kgsearch.store.sqlite import porter
from kgsearch.store.sqlite.connection import Connection
from kgsearch.store.sqlite.lexical import LexicalStats, fts5_tokens

# shapes each rule of the algorithm turns on, and the edges where FTS5 keeps a word
_WORDS = [
    *" ".join(
        (
            "caresses ponies ties caress cats feed agreed plastered bled motoring sing",
            "conflated troubled sized hopping tanned falling hissing fizzed failing filing",
            "happy sky relational conditional rational valenci hesitanci digitizer",
            "conformabli radicalli differentli vileli analogousli vietnamization predication",
            "operator feudalism decisiveness hopefulness callousness formaliti sensitiviti",
            "sensibiliti triplicate formative formalize electriciti electrical hopeful",
            "goodness revival allowance inference airliner gyroscopic adjustable defensible",
            "irritant replacement adjustment dependent adoption homologou communism activate",
            "angulariti homologous effective bowdlerize probate rate cease controll roll",
            "generalizations oscillators toying syzygy eed sses ies ed ing at bl iz s y yy",
            "a1b2 1990s abc123ing x_y_z directed_by",
        )
    ).split()
]
_SUFFIXES = [
    *" ".join(
        (
            "ational tional enci anci izer bli alli entli eli ousli ization ation ator alism",
            "iveness fulness ousness aliti iviti biliti logi icate ative alize iciti ical ful",
            "ness al ance ence er ic able ible ant ement ment ent ion sion tion ou ism ate",
            "iti ous ive ize ed ing s es ies sses eed y e ll le at bl iz",
        )
    ).split(),
    "",
]


def _generated(n: int) -> list[str]:
    """Words made of short stems (y and w among their letters) and the suffixes the
    steps remove, in both orders of the rules."""
    rnd = random.Random(7)
    made: set[str] = set()
    while len(made) < n:
        stem = "".join(rnd.choice("aeiouybcdlstrnmwxzpgh") for _ in range(rnd.randint(0, 6)))
        made.add(stem + rnd.choice(_SUFFIXES) + rnd.choice(["", "s", "ed", "ing", "ly", "e"]))
    return sorted(made)


def test_tokens_are_fts5s_for_words_of_every_shape() -> None:
    words = _WORDS + _generated(20_000)
    assert [porter.tokens(w) for w in words] == fts5_tokens(words)


def test_a_word_outside_ascii_is_left_to_fts5() -> None:
    assert [porter.tokens(w) for w in ("café", "naïve", "straße")] == [None, None, None]


def test_ascii_words_are_stemmed_without_a_statement(tmp_path: Path) -> None:
    db = Connection(str(tmp_path / "kg.db"))
    stats = LexicalStats()
    stats._setup(db)
    statements: list[str] = []
    db._db.set_trace_callback(statements.append)
    assert stats._stems(db, ["directed_by", "films"]) == {
        "directed_by": ("direct", "by"),
        "films": ("film",),
    }
    assert statements == []
    assert stats._stems(db, ["cafés"]) == {"cafés": ("cafe",)}  # FTS5's, by its tables
    assert statements != []
    db.close()
