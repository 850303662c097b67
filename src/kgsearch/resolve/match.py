"""Entity match decisions: two candidates → merge or not, with a reason and a score.

:func:`decide` tries, in order: type compatibility (incompatible types never merge,
``type_conflict``), the exact normalised name (``exact``), a shared alias (``alias``),
an acronym against a multi-word name (``acronym``: "IBM" ~ "International Business
Machines"), fuzzy string similarity (``fuzzy``) and embedding cosine (``embedding``).
Anything else is ``no_match``.

Fuzzy scoring uses rapidfuzz's ``token_sort_ratio`` (0–100), not ``WRatio``: ``WRatio``
takes the best of several partial scorers, so a name scores about 90 against any
longer name that contains it ("New York" ~ "New York Yankees"), which is the most
common false merge between entity names. ``token_sort_ratio`` is symmetric, ignores
word order ("Smith John" ~ "John Smith") and still forgives a typo in a long name.
Two guards apply before fuzzy and embedding matches: a normalised name shorter than
``min_fuzzy_length`` never fuzzy-matches, and names whose numbers differ (digits and
upper-case Roman numerals: "World War I" vs "World War II", "Apollo 11" vs "Apollo 13")
never match by similarity at all, nor do relatives ("J. S. Bach" vs "C. P. E. Bach":
the same last word under other initials); and an embedding match needs the two names
to share a word ("Columbus" and "Ohio" are close by meaning, not one place).

:func:`resolve` clusters many candidates: it finds candidate pairs by blocking
(shared normalised key, alias or acronym initials; shared token, 3-character prefix or
suffix for fuzzy; a blocked matrix product for embeddings), decides each pair, and
unions the merges strongest first. A union that would put two incompatible types in
one cluster (an untyped "Jesse James" between the person and the film) is refused and
recorded. An acronym that would expand to two different names among the candidates
("DC": "District of Columbia", "DC Comics") merges with neither. Blocking finds
every fuzzy pair that shares a token, prefix or suffix; a pair with a typo in every
token and at both ends is the documented miss.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt
from rapidfuzz import fuzz, process
from rapidfuzz.distance import Levenshtein

from kgsearch.text.names import entity_type

__all__ = [
    "Candidate",
    "Decision",
    "MatchRules",
    "MergeRecord",
    "Reason",
    "Resolution",
    "cluster",
    "decide",
    "normalise",
    "resolve",
]

Reason = Literal["exact", "alias", "acronym", "fuzzy", "embedding", "type_conflict", "no_match"]

UNTYPED = "entity"
DEFAULT_COMPATIBLE: tuple[frozenset[str], ...] = (
    frozenset({"person", "character"}),
    frozenset({"organization", "organisation", "company"}),
    frozenset({"place", "location", "geo", "gpe"}),
)
# Order in which merges are applied when clustering: surest first.
_STRENGTH: dict[str, int] = {"exact": 0, "alias": 1, "acronym": 2, "fuzzy": 3, "embedding": 4}
_ACRONYM_STOPWORDS = frozenset(
    {"of", "and", "the", "for", "in", "on", "at", "to", "a", "an", "de", "du", "la", "le", "et"}
)
_DROPPED = frozenset(".'’‘`ʼ")
_SPACE = re.compile(r"\s+")
_DIGITS = re.compile(r"\d+")
_RAW_TOKEN = re.compile(r"\w+")
_ROMAN = re.compile(r"^M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})$")
_ROMAN_VALUE = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
_DOTTED_ACRONYM = re.compile(r"^(?:\w\.){2,}\w?\.?$")


@dataclass(frozen=True)
class Candidate:
    """One entity that may name the same thing as another.

    Attributes:
        id: The entity's id (carried into :class:`MergeRecord`).
        name: The name as written.
        type: Its type (normalised with :func:`~kgsearch.text.names.entity_type`;
            ``entity`` means untyped).
        aliases: Other names it is known by.
        vector: Its embedding, or None (not compared, not hashed).
    """

    id: str
    name: str
    type: str = UNTYPED
    aliases: tuple[str, ...] = ()
    vector: npt.NDArray[np.floating] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class MatchRules:
    """Thresholds and switches for :func:`decide` and :func:`resolve`.

    Attributes:
        fuzzy_threshold: Lowest ``token_sort_ratio`` (0–100) that merges.
        embedding_threshold: Lowest cosine similarity (−1–1) that merges.
        min_fuzzy_length: Normalised names shorter than this never fuzzy-match.
        acronyms: Whether "IBM" ~ "International Business Machines" merges (the
            acronym written in capitals or with dots, the long name in title case).
        compatible: Groups of types that may merge with each other; a type always
            merges with itself and with ``entity`` (untyped).
        max_block: Fuzzy blocks (shared token, prefix or suffix) larger than this are
            skipped when clustering, so one very common word cannot make it quadratic.
    """

    fuzzy_threshold: float = 92.0
    embedding_threshold: float = 0.9
    min_fuzzy_length: int = 4
    acronyms: bool = True
    compatible: tuple[frozenset[str], ...] = DEFAULT_COMPATIBLE
    max_block: int = 1000

    def types_compatible(self, a: str, b: str) -> bool:
        """Whether entities of types ``a`` and ``b`` may be one entity."""
        a, b = entity_type(a), entity_type(b)
        if a == b or UNTYPED in (a, b):
            return True
        return any(a in group and b in group for group in self.compatible)


@dataclass(frozen=True)
class Decision:
    """The outcome of comparing two candidates.

    Attributes:
        merge: Whether they are one entity.
        reason: Which rule decided.
        score: 100 for ``exact``/``alias``/``acronym``, the fuzzy score (0–100) for
            ``fuzzy`` and for ``no_match`` when one was computed (else 0), the cosine
            for ``embedding``, 0 for ``type_conflict``.
    """

    merge: bool
    reason: Reason
    score: float


@dataclass(frozen=True)
class MergeRecord:
    """One pair decision applied (or refused) while clustering."""

    a_id: str
    b_id: str
    reason: Reason
    score: float


@dataclass(frozen=True)
class Resolution:
    """The result of :func:`resolve`.

    Attributes:
        clusters: Groups of candidates that are one entity, each in input order, the
            groups ordered by their first member.
        merges: Every pair merge that joined two clusters, in the order applied.
        refused: Merges :func:`decide` allowed but that would have put incompatible
            types in one cluster (reason ``type_conflict``, the pair's own score).
    """

    clusters: list[list[Candidate]]
    merges: list[MergeRecord]
    refused: list[MergeRecord]


def _strip_latin_marks(text: str) -> str:
    # Only marks on Latin letters go: a kana voicing mark or a Devanagari virama
    # changes the word, so "が" and "क्" keep theirs.
    out: list[str] = []
    latin_base = False
    for char in unicodedata.normalize("NFD", text):
        if unicodedata.combining(char):
            if not latin_base:
                out.append(char)
            continue
        latin_base = unicodedata.name(char, "").startswith("LATIN")
        out.append(char)
    return unicodedata.normalize("NFC", "".join(out))


def normalise(name: str) -> str:
    """The comparison form of a name.

    NFKC, casefolded, accents on Latin letters removed ("Beyoncé" → "beyonce"; "東京"
    stays "東京"), periods and apostrophes dropped ("U.S." → "us"), other punctuation
    made a space, whitespace collapsed, a leading "the " dropped.

    Args:
        name: The name as written.

    Returns:
        The normalised name ("" when nothing is left).
    """
    text = _strip_latin_marks(unicodedata.normalize("NFKC", name).casefold())
    chars = []
    for char in text:
        if unicodedata.category(char).startswith("P"):
            chars.append("" if char in _DROPPED else " ")
        else:
            chars.append(char)
    text = _SPACE.sub(" ", "".join(chars)).strip()
    if text.startswith("the ") and len(text) > 4:
        text = text[4:]
    return text


def _roman(token: str) -> int:
    total = 0
    for here, after in zip(token, [*token[1:], ""], strict=True):
        value = _ROMAN_VALUE[here]
        total += -value if after and _ROMAN_VALUE[after] > value else value
    return total


def _numbers(name: str) -> tuple[int, ...]:
    """Numbers in a name: digit runs and upper-case Roman numerals ("II" → 2)."""
    found = [int(d) for d in _DIGITS.findall(unicodedata.normalize("NFKC", name))]
    for token in _RAW_TOKEN.findall(name):
        if token.isupper() and token.isascii() and _ROMAN.match(token):
            found.append(_roman(token))
    return tuple(sorted(found))


def _acronym_form(name: str) -> str | None:
    """The letters of a name written as an acronym ("IBM", "U.S."), else None."""
    raw = unicodedata.normalize("NFKC", name).strip()
    if not raw or any(c.isspace() for c in raw):
        return None
    letters = "".join(c for c in raw if c.isalnum())
    if not 2 <= len(letters) <= 6:
        return None
    if (letters.isupper() and letters.isalpha()) or _DOTTED_ACRONYM.match(raw):
        return letters.casefold()
    return None


def _initials(normalised: str) -> set[str]:
    """Acronyms a multi-word name may go by: all initials, and without stopwords."""
    tokens = normalised.split()
    if len(tokens) < 2:
        return set()
    found = {"".join(t[0] for t in tokens)}
    content = [t for t in tokens if t not in _ACRONYM_STOPWORDS]
    if len(content) >= 2:
        found.add("".join(t[0] for t in content))
    return found


def _is_title(name: str) -> bool:
    """Whether every word but stopwords starts upper-case ("Indian Institute of …")."""
    words = [w for w in _RAW_TOKEN.findall(name) if w.isalpha()]
    return bool(words) and all(
        w[0].isupper() for w in words if w.casefold() not in _ACRONYM_STOPWORDS
    )


def _sorted_tokens(normalised: str) -> str:
    return " ".join(sorted(normalised.split()))


@dataclass(frozen=True)
class _Prepared:
    """Everything :func:`decide` derives from one candidate, computed once."""

    candidate: Candidate
    type: str
    key: str
    names: frozenset[str]
    acronym: str | None
    initials: frozenset[str]
    numbers: tuple[int, ...]
    sorted_key: str
    unit: npt.NDArray[np.float64] | None


def _prepare(candidate: Candidate) -> _Prepared:
    key = normalise(candidate.name)
    names = frozenset(n for n in (key, *map(normalise, candidate.aliases)) if n)
    unit = None
    if candidate.vector is not None:
        vector = np.asarray(candidate.vector, dtype=np.float64).ravel()
        length = float(np.linalg.norm(vector))
        unit = vector / length if length > 0 else None
    return _Prepared(
        candidate=candidate,
        type=entity_type(candidate.type),
        key=key,
        names=names,
        acronym=_acronym_form(candidate.name),
        initials=frozenset(_initials(key)) if _is_title(candidate.name) else frozenset(),
        numbers=_numbers(candidate.name),
        sorted_key=_sorted_tokens(key),
        unit=unit,
    )


SINGLE_WORD_THRESHOLD = 95.0
"""One-word names are held to a higher fuzzy score: one letter apart is often another
entity (Guyana and Guayana score 92.3), while a real typo in a long word still passes
(Mississipi and Mississippi score 95.2)."""


def _fuzzy_threshold(a: str, b: str, rules: MatchRules) -> float:
    if " " not in a and " " not in b:
        return max(rules.fuzzy_threshold, SINGLE_WORD_THRESHOLD)
    return rules.fuzzy_threshold


def _variant(a: str, b: str) -> bool:
    """Names that differ by a whole extra word ("National League" / "National League
    A") or by an affix on one word ("German" / "Germany", "Lithuania" / "Lithuanian",
    "artisan" / "Partisan", "German language" / "Germanic language") name related but
    different things: no fuzzy merge (exact, alias and acronym rules still apply). The
    cost: a typo that drops a word's last letter ("Doyl") is read as a variant too."""
    ta, tb = a.split(), b.split()
    sa, sb = set(ta), set(tb)
    if sa != sb and (sa <= sb or sb <= sa):
        return True
    da, db = [t for t in ta if t not in sb], [t for t in tb if t not in sa]
    if len(da) == len(db) == 1:
        x, y = sorted((da[0], db[0]), key=len)
        return x != y and (y.startswith(x) or y.endswith(x))
    return False


_FILLER = frozenset({"a", "an", "and", "at", "de", "for", "in", "of", "on", "the", "to"})


def _typo_apart(a: str, b: str) -> bool:
    """Every word one name has and the other lacks is a typo of one of the other's
    (at most one edit in words of up to 6 letters, two in longer ones), filler words
    aside: "Gamal Abdel Nasser" ~ "Gamal Abdul Nasser", but not "Premier of X" ~
    "President of X" or "music for X" ~ "lyrics for X"."""
    ta, tb = set(a.split()), set(b.split())
    da, db = ta - tb - _FILLER, tb - ta - _FILLER

    def near(x: str, others: set[str]) -> bool:
        budget = 1 if max(len(x), *(len(y) for y in others)) <= 6 else 2
        return any(Levenshtein.distance(x, y) <= budget for y in others)

    if not da and not db:
        return True
    return bool(da and db) and all(near(x, db) for x in da) and all(near(y, da) for y in db)


_TITLES = frozenset(
    {"president", "king", "queen", "prince", "princess", "sir", "dame", "lord", "lady"}
    | {"dr", "mr", "mrs", "ms", "saint", "st", "pope", "general", "captain", "senator"}
    | {"governor", "emperor", "empress", "duke", "duchess", "count", "judge", "professor"}
)


def _relatives(a: str, b: str) -> bool:
    """Names that end with the same word under other given names or initials ("j s
    bach" / "c p e bach", "michael schumacher" / "ralf schumacher") are relatives, not
    one person: neither's initials are among the other's ("john f kennedy" / "john
    kennedy" and "j s bach" / "johann sebastian bach" still may match; a title is no
    given name: "president obama" / "barack obama")."""
    ta = [t for t in a.split() if t not in _TITLES]
    tb = [t for t in b.split() if t not in _TITLES]
    if len(ta) < 2 or len(tb) < 2 or ta[-1] != tb[-1]:
        return False
    ia, ib = {t[0] for t in ta[:-1]}, {t[0] for t in tb[:-1]}
    return not (ia <= ib or ib <= ia)


def _share_a_word(a: str, b: str) -> bool:
    """Whether two names share a word other than filler ("Columbus" and "Ohio", "Moscow"
    and "Russia" share none: neighbours by meaning, not one entity)."""
    return bool((set(a.split()) & set(b.split())) - _FILLER)


def _decide(a: _Prepared, b: _Prepared, rules: MatchRules) -> Decision:
    if not rules.types_compatible(a.type, b.type):
        return Decision(False, "type_conflict", 0.0)
    if a.key and a.key == b.key:
        return Decision(True, "exact", 100.0)
    if a.names & b.names:
        return Decision(True, "alias", 100.0)
    if rules.acronyms and (
        (a.acronym is not None and a.acronym in b.initials)
        or (b.acronym is not None and b.acronym in a.initials)
    ):
        return Decision(True, "acronym", 100.0)
    if a.numbers != b.numbers or _relatives(a.key, b.key):
        return Decision(False, "no_match", 0.0)
    score = 0.0
    if min(len(a.key), len(b.key)) >= rules.min_fuzzy_length:
        score = float(fuzz.ratio(a.sorted_key, b.sorted_key))
        if (
            score >= _fuzzy_threshold(a.key, b.key, rules)
            and not _variant(a.key, b.key)
            and _typo_apart(a.key, b.key)
        ):
            return Decision(True, "fuzzy", score)
    # an embedding match needs a word in common: a small model puts a city next to
    # its state and a driver next to his rival (cosine 0.98)
    if (
        a.unit is not None
        and b.unit is not None
        and a.unit.shape == b.unit.shape
        and _share_a_word(a.key, b.key)
    ):
        cosine = float(a.unit @ b.unit)
        if cosine >= rules.embedding_threshold:
            return Decision(True, "embedding", cosine)
    return Decision(False, "no_match", score)


def decide(a: Candidate, b: Candidate, rules: MatchRules | None = None) -> Decision:
    """Whether two candidates are one entity, and why.

    Args:
        a: One candidate.
        b: The other.
        rules: Thresholds and type table (defaults when None).

    Returns:
        The decision; its reason is the first rule that settled it.
    """
    return _decide(_prepare(a), _prepare(b), rules or MatchRules())


class _UnionFind:
    def __init__(self, types: Sequence[str]) -> None:
        self.parent = list(range(len(types)))
        self.types: list[set[str]] = [{t} - {UNTYPED} for t in types]

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i: int, j: int, rules: MatchRules) -> bool | None:
        """Join the sets of i and j: True, None when already one, False when refused."""
        ri, rj = self.find(i), self.find(j)
        if ri == rj:
            return None
        if not all(rules.types_compatible(s, t) for s in self.types[ri] for t in self.types[rj]):
            return False
        root, child = min(ri, rj), max(ri, rj)
        self.parent[child] = root
        self.types[root] |= self.types[child]
        return True


def _pairs_in(members: Sequence[int]) -> Iterable[tuple[int, int]]:
    for x, i in enumerate(members):
        for j in members[x + 1 :]:
            yield (i, j) if i < j else (j, i)


def _key_pairs(items: Sequence[_Prepared]) -> set[tuple[int, int]]:
    """Pairs that share a normalised name or alias, or an acronym and its initials."""
    blocks: dict[str, list[int]] = defaultdict(list)
    for i, item in enumerate(items):
        keys = set(item.names) | set(item.initials)
        if item.acronym is not None:
            keys.add(item.acronym)
        for key in keys:
            blocks[key].append(i)
    return {pair for members in blocks.values() for pair in _pairs_in(members)}


def _fuzzy_pairs(items: Sequence[_Prepared], rules: MatchRules) -> set[tuple[int, int]]:
    """Pairs over the fuzzy threshold among names sharing a token, a prefix or suffix,
    or a word's first or last three characters."""
    blocks: dict[str, list[int]] = defaultdict(list)
    for i, item in enumerate(items):
        if len(item.key) < rules.min_fuzzy_length:
            continue
        tokens = item.key.split()
        keys = {f"t:{token}" for token in tokens}
        keys |= {f"p:{item.key[:3]}", f"s:{item.key[-3:]}"}
        # a typo changes a word's start or its end, rarely both
        keys |= {f"tp:{token[:3]}" for token in tokens} | {f"ts:{token[-3:]}" for token in tokens}
        for key in keys:
            blocks[key].append(i)
    pairs: set[tuple[int, int]] = set()
    for members in blocks.values():
        if len(members) < 2 or len(members) > rules.max_block:
            continue
        texts = [items[i].sorted_key for i in members]
        scores = process.cdist(
            texts, texts, scorer=fuzz.ratio, score_cutoff=rules.fuzzy_threshold, dtype=np.uint8
        )
        for x, y in zip(*np.nonzero(np.triu(scores, k=1)), strict=True):
            i, j = members[int(x)], members[int(y)]
            pairs.add((i, j) if i < j else (j, i))
    return pairs


def _embedding_pairs(
    items: Sequence[_Prepared], rules: MatchRules, chunk: int = 1024
) -> set[tuple[int, int]]:
    """Pairs whose embeddings reach the cosine threshold (blocked matrix products)."""
    by_dims: dict[int, list[tuple[int, npt.NDArray[np.float64]]]] = defaultdict(list)
    for i, item in enumerate(items):
        if item.unit is not None:
            by_dims[item.unit.shape[0]].append((i, item.unit))
    pairs: set[tuple[int, int]] = set()
    for rows in by_dims.values():
        members = [i for i, _ in rows]
        matrix = np.stack([unit for _, unit in rows])
        for start in range(0, len(members), chunk):
            sims = matrix[start : start + chunk] @ matrix.T
            for x, y in zip(*np.nonzero(sims >= rules.embedding_threshold), strict=True):
                i, j = members[start + int(x)], members[int(y)]
                if i < j:
                    pairs.add((i, j))
    return pairs


_Row = tuple[int, float, int, int, Decision]


def _unambiguous_acronyms(decided: list[_Row], items: Sequence[_Prepared]) -> list[_Row]:
    """Drop acronym merges of an acronym that expands to more than one name here."""
    expansions: dict[int, set[str]] = defaultdict(set)
    for _, _, i, j, decision in decided:
        if decision.reason == "acronym":
            short, long = (i, j) if items[i].acronym is not None else (j, i)
            expansions[short].add(items[long].key)
    ambiguous = {i for i, keys in expansions.items() if len(keys) > 1}
    return [
        row for row in decided if row[4].reason != "acronym" or not ambiguous & {row[2], row[3]}
    ]


def resolve(
    candidates: Sequence[Candidate], rules: MatchRules | None = None, *, blocking: bool = True
) -> Resolution:
    """Cluster candidates into entities, recording every merge.

    Args:
        candidates: The candidates, in a stable order (ties are broken by it).
        rules: Thresholds and type table (defaults when None).
        blocking: Compare only pairs found by blocking (the default); False compares
            every pair, which is quadratic and meant as an oracle for tests.

    Returns:
        The clusters, the merges applied and the merges refused for type conflicts.
    """
    rules = rules or MatchRules()
    items = [_prepare(c) for c in candidates]
    if blocking:
        pairs = _key_pairs(items) | _fuzzy_pairs(items, rules) | _embedding_pairs(items, rules)
    else:
        pairs = set(_pairs_in(range(len(items))))
    decided: list[_Row] = []
    for i, j in pairs:
        decision = _decide(items[i], items[j], rules)
        if decision.merge:
            decided.append((_STRENGTH[decision.reason], -decision.score, i, j, decision))
    decided = _unambiguous_acronyms(decided, items)
    decided.sort(key=lambda row: row[:4])
    forest = _UnionFind([item.type for item in items])
    merges: list[MergeRecord] = []
    refused: list[MergeRecord] = []
    for _, _, i, j, decision in decided:
        joined = forest.union(i, j, rules)
        if joined is None:
            continue
        a, b = candidates[i].id, candidates[j].id
        if joined:
            merges.append(MergeRecord(a, b, decision.reason, decision.score))
        else:
            refused.append(MergeRecord(a, b, "type_conflict", decision.score))
    groups: dict[int, list[Candidate]] = {}
    for i, candidate in enumerate(candidates):
        groups.setdefault(forest.find(i), []).append(candidate)
    return Resolution(clusters=list(groups.values()), merges=merges, refused=refused)


def cluster(
    candidates: Sequence[Candidate], rules: MatchRules | None = None
) -> list[list[Candidate]]:
    """Groups of candidates that are one entity (:func:`resolve` without the records).

    Args:
        candidates: The candidates.
        rules: Thresholds and type table (defaults when None).

    Returns:
        The clusters, each in input order.
    """
    return resolve(candidates, rules).clusters
