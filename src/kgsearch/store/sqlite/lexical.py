"""Keeping BM25 fast on large tables: pick the selective terms of a query.

FTS5 scores every row that matches, so an OR query with a word found in 15,000 rows
("directed", "movie") costs 100–300 ms even when a rare word ("Kismet") decides the
answer. Here each query word is stemmed with the index's own tokenizer (through a
tiny temporary FTS5 table), its document frequency is read from an ``fts5vocab``
table and cached, and the MATCH expression then requires one of the rare words while
still scoring with all of them. Queries made only of frequent words become an AND.
"""

from __future__ import annotations

import threading

from kgsearch.model import Kind
from kgsearch.store.sqlite.connection import Connection

__all__ = ["LexicalStats"]

# A word is "frequent" above this share of the table's rows (and this absolute floor).
_FREQUENT_SHARE = 0.01
_FREQUENT_FLOOR = 1000
_TOKENIZER = "porter unicode61"
# Distinct query words whose stems are remembered (the cache restarts when full).
_STEM_CACHE_SIZE = 100_000


class LexicalStats:
    """Per-connection cache of stems and document frequencies."""

    def __init__(self) -> None:
        self._df: dict[tuple[str, str], int] = {}
        self._rows: dict[str, int] = {}
        self._loaded: set[str] = set()
        self._stem_cache: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Forget cached frequencies (after writes that may change them a lot)."""
        with self._lock:
            self._df.clear()
            self._rows.clear()
            self._loaded.clear()

    def _setup(self, db: Connection) -> None:
        """Create the TEMP helper tables on this connection (once per connection)."""
        if "kg_terms" in db.temp_tables:
            return
        db.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.kg_terms USING fts5(text, "
            f"tokenize='{_TOKENIZER}')"
        )
        db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.kg_terms_v USING "
            "fts5vocab(temp, kg_terms, instance)"
        )
        for kind in Kind:
            db.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{kind.table}_fts_v USING "
                f"fts5vocab(main, {kind.table}_fts, row)"
            )
        db.temp_tables.add("kg_terms")

    def split(self, db: Connection, kind: Kind, terms: list[str]) -> tuple[list[str], bool]:
        """(rare terms, all_frequent): the selective subset of ``terms`` for ``kind``."""
        self._setup(db)
        stems = self._stems(db, terms)
        rows = self._table_rows(db, kind)
        threshold = max(_FREQUENT_FLOOR, int(rows * _FREQUENT_SHARE))
        rare = []
        for term in terms:
            parts = stems[term]
            if parts and min(self._frequency(db, kind, p) for p in parts) <= threshold:
                rare.append(term)
        return rare, not rare

    def _stems(self, db: Connection, terms: list[str]) -> dict[str, tuple[str, ...]]:
        """The index tokens of each term (stemming never changes, so they are cached)."""
        with self._lock:
            found = {t: self._stem_cache[t] for t in terms if t in self._stem_cache}
        missing = [t for t in terms if t not in found]
        if not missing:
            return found
        stems: dict[int, list[str]] = {}
        with db.transaction(immediate=False):
            db.execute("DELETE FROM temp.kg_terms")
            db.executemany(
                "INSERT INTO temp.kg_terms(rowid, text) VALUES (?, ?)", list(enumerate(missing))
            )
            for row in db.all("SELECT doc, term FROM temp.kg_terms_v"):
                stems.setdefault(int(row[0]), []).append(str(row[1]))
        with self._lock:
            if len(self._stem_cache) > _STEM_CACHE_SIZE:
                self._stem_cache.clear()
            for index, term in enumerate(missing):
                found[term] = self._stem_cache[term] = tuple(stems.get(index, ()))
        return found

    def _table_rows(self, db: Connection, kind: Kind) -> int:
        with self._lock:
            cached = self._rows.get(kind.table)
        if cached is None:
            row = db.one(f"SELECT count(*) FROM {kind.table}")
            cached = int(row[0]) if row else 0
            with self._lock:
                self._rows[kind.table] = cached
        return cached

    def _frequency(self, db: Connection, kind: Kind, stem: str) -> int:
        """Document frequency of a stem. The whole vocabulary of a table is read once
        (one pass over the index, cheaper than many cold single-term lookups); stems
        added since then count as rare, and ``clear()`` reloads after bulk writes."""
        with self._lock:
            loaded = kind.table in self._loaded
        if not loaded:
            counts = {
                str(r[0]): int(r[1])
                for r in db.all(f"SELECT term, doc FROM temp.{kind.table}_fts_v")
            }
            with self._lock:
                for term, doc in counts.items():
                    self._df[(kind.table, term)] = doc
                self._loaded.add(kind.table)
        with self._lock:
            return self._df.get((kind.table, stem), 0)
