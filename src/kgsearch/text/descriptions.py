"""One description from many: near-duplicates collapse, long sets are summarised.

An entity or relationship extracted from many chunks has one description per chunk.
:func:`merge_descriptions` turns them into the text that is stored and embedded:

1. Whitespace is normalised and exact repeats (casefolded) go.
2. Near-duplicates collapse: two descriptions whose word sets overlap by at least
   :data:`NEAR_DUPLICATE` (Jaccard) keep only the longer one.
3. If what is left fits in the budget it is joined one per line, in the order given.
   Otherwise it is summarised extractively: the descriptions are cut into sentences,
   each sentence is scored by its cosine similarity to the centroid of all sentences
   (the sentences most like the rest are the most representative, as in centroid
   summarisers such as MEAD), and the best are kept, in their original order, until
   the budget is used.

The result depends only on the list given, so the same contributions always give the
same text, whichever order the chunks were ingested in (callers pass them sorted).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import operator
import re
from collections import Counter
from collections.abc import Sequence

from kgsearch.text.stopwords import STOPWORDS

__all__ = [
    "DESCRIPTION_BUDGET",
    "NEAR_DUPLICATE",
    "digest",
    "distinct",
    "merge_descriptions",
    "sentences",
]

DESCRIPTION_BUDGET = 2000
"""Characters a merged description may use before it is summarised."""

NEAR_DUPLICATE = 0.8
"""Word-set Jaccard similarity from which two descriptions count as one."""

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9À-ÖØ-Þ])")


@functools.lru_cache(maxsize=1 << 16)
def _words(text: str) -> frozenset[str]:
    # Cached: a row's descriptions are merged again each time a chunk adds one.
    return frozenset(_WORD.findall(text.casefold()))


@functools.lru_cache(maxsize=1 << 16)
def _normal(raw: str) -> tuple[str, str]:
    # Cached as _words is: (whitespace normalised, casefolded).
    text = " ".join(raw.split())
    return text, text.casefold()


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def distinct(texts: Sequence[str]) -> list[str]:
    """Normalised texts without repeats and near-duplicates (the longer one stays, at
    the position of the first)."""
    kept: list[str] = []
    words: list[frozenset[str]] = []
    seen: set[str] = set()
    pending: list[tuple[str, frozenset[str]]] = []
    for raw in texts:
        text, folded = _normal(raw)
        if not text or folded in seen:
            continue
        seen.add(folded)
        pending.append((text, _words(text)))
    if len(pending) < 2:  # nothing to compare
        return [text for text, _ in pending]
    index = _PrefixIndex([w for _, w in pending])
    for text, these in pending:
        prefix = index.prefix(these)
        i = index.first_near(these, prefix, words)
        if i is None:
            index.add(len(kept), prefix)
            kept.append(text)
            words.append(these)
        elif len(text) > len(kept[i]):
            index.add(i, prefix)
            kept[i], words[i] = text, these
    return kept


class _PrefixIndex:
    """Finds near-duplicate candidates by prefix filtering (the set-similarity-join
    idea): with every word set sorted by one order (rarest word first), two sets whose
    Jaccard reaches :data:`NEAR_DUPLICATE` share a word among the first
    ``n - ceil(t·n) + 1`` of each, so only sets sharing such a word are compared, and
    those exactly. The first match in kept order wins, as in a plain scan."""

    def __init__(self, sets: Sequence[frozenset[str]]) -> None:
        counts: Counter[str] = Counter(itertools.chain.from_iterable(sets))
        # each word's place in that order, as an int (cheaper to sort by than (n, w))
        # (two stable sorts in C: by word, then by count)
        order = sorted(sorted(counts), key=counts.__getitem__)
        self.rank = dict(zip(order, range(len(order)), strict=True))
        self.postings: dict[str, list[int]] = {}

    def prefix(self, these: frozenset[str]) -> list[str]:
        """The words of ``these`` a near-duplicate must share one of: the rarest
        ``n - ceil(t·n) + 1``."""
        size = len(these)
        # ceil(t·n), nudged down against rounding: a shorter overlap bound only makes
        # the prefix longer (more candidates), never misses one
        overlap = max(1, math.ceil(NEAR_DUPLICATE * size - 1e-9))
        return sorted(these, key=self.rank.__getitem__)[: size - overlap + 1]

    def add(self, position: int, prefix: list[str]) -> None:
        """Index a kept set by its :meth:`prefix` (again, when a longer text replaced
        it: stale words only add candidates, which are checked against the current set)."""
        for w in prefix:
            self.postings.setdefault(w, []).append(position)

    def first_near(
        self, these: frozenset[str], prefix: list[str], words: Sequence[frozenset[str]]
    ) -> int | None:
        """The first kept position whose words are a near-duplicate of ``these`` (whose
        :meth:`prefix` is ``prefix``)."""
        if not these:
            return None
        near = {i for w in prefix for i in self.postings.get(w, ())}
        for i in sorted(near):
            if _jaccard(these, words[i]) >= NEAR_DUPLICATE:
                return i
        return None


def sentences(text: str) -> list[str]:
    """``text`` cut after ``.``, ``!`` or ``?`` followed by a capital or a digit."""
    return list(_sentences(text))


# Cached, as _words is: a long description is summarised again, sentence by sentence,
# each time a chunk adds to it. The cached values are never changed.
@functools.lru_cache(maxsize=1 << 14)
def _sentences(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in _SENTENCE_END.split(text) if s.strip())


@functools.lru_cache(maxsize=1 << 16)
def _vector(text: str) -> tuple[Counter[str], float, tuple[str, ...]]:
    """The content words of ``text`` counted, the counts' norm, and the words."""
    found = tuple(w for w in _WORD.findall(text.casefold()) if w not in STOPWORDS)
    counts = Counter(found)
    return counts, _norm(counts), found


def _norm(a: Counter[str]) -> float:
    values = a.values()
    return math.sqrt(sum(map(operator.mul, values, values)))


def _cosine(
    a: tuple[Counter[str], float, tuple[str, ...]], b: Counter[str], b_norm: float
) -> float:
    counts, norm, _ = a
    # every word of ``a`` is in ``b`` (the centroid of all), and the products are exact
    dot: int = sum(map(operator.mul, counts.values(), map(b.__getitem__, counts)))
    if not dot:
        return 0.0
    return dot / (norm * b_norm)


def _summary(texts: Sequence[str], budget: int) -> str:
    pieces = distinct([s for t in texts for s in _sentences(t)])
    vectors = [_vector(p) for p in pieces]
    # counted in C from the words (the same counts as adding the vectors)
    centroid = Counter(itertools.chain.from_iterable(found for _, _, found in vectors))
    # The centroid's norm once, not once per sentence (it was most of the time spent).
    size = _norm(centroid)
    ranked = sorted(range(len(pieces)), key=lambda i: (-_cosine(vectors[i], centroid, size), i))
    chosen: list[int] = []
    size = 0
    for i in ranked:
        cost = len(pieces[i]) + (1 if chosen else 0)
        if size + cost > budget:
            continue
        chosen.append(i)
        size += cost
    if not chosen and pieces:  # one sentence longer than the whole budget
        return pieces[ranked[0]][: max(budget - 1, 0)].rstrip() + "…"
    return "\n".join(pieces[i] for i in sorted(chosen))


def merge_descriptions(texts: Sequence[str], budget: int = DESCRIPTION_BUDGET) -> str:
    """The stored description of something described by each of ``texts``.

    Args:
        texts: One description per mention, in a stable order (empty ones are skipped).
        budget: Characters the result may use; past it the set is summarised.

    Returns:
        The distinct descriptions one per line, or a summary of at most ``budget``
        characters made of their most representative sentences.
    """
    return _merged(tuple(texts), budget)


# Cached: an object named in many batches is often merged again from the same
# descriptions (a chunk that adds none, both ends of a batch's relationships).
@functools.lru_cache(maxsize=1 << 12)
def _merged(texts: tuple[str, ...], budget: int) -> str:
    kept = distinct(texts)
    joined = "\n".join(kept)
    if len(joined) <= budget:
        return joined
    return _summary(kept, budget)


def digest(texts: Sequence[str]) -> str:
    """A hash of the distinct descriptions (what a stored summary was made from)."""
    h = hashlib.sha256()
    for text in distinct(texts):
        h.update(text.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:32]
