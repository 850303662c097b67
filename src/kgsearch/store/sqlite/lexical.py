"""Keeping BM25 fast on large tables without changing what it ranks first.

FTS5's ``bm25()`` reads the whole posting list of every word in the MATCH expression
to count its documents, and scores every row that matches, so a query holding a word
found in 100,000 rows ("directed", "year") costs tens of milliseconds even when a rare
word ("Kismet") decides the answer. Each query word is therefore stemmed by the
index's own tokenizer's rules (:mod:`~kgsearch.store.sqlite.porter`; a word outside
ASCII through a tiny temporary FTS5 table) and its document frequency read from an
``fts5vocab`` table (cached), and a :class:`Plan` picks the candidates:

* **frequent** words (in over 1 % of the rows, and over 1,000) are left out of the
  MATCH;
* of the others, the rarest are matched alone while their rows add up to about 3,000,
  and the next few only in pairs (``"big" AND "city"``), which few rows hold, or
  beside a rarer word (so that they count in FTS5's ranking of those rows).

FTS5 ranks the rows that match (when they are fewer than asked, the rows holding any
of the non-frequent words), and the best few (3 × the limit, at least 90) are
scored again with every word of the query by BM25's own formula and constants
(:meth:`LexicalStats.rescore`): the candidates' texts are indexed again in a small
temporary FTS5 table with the same tokenizer, whose vocabulary counts each word's
occurrences per row and whose ``docsize`` gives the row lengths, and the average
length comes from FTS5's totals, so each returned score is the one FTS5 gives for an OR
of all the words (document frequencies are cached, and read again once the table's row
count moves by a tenth: in between, a word's frequency can lag by that much). A query
holding a word the index splits ("directed_by", a phrase to FTS5) is scored by FTS5
alone. Frequent words still decide between rows holding the same rare words
("who directed Kismet": the ``directed_by`` triple, not the genre). A query made only
of frequent words is matched with AND and scored by FTS5 alone.

An earlier form matched ``(rare…) AND (all words…)``; FTS5 scores every phrase of the
expression, so rare words counted twice and frequent ones barely mattered.

Once a kind's index is held in memory (:mod:`~kgsearch.store.sqlite.held_lexical`,
:meth:`LexicalStats.held_scores`) a query of single-token words is answered from it
instead, exactly: FTS5's own score of an OR of every word over every row holding one
(an AND when every word is frequent, as above), where the plan above re-scores only
the rows its selective words pick (so a row holding only frequent words, or a query
whose selective words match nothing, "alpha qqqq", can differ). Prefix queries and
words the index splits stay with FTS5.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kgsearch.model import Kind
from kgsearch.store.sqlite import porter
from kgsearch.store.sqlite.connection import Connection
from kgsearch.store.sqlite.held_lexical import HeldPostings, Matches, varints
from kgsearch.store.sqlite.sql import fts_query, placeholders

__all__ = ["LexicalStats", "Plan", "fts5_tokens"]

# A word is "frequent" above this share of the table's rows (and this absolute floor).
_FREQUENT_SHARE = 0.01
_FREQUENT_FLOOR = 1000
_TOKENIZER = "porter unicode61"
# Distinct query words whose stems are remembered (the cache restarts when full).
_STEM_CACHE_SIZE = 100_000
# The rarest words are matched alone while their rows add up to this many; the next
# (at most _MAX_PAIRED) are matched in pairs, which few rows hold.
_ALONE_BUDGET = 3000
_MAX_PAIRED = 6
# The vocabulary is read again when the row count moved by more than this share.
_RELOAD_DRIFT = 0.1
# FTS5's bm25() constants.
_K1 = 1.2
_B = 0.75


@dataclass(frozen=True)
class Plan:
    """How to run one BM25 query: the FTS5 MATCH expression that picks candidates and,
    when FTS5's own score is not the BM25 of an OR of all the words, those words (index
    tokens, inverse document frequency) to score the best candidates with instead."""

    match: str
    rescore: tuple[tuple[tuple[str, ...], float], ...] = ()
    # When ``match`` finds fewer rows than asked: an OR of every selective word.
    fallback: str | None = None
    # FTS5's average row length when the plan was made (re-scoring needs it too).
    avgdl: float = 1.0


class LexicalStats:
    """Per-connection cache of stems and document frequencies."""

    def __init__(self) -> None:
        self._df: dict[tuple[str, str], int] = {}
        # per table, the FTS5 row count when its vocabulary was read
        self._loaded: dict[str, int] = {}
        # stems missing from the vocabulary read: (document count, row count then)
        self._looked: dict[tuple[str, str], tuple[int, int]] = {}
        self._stem_cache: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()
        self.held = HeldPostings()

    def clear(self) -> None:
        """Forget cached frequencies (after writes that may change them a lot)."""
        with self._lock:
            self._df.clear()
            self._loaded.clear()
            self._looked.clear()
        self.held.clear()

    def held_scores(
        self, db: Connection, kind: Kind, terms: list[str], reader: Callable[[], Connection]
    ) -> Matches | None:
        """Every row a query of these words matches, with FTS5's score, from the held
        postings (:mod:`~kgsearch.store.sqlite.held_lexical`): the BM25 of an OR of the
        words, or of an AND when every word is frequent (as :meth:`plan` matches them).
        None when the postings are not held or stale, or a word is not one index token
        (a phrase to FTS5): FTS5 answers."""
        held = self.held.fresh(db, kind, reader)
        if held is None:
            return None
        postings, owners = held
        if postings.n_rows == 0:  # nothing indexed (a project without chunks): no match
            return Matches(postings, [], None, None)
        self._setup(db)
        stems = self._stems(db, terms)
        if any(len(stems[t]) != 1 for t in terms):
            return None
        tokens = [stems[t][0] for t in terms]
        dfs = [postings.df(token) for token in tokens]
        threshold = max(_FREQUENT_FLOOR, int(postings.n_rows * _FREQUENT_SHARE))
        conjunction = len(terms) > 1 and all(df > threshold for df in dfs)
        idfs = [_idf(postings.n_rows, df) for df in dfs]
        matches = postings.matches(tokens, idfs, conjunction=conjunction)
        matches.owners = owners
        return matches

    def _setup(self, db: Connection) -> None:
        """Create the TEMP helper tables on this connection (once per connection)."""
        if "kg_scratch" in db.temp_tables:
            return
        # a scratch index with the main indexes' tokenizer: query words outside ASCII are
        # stemmed in it, and the candidates being re-scored are indexed in it to count their words
        db.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.kg_scratch USING fts5(text, "
            f"content='', tokenize='{_TOKENIZER}')"
        )
        db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.kg_scratch_v USING "
            "fts5vocab(temp, kg_scratch, instance)"
        )
        for kind in Kind:
            db.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{kind.table}_fts_v USING "
                f"fts5vocab(main, {kind.table}_fts, row)"
            )
        if not db.in_transaction:
            # tables created inside a transaction vanish if it rolls back: only those
            # created outside one are known to stay (until then, each call re-checks)
            db.temp_tables.add("kg_scratch")

    def plan(self, db: Connection, kind: Kind, terms: list[str]) -> Plan:
        """How to run a BM25 query of several words (see the module docstring)."""
        self._setup(db)
        stems = self._stems(db, terms)
        if any(len(stems[t]) != 1 for t in terms):
            # a word the index splits ("directed_by") is a phrase to FTS5, with its own
            # document count: let FTS5 score the OR of every word itself
            return Plan(fts_query(terms) or "")
        n_rows, avgdl = self.averages(db, kind)
        threshold = max(_FREQUENT_FLOOR, int(n_rows * _FREQUENT_SHARE))
        dfs = {
            t: min((self._frequency(db, kind, p, n_rows) for p in stems[t]), default=0)
            for t in terms
        }
        selective = sorted((t for t in terms if dfs[t] <= threshold), key=dfs.__getitem__)
        if not selective:
            return Plan(fts_query(terms, conjunction=True) or "")
        alone: list[str] = []
        budget = 0
        for term in selective:
            if budget + dfs[term] > _ALONE_BUDGET:
                break
            alone.append(term)
            budget += dfs[term]
        paired = selective[len(alone) : len(alone) + _MAX_PAIRED]
        if len(paired) == 1 and not alone:
            alone, paired = paired, []
        if len(alone) == len(terms):
            return Plan(fts_query(terms) or "")  # an OR of every word: FTS5's score is exact
        anyalone = " OR ".join(f'"{t}"' for t in alone)
        match = (
            [f'"{t}"' for t in alone]
            + [f'("{a}" AND "{b}")' for a, b in itertools.combinations(paired, 2)]
            # adds the paired word's weight to FTS5's ranking of rows already matched
            + ([f'("{t}" AND ({anyalone}))' for t in paired] if alone else [])
        )
        return Plan(
            " OR ".join(match),
            tuple((stems[t], _idf(n_rows, dfs[t])) for t in terms if stems[t]),
            fts_query(selective) if paired or len(alone) < len(selective) else None,
            avgdl,
        )

    def rescore(
        self,
        db: Connection,
        kind: Kind,
        ranked: Sequence[tuple[int, str, float]],
        plan: Plan,
    ) -> list[tuple[int, str, float]]:
        """(rowid, id, score) best first, each score recomputed as FTS5's BM25 of an OR
        of the plan's words (index tokens, idf).

        The candidates' texts are indexed again in the scratch index (same tokenizer,
        so the same tokens and row lengths as the main index); its ``instance``
        vocabulary counts each query token per row.
        """
        words, avgdl = plan.rescore, plan.avgdl
        if not ranked or not words:
            return list(ranked)
        self._setup(db)
        rowids = [r[0] for r in ranked]
        wanted = sorted({p for parts, _ in words for p in parts})
        counts: dict[int, dict[str, int]] = {}
        with db.transaction(immediate=False):
            self._clear_scratch(db)
            db.execute(
                "INSERT INTO temp.kg_scratch(rowid, text) SELECT rowid, text "
                f"FROM main.{kind.table} WHERE rowid IN ({placeholders(len(rowids))}) "
                "AND deleted_at IS NULL",
                rowids,
            )
            for doc, term, n in db.all(
                "SELECT doc, term, count(*) FROM temp.kg_scratch_v "
                f"WHERE term IN ({placeholders(len(wanted))}) GROUP BY doc, term",
                wanted,
            ):
                counts.setdefault(int(doc), {})[str(term)] = int(n)
            sizes = {
                int(r[0]): (varints(r[1]) or [0])[0]
                for r in db.all("SELECT id, sz FROM temp.kg_scratch_docsize")
            }
        scores: dict[int, float] = {}
        for rowid in rowids:
            if rowid not in sizes:
                continue  # deleted since it was ranked
            found = counts.get(rowid, {})
            norm = _K1 * (1 - _B + _B * sizes[rowid] / avgdl)
            score = 0.0
            for parts, idf in words:
                tf = (
                    found.get(parts[0], 0)
                    if len(parts) == 1
                    else min(found.get(p, 0) for p in parts)
                )
                if tf:
                    score += idf * tf * (_K1 + 1) / (tf + norm)
            scores[rowid] = score
        ids = {r[0]: r[1] for r in ranked}
        order = sorted(scores, key=lambda r: (-scores[r], r))
        return [(r, ids[r], scores[r]) for r in order]

    def averages(self, db: Connection, kind: Kind) -> tuple[int, float]:
        """(rows, average row length in tokens) of the FTS5 index, as bm25() sees them
        (read each time: one small record)."""
        row = db.one(f"SELECT block FROM {kind.table}_fts_data WHERE id = 1")
        values = varints(bytes(row[0])) if row and row[0] else []
        n_rows = values[0] if values else 0
        total = sum(values[1:])
        return n_rows, total / n_rows if n_rows and total else 1.0

    def _stems(self, db: Connection, terms: list[str]) -> dict[str, tuple[str, ...]]:
        """The index tokens of each term (stemming never changes, so they are cached): an
        ASCII word stemmed here by FTS5's own rules (:mod:`~kgsearch.store.sqlite.porter`),
        any other indexed in the scratch index, whose vocabulary gives its tokens (five
        statements, ~0.3 ms of CPU a search holding a word the process had not met)."""
        with self._lock:
            found = {t: self._stem_cache[t] for t in terms if t in self._stem_cache}
        missing = [t for t in terms if t not in found]
        if not missing:
            return found
        made = {t: tokens for t in missing if (tokens := porter.tokens(t)) is not None}
        asked = [t for t in missing if t not in made]
        if asked:
            made.update(self._indexed_stems(db, asked))
        with self._lock:
            if len(self._stem_cache) > _STEM_CACHE_SIZE:
                self._stem_cache.clear()
            self._stem_cache.update(made)
        return found | made

    def _indexed_stems(self, db: Connection, terms: list[str]) -> dict[str, tuple[str, ...]]:
        """The index tokens of each term as FTS5 makes them, in the term's order (as
        :func:`~kgsearch.store.sqlite.porter.tokens` gives them): indexed in the scratch
        index, read back from its vocabulary."""
        stems: dict[int, list[str]] = {}
        with db.transaction(immediate=False):
            self._clear_scratch(db)
            db.executemany(
                "INSERT INTO temp.kg_scratch(rowid, text) VALUES (?, ?)", list(enumerate(terms))
            )
            for row in db.all("SELECT doc, term FROM temp.kg_scratch_v ORDER BY doc, offset"):
                stems.setdefault(int(row[0]), []).append(str(row[1]))
        return {term: tuple(stems.get(index, ())) for index, term in enumerate(terms)}

    @staticmethod
    def _clear_scratch(db: Connection) -> None:
        db.execute("INSERT INTO temp.kg_scratch(kg_scratch) VALUES ('delete-all')")

    def _frequency(self, db: Connection, kind: Kind, stem: str, n_rows: int) -> int:
        """Document frequency of a stem. The whole vocabulary of a table is read at once
        (one pass over the index, cheaper than many cold single-term lookups) and read
        again once the table's row count has moved by more than a tenth since; a stem
        missing from it (new since) is looked up alone, again whenever the row count
        changes."""
        table = kind.table
        with self._lock:
            loaded = self._loaded.get(table)
        if loaded is None or abs(n_rows - loaded) > _RELOAD_DRIFT * max(loaded, 1):
            counts = {
                str(r[0]): int(r[1]) for r in db.all(f"SELECT term, doc FROM temp.{table}_fts_v")
            }
            with self._lock:
                self._df = {k: v for k, v in self._df.items() if k[0] != table}
                self._df.update(((table, term), doc) for term, doc in counts.items())
                self._loaded[table] = n_rows
        with self._lock:
            found = self._df.get((table, stem))
            looked = self._looked.get((table, stem))
        if found is not None:
            return found
        if looked is not None and looked[1] == n_rows:
            return looked[0]
        row = db.one(f"SELECT doc FROM temp.{table}_fts_v WHERE term = ?", (stem,))
        count = int(row[0]) if row else 0
        with self._lock:
            if len(self._looked) > _STEM_CACHE_SIZE:
                self._looked.clear()
            self._looked[(table, stem)] = (count, n_rows)
        return count


def _idf(n_rows: int, df: int) -> float:
    """FTS5's inverse document frequency (never below 1e-6)."""
    value = math.log((n_rows - df + 0.5) / (df + 0.5)) if n_rows else 0.0
    return value if value > 0 else 1e-6


def fts5_tokens(words: list[str]) -> list[tuple[str, ...]]:
    """Each word's tokens as FTS5 indexes them: the store's own fallback for the words
    :mod:`porter` leaves alone (its scratch index, in a database in memory, read back in
    the word's order). What ``porter.tokens`` is checked against."""
    db = Connection(":memory:")
    try:
        stats = LexicalStats()
        stats._setup(db)
        found = stats._indexed_stems(db, words)
    finally:
        db.close()
    return [found[w] for w in words]
