"""Python stemming against FTS5's over real vocabularies (store/sqlite/porter.py).

Usage: python scripts/check_porter.py [DB ...]   (default: every bench-data/*.db)

Every distinct lower-case ASCII word of the indexed texts (objects, relationships,
chunks) and every term of their FTS5 vocabularies, over all the stores given, is
stemmed by ``porter.tokens`` and by FTS5's ``porter unicode61`` itself (a scratch index
in memory); printed: how many words, how many differ, and the first differences. Where
nltk or snowballstemmer is importable (neither is a dependency: install them into a
virtualenv of their own to compare), their Porter stemmers are compared the same way.
"""

from __future__ import annotations

import re
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kgsearch.store.sqlite import porter
from kgsearch.store.sqlite.lexical import fts5_tokens

_TABLES = ("objects", "relationships", "chunks")
_WORD = re.compile(r"[a-z0-9]+")


def words(db: Path) -> set[str]:
    """The distinct ASCII words of one store's indexed texts and its FTS5 terms."""
    found: set[str] = set()
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        for table in _TABLES:
            for (text,) in conn.execute(f"SELECT text FROM {table} WHERE text IS NOT NULL"):
                found.update(w for w in _WORD.findall(str(text).lower()))
            conn.execute(
                f"CREATE VIRTUAL TABLE temp.v_{table} USING fts5vocab(main, {table}_fts, row)"
            )
            found.update(str(t) for (t,) in conn.execute(f"SELECT term FROM temp.v_{table}"))
    return {w for w in found if w.isascii()}


def main() -> None:
    """Compare the stems over the given stores and print the differences."""
    dbs = [Path(a) for a in sys.argv[1:]] or sorted(Path("bench-data").glob("*.db"))
    every: set[str] = set()
    for db in dbs:
        every |= words(db)
    ordered = sorted(every)
    expected = fts5_tokens(ordered)
    started = time.process_time()
    got = [porter.tokens(w) for w in ordered]
    per_word = (time.process_time() - started) / max(1, len(ordered)) * 1e6
    differ = [
        (w, mine, want)
        for w, mine, want in zip(ordered, got, expected, strict=True)
        if mine != want
    ]
    print(
        f"{len(ordered):,} distinct ASCII words over {len(dbs)} stores; {len(differ)} differ; "
        f"{per_word:.1f} µs of CPU a word"
    )
    for word, mine, want in differ[:20]:
        print(f"  {word!r}: {mine} against FTS5 {want}")
    for name, stem in _libraries():
        # FTS5 stems each token of a word and leaves tokens outside 3-64 characters as
        # they are: the library is given the same tokens under the same length rule
        other = sum(
            tuple(t if not 3 <= len(t) <= 64 else stem(t) for t in _WORD.findall(w)) != want
            for w, want in zip(ordered, expected, strict=True)
        )
        print(f"{name}: {other} of {len(ordered):,} differ from FTS5")


def _libraries() -> list[tuple[str, Callable[[str], str]]]:
    """(name, stem) of the Porter stemmers importable here."""
    found: list[tuple[str, Callable[[str], str]]] = []
    try:
        from nltk.stem.porter import PorterStemmer  # type: ignore[import-not-found]

        nltk = PorterStemmer(mode=PorterStemmer.ORIGINAL_ALGORITHM)
        found.append(("nltk PorterStemmer (ORIGINAL_ALGORITHM)", nltk.stem))
    except ImportError:
        pass
    try:
        import snowballstemmer  # type: ignore[import-not-found]

        found.append(("snowballstemmer porter", snowballstemmer.stemmer("porter").stemWord))
    except ImportError:
        pass
    return found


if __name__ == "__main__":
    main()
