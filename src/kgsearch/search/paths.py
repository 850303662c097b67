"""Structured multi-hop search: link the question's names to objects, follow the relation
paths that best match the rest of the question, rank the objects at the paths' ends.

Three steps, all bounded:

1. **Linking.** Every span of up to ``_MAX_SPAN_WORDS`` words (brackets dropped) is looked
   up as an object key, all spans in one batched call
   (:meth:`~kgsearch.store.base.SearchIndex.objects_named_many`); spans shaped like a
   name, then the longest, become the seeds (:func:`link_spans`).
2. **Paths.** From the seeds, a beam search walks typed edges hop by hop (at most
   ``_HUB_EDGES`` edges per object and direction, so a hub costs no more than any other
   object: :meth:`~kgsearch.store.base.GraphReads.typed_edges`' rule), over the
   project's typed graph held in memory as arrays, or the store's reads until it is
   (:mod:`kgsearch.search.path_graph`); each sequence's objects are node codes with their
   mass, a hop a few vector operations. Each relation-type
   sequence met on the way (``directed_by`` backwards, then ``has_genre``) is scored by
   :class:`~kgsearch.search.path_scores.PathScorer`: are its relations the ones the
   question names, are all of those on it, and does its end (the relation the answer
   phrase names, or the object type at its end, read from a sample of its objects)
   answer what the question asks for. The ``_BEAM`` best sequences of each length go on,
   more (up to ``_MAX_BEAM``) when they score close, each over at most ``_FRONTIER``
   objects.
3. **Ends.** Mass flows from the seeds along a sequence, split evenly over the edges each
   object has of that step (a hub's share per edge is small); the objects at the ends of
   the best sequences are ranked by their support: their mass on each sequence reaching
   them, weighted by a softmax over the sequences' scores (sequences far below the best
   are left out), and the edge that reached each is ranked with it.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kgsearch.search.parts import GraphSearch
from kgsearch.search.path_graph import Edges, FloatArray, IntArray, TypedGraph, edges_for
from kgsearch.search.path_scores import (
    PathScorer,
    Signature,
    answer_phrase,
    content_words,
    humanise,
)
from kgsearch.search.plan import Vector
from kgsearch.search.saved_texts import note_saved
from kgsearch.store.base import SearchIndex, Trace
from kgsearch.text.stopwords import STOPWORDS

__all__ = [
    "Links",
    "PathHits",
    "Span",
    "humanise",
    "link_entities",
    "link_spans",
    "relation_vectors",
    "remember_vectors",
    "span_names",
    "unembedded",
    "walk_paths",
]

_MAX_SPAN_WORDS = 10
_IDS_PER_NAME = 5  # the most objects one name links
_HUB_EDGES = 64
_FRONTIER = 200
_FRONTIER_TOTAL = 400
_BEAM = 4
_MAX_BEAM = 8
_BEAM_MARGIN = 0.1
_TYPE_SAMPLE = 3
_BEST_PATHS = 6
_TEMPERATURE = 0.1
_MIN_WEIGHT = 0.01
_SECOND_SPAN = 0.9  # the most a span other than the first weighs
_MAX_RESULTS = 200
_CACHE_SIZE = 50_000
# pronouns never name the entity a question starts from
_NOT_NAMES = STOPWORDS | {"he", "her", "his", "i", "me", "she", "their", "them", "they", "you"}
_WORD = re.compile(r"\S+")
_EDGE = r"^[\s\"'?.,!;:()]+|[\s\"?.,!;:()]+$"
_LEADING = frozenset("\"'?.,!;:()")
_TRAILING = frozenset('"?.,!;:()')

_VECTORS: dict[tuple[Callable[[str], Vector], str], Vector] = {}
# a held graph's relation and object types are embedded in the background, this many a
# call (a text graph has thousands: a question met dozens new, a model call each hop)
_VOCABULARY_BATCH = 128
_VOCABULARY_MAX = 20_000
_vocabularies: dict[tuple[int, Callable[[str], Vector]], TypedGraph] = {}
_vocabulary_lock = threading.Lock()
_log = logging.getLogger(__name__)


@dataclass
class PathHits:
    """What a path walk found.

    Attributes:
        objects: End objects, best first, with scores.
        relationships: The last edge of the best path to each end object, same scores.
        seeds: The linked object ids.
        paths: The best relation-type sequences with their scores, for debug output.
        signatures: The same sequences as (relationship type, forward) steps, each with
            the objects its walk reached (for diagnostics: which path held an answer).
    """

    objects: list[tuple[str, float]] = field(default_factory=list)
    relationships: list[tuple[str, float]] = field(default_factory=list)
    seeds: list[str] = field(default_factory=list)
    paths: list[tuple[str, float]] = field(default_factory=list)
    signatures: list[tuple[Signature, list[str]]] = field(default_factory=list)


def link_entities(
    store: SearchIndex, project: str, question: str, trace: Trace | None = None
) -> tuple[dict[str, float], str]:
    """Objects named in the question, and the question without their names.

    Args:
        store: The store searched.
        project: The project searched.
        question: The question; square brackets are dropped, never relied on.
        trace: Where the lookups' statements go.

    Returns:
        Seed object id → weight (the span's length over the longest's), and the rest of
        the question.
    """
    links = link_spans(store, project, question, trace)
    seeds: dict[str, float] = {}
    for link in links.spans:
        for id in link.ids:
            seeds[id] = max(seeds.get(id, 0.0), link.weight)
    return seeds, links.rest()


@dataclass
class Span:
    """Words of a question that name objects.

    Attributes:
        ids: The objects named.
        weight: The span's length over the longest linked span's, in (0, 1].
        words: The span's word positions in the question.
    """

    ids: list[str]
    weight: float
    words: range


@dataclass
class Links:
    """The linked spans of a question (longest first) and its words."""

    spans: list[Span]
    words: list[str]

    def rest(self, spans: Sequence[Span] | None = None) -> str:
        """The question without the words of ``spans`` (default: every linked span)."""
        taken = {w for span in (self.spans if spans is None else spans) for w in span.words}
        return " ".join(w for k, w in enumerate(self.words) if k not in taken)


def link_spans(
    store: SearchIndex,
    project: str,
    question: str,
    trace: Trace | None = None,
    named: Callable[[list[str]], Mapping[str, Sequence[tuple[str, str, str]]]] | None = None,
) -> Links:
    """The longest non-overlapping spans of the question that are object keys (at most
    six objects in all, no span under 0.6 times the first's length), in one batched
    lookup. Spans shaped like a name (first and last word not lower case: "Crazy Heart",
    not "movie Crazy") go first, so a common word or a lower-case run that happens to
    be a key ("actors", "Movie Crazy") never displaces the name the question is about;
    the first span weighs 1, the others less.

    ``named`` looks the names up (each → its objects' (type, id, key), ordered), for a search
    whose names were all looked up in one call (:meth:`~kgsearch.search.rows.Rows.named`);
    without it the store is asked here."""
    words, spans = _spans(question)
    names = [n for _, _, variants in spans for n in variants]
    if named is None:
        ids_of = store.objects_named_many(project, names, limit=_IDS_PER_NAME, trace=trace)
    else:
        found = named(names)
        ids_of = {n: [r[1] for r in rows[:_IDS_PER_NAME]] for n, rows in found.items() if rows}
    linked: list[tuple[bool, int, int, int, list[str]]] = []  # name-shaped, chars, i, j, ids
    for i, j, variants in spans:
        ids = list(dict.fromkeys(id for n in variants for id in ids_of.get(n, [])))
        if ids:
            shaped = not (_lower(words[i].group()) or _lower(words[j - 1].group()))
            linked.append((shaped, words[j - 1].end() - words[i].start(), i, j, ids))
    return _chosen(linked, words)


@functools.lru_cache(maxsize=256)
def span_names(question: str) -> tuple[str, ...]:
    """The names :func:`link_spans` looks up for a question, in its order (cached: a
    search asks twice, its prefetch's name look-up and then the name leg's)."""
    return tuple(n for _, _, variants in _spans(question)[1] for n in variants)


@functools.lru_cache(maxsize=32)
def _spans(question: str) -> tuple[list[re.Match[str]], list[tuple[int, int, list[str]]]]:
    """The question's words, and each span that may be a name: (first word, end word,
    the names tried for it). Cached for searches under way (each asks twice); callers
    only read the lists. An entry is ~60 objects the cyclic collector walks."""
    text = question.replace("[", "").replace("]", "")
    words = list(_WORD.finditer(text))
    starts, ends = [w.start() for w in words], [w.end() for w in words]
    # whether each word alone names nothing (a span of such words is not looked up)
    plain = [(t := w.group().lower().strip("?.,!;:'\"")) in _NOT_NAMES or not t for w in words]
    spans: list[tuple[int, int, list[str]]] = []  # first word, end word, names tried
    for i in range(len(words)):
        nameless = True
        for j in range(i + 1, min(len(words), i + _MAX_SPAN_WORDS) + 1):
            nameless = nameless and plain[j - 1]
            if not nameless:
                spans.append((i, j, _variants(text[starts[i] : ends[j - 1]])))
    return words, spans


def _chosen(
    found: list[tuple[bool, int, int, int, list[str]]], words: list[re.Match[str]]
) -> Links:
    """The spans linked, name-shaped and longest first, none overlapping another."""
    found.sort(key=lambda f: (not f[0], -f[1], f[2]))
    taken: set[int] = set()
    linked: list[Span] = []
    objects = 0
    for _, chars, i, j, ids in found:
        if taken & set(range(i, j)) or chars < 0.6 * found[0][1] or objects >= 6:
            continue
        taken.update(range(i, j))
        weight = 1.0 if not linked else min(_SECOND_SPAN, chars / found[0][1])
        linked.append(Span(ids, weight, range(i, j)))
        objects += len(ids)
    return Links(linked, [w.group() for w in words])


def _lower(word: str) -> bool:
    """Whether a word starts with a lower-case letter (after opening punctuation)."""
    stripped = word.lstrip("\"'([")
    return bool(stripped) and stripped[0].islower()


def _variants(span: str) -> list[str]:
    """The span, and the span without its edge punctuation or a trailing possessive."""
    bare = _bare(span)
    variants = [span]
    if bare and bare != span:
        variants.append(bare)
    if bare.endswith("'s") and len(bare) > 2:
        variants.append(bare[:-2])
    return variants


def _bare(span: str) -> str:
    """The span without its edge punctuation (what ``re.sub(_EDGE, "", span)`` leaves:
    white space and ``"?.,!;:()`` at either end, and ``'`` at the start)."""
    start, end = 0, len(span)
    while start < end and (span[start] in _LEADING or span[start].isspace()):
        start += 1
    while end > start and (span[end - 1] in _TRAILING or span[end - 1].isspace()):
        end -= 1
    return span[start:end]


def walk_paths(
    store: GraphSearch,
    project: str,
    question: str,
    embed: Callable[[str], Vector],
    *,
    depth: int = 3,
    trace: Trace | None = None,
    embed_many: Callable[[Sequence[str]], list[Vector]] | None = None,
) -> PathHits:
    """Link the question's names and rank the objects at the ends of its best paths.

    Args:
        store: The store searched.
        project: The project searched.
        question: The question.
        embed: The query embedder (relation texts are embedded once per process).
        depth: The longest path, in hops.
        trace: Where the statements go.
        embed_many: Embeds the relation texts of a hop in one call when given (a text
            graph meets dozens of new relation types per question).

    Returns:
        The end objects and relationships, best first (empty when nothing was linked).
    """
    links = link_spans(store, project, question, trace)
    seeds: dict[str, float] = {}
    for link in links.spans:
        for id in link.ids:
            seeds[id] = max(seeds.get(id, 0.0), link.weight)
    hits = PathHits(seeds=list(seeds))
    if not seeds:
        return hits
    # another linked span may be a relation word that is also a name (the tag
    # "writers" in "who are the writers of the movies acted by John Mills"): only the
    # first span leaves the text the relations are matched against
    main = links.spans[:1]
    rest = links.rest(main) or question
    taken = {w for span in main for w in span.words}
    phrase = answer_phrase([None if k in taken else w for k, w in enumerate(links.words)])
    words = content_words(rest)
    answer_words = content_words(phrase)
    if embed_many is not None:  # the answer phrase and the words in one call
        _prefill(embed, embed_many, [phrase, *words] if phrase else words)
    # the whole question's vector is the one the search embedded already (cached); the
    # names in it cost nothing measurable against the rest's, which would take a model call
    scorer = PathScorer(
        _unit(embed(question)),
        words,
        _text_vector(embed, phrase) if phrase else None,
        answer_words,
        lambda text: _text_vector(embed, text),
    )
    edges = edges_for(store, project, trace)
    if isinstance(edges, TypedGraph) and embed_many is not None:
        _embed_vocabulary(edges, embed, embed_many)
    codes = edges.nodes(list(seeds))
    known = codes >= 0
    start = Reach(
        codes[known],
        np.asarray(list(seeds.values()), dtype=np.float64)[known],
        np.full(int(known.sum()), -1, dtype=np.int64),
    )
    current: dict[Signature, Reach] = {(): start}
    reached: dict[Signature, Reach] = {}
    kinds: dict[Signature, str] = {}
    for _ in range(depth):
        nxt = _step(edges, current)
        if not nxt:
            break
        met = {t for sig in nxt for t, _ in sig} - set(scorer.relation_matches())
        new_kinds = _end_types(edges, nxt) if scorer.answer is not None else {}
        texts = [humanise(t) for t in met] + [humanise(k) for k in set(new_kinds.values())]
        if embed_many is not None:
            _prefill(embed, embed_many, texts)
        scorer.add_relations(met)
        scorer.add_object_types(new_kinds.values())
        reached.update(nxt)
        kinds.update(new_kinds)
        prefix = {s: scorer.score(s, None, final=False) for s in nxt}
        current = _frontier(edges, nxt, _beam(prefix))
    scored = {s: scorer.score(s, kinds.get(s)) for s in reached}
    return _rank(hits, edges, start.nodes, scored, reached)


@dataclass(frozen=True)
class Reach:
    """The objects a relation-type sequence reached, as node codes of the walk's
    :class:`~kgsearch.search.path_graph.Edges`.

    Attributes:
        nodes: The objects reached, each once.
        mass: The mass each holds.
        via: The edge that first reached each (-1 for a seed).
    """

    nodes: IntArray
    mass: FloatArray
    via: IntArray


def _beam(scores: Mapping[Signature, float]) -> list[Signature]:
    """The sequences walked on: the ``_BEAM`` best, and up to ``_MAX_BEAM`` while they
    score within ``_BEAM_MARGIN`` of the best (the question does not tell them apart)."""
    ranked = sorted(scores, key=lambda s: (-scores[s], len(s)))
    if not ranked:
        return []
    top = scores[ranked[0]]
    wide = [s for s in ranked[:_MAX_BEAM] if scores[s] >= top - _BEAM_MARGIN]
    return ranked[: max(_BEAM, len(wide))]


def _frontier(
    edges: Edges, reached: Mapping[Signature, Reach], beam: Sequence[Signature]
) -> dict[Signature, Reach]:
    """The objects each sequence of the beam walks on: its ``_FRONTIER`` with the most
    mass, and no more than ``_FRONTIER_TOTAL`` objects in all, the best sequences
    served first (the next hop reads the edges of every one)."""
    out: dict[Signature, Reach] = {}
    room = _FRONTIER_TOTAL
    for sig in beam:
        if room <= 0:
            break
        out[sig] = _top(edges, reached[sig], min(_FRONTIER, room))
        room -= len(out[sig].nodes)
    return out


def _end_types(edges: Edges, reached: Mapping[Signature, Reach]) -> dict[Signature, str]:
    """The object type each sequence ends at: the most common type among its
    ``_TYPE_SAMPLE`` objects with the most mass (one look-up for all)."""
    samples = {sig: _top(edges, r, _TYPE_SAMPLE).nodes for sig, r in reached.items()}
    if not samples:
        return {}
    nodes = np.unique(np.concatenate(list(samples.values())))
    found = dict(zip(nodes.tolist(), edges.types(nodes), strict=True))
    out: dict[Signature, str] = {}
    for sig, sample in samples.items():
        types = [t for t in (found[n] for n in sample.tolist()) if t is not None]
        if types:
            out[sig] = max(set(types), key=lambda t: (types.count(t), t))
    return out


def _step(edges: Edges, current: Mapping[Signature, Reach]) -> dict[Signature, Reach]:
    """One hop of every live sequence, over one read of the frontier's capped edges: a
    node's mass splits evenly over its edges of each step (a hub's share is small)."""
    if not current:
        return {}
    frontier = np.unique(np.concatenate([r.nodes for r in current.values()]))
    hop = edges.hop(frontier, _HUB_EDGES)
    if not len(hop.at):
        return {}
    first = np.searchsorted(hop.at, np.arange(len(frontier)))
    last = np.searchsorted(hop.at, np.arange(len(frontier)), side="right")
    size = int(hop.other.max()) + 1
    nxt: dict[Signature, Reach] = {}
    for sig, reach in current.items():
        at = np.searchsorted(frontier, reach.nodes)
        counts = last[at] - first[at]
        total = int(counts.sum())
        if not total:
            continue
        entries = np.repeat(first[at], counts) + (
            np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        )
        mass = np.repeat(reach.mass, counts) / hop.split[entries]
        step, other = hop.step[entries], hop.other[entries]
        keys, where, inverse = np.unique(
            step * size + other, return_index=True, return_inverse=True
        )
        summed = np.bincount(inverse, weights=mass)
        via = hop.edge[entries][where]
        key_step = keys // size
        steps, seen = np.unique(step, return_index=True)
        for code in steps[np.argsort(seen, kind="stable")].tolist():  # in the order met
            chosen = key_step == code
            nxt[(*sig, edges.step(code))] = Reach(keys[chosen] % size, summed[chosen], via[chosen])
    return nxt


def _rank(
    hits: PathHits,
    edges: Edges,
    seeds: IntArray,
    scored: Mapping[Signature, float],
    reached: Mapping[Signature, Reach],
) -> PathHits:
    """End objects of the best sequences, by softmax-weighted normalised mass."""
    best = sorted(scored, key=lambda s: (-scored[s], len(s)))[:_BEST_PATHS]
    if not best:
        return hits
    top = scored[best[0]]
    nodes: list[IntArray] = []
    scores: list[FloatArray] = []
    vias: list[IntArray] = []
    for sig in best:
        weight = math.exp((scored[sig] - top) / _TEMPERATURE)
        if weight < _MIN_WEIGHT:  # its ends would still take ranks in fusion
            break
        reach = reached[sig]
        ends = ~np.isin(reach.nodes, seeds)
        mass = reach.mass[ends]
        peak = float(mass.max()) if len(mass) else 0.0
        nodes.append(reach.nodes[ends])
        scores.append(weight * mass / peak if peak > 0 else mass)
        vias.append(reach.via[ends])
        label = " → ".join(f"{t}{'' if fwd else ' (reverse)'}" for t, fwd in sig)
        hits.paths.append((label, round(scored[sig], 4)))
        hits.signatures.append((sig, edges.ids(nodes[-1])))
    every = np.concatenate(nodes)
    if not len(every):
        return hits
    score = np.concatenate(scores)
    via = np.concatenate(vias)
    unique, inverse = np.unique(every, return_inverse=True)
    totals = np.bincount(inverse, weights=score)
    # each object's edge: that of its best-scored entry (the first sequence on a tie)
    order = np.lexsort((np.arange(len(score)), -score))
    _, firsts = np.unique(inverse[order], return_index=True)
    edge = via[order][firsts]
    ranked = np.lexsort((edges.order(unique), -totals))[:_MAX_RESULTS]
    ids = edges.ids(unique[ranked])
    values = totals[ranked].tolist()
    hits.objects = list(zip(ids, values, strict=True))
    relationships: dict[str, float] = {}
    for rid, value in zip(edges.edge_ids(edge[ranked]), values, strict=True):
        relationships.setdefault(rid, value)
    hits.relationships = list(relationships.items())
    return hits


def relation_vectors(
    embed: Callable[[str], Vector],
    texts: Sequence[str],
    embed_many: Callable[[Sequence[str]], list[Vector]] | None = None,
) -> list[Vector]:
    """Unit vectors of relation texts, embedded by ``embed`` once per process (the texts
    not cached yet in one ``embed_many`` call when given)."""
    if embed_many is not None:
        _prefill(embed, embed_many, texts)
    return [_text_vector(embed, t) for t in texts]


def _top(edges: Edges, reach: Reach, n: int) -> Reach:
    """The ``n`` objects with the most mass (ties by id)."""
    order = np.lexsort((edges.order(reach.nodes), -reach.mass))[:n]
    return Reach(reach.nodes[order], reach.mass[order], reach.via[order])


def _unit(vector: Vector) -> Vector:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def unembedded(embed: Callable[[str], Vector], texts: Sequence[str]) -> list[str]:
    """The texts :func:`relation_vectors` would have to embed for ``embed``, each once."""
    return list(dict.fromkeys(t for t in texts if (embed, t) not in _VECTORS))


def remember_vectors(
    embed: Callable[[str], Vector], texts: Sequence[str], vectors: Sequence[Vector]
) -> None:
    """Keep ``vectors`` as ``embed``'s of ``texts``, embedded elsewhere (with the
    question, in the search's one model call), so :func:`relation_vectors` finds them."""
    if len(_VECTORS) + len(texts) >= _CACHE_SIZE:
        _VECTORS.clear()
    for text, vector in zip(texts, vectors, strict=True):
        _VECTORS[(embed, text)] = _unit(vector)
    note_saved(embed, dict(zip(texts, vectors, strict=True)))


def _prefill(
    embed: Callable[[str], Vector],
    embed_many: Callable[[Sequence[str]], list[Vector]],
    texts: Sequence[str],
) -> None:
    """Embed the texts not cached yet in one call, cached as ``embed``'s."""
    missing = unembedded(embed, texts)
    if missing:
        remember_vectors(embed, missing, embed_many(missing))


def _embed_vocabulary(
    graph: TypedGraph,
    embed: Callable[[str], Vector],
    embed_many: Callable[[Sequence[str]], list[Vector]],
) -> None:
    """Start embedding the graph's relation and object type texts in a background
    thread, once per graph and embedder (at most ``_VOCABULARY_MAX`` texts)."""
    with _vocabulary_lock:
        if _vocabularies.get((id(graph), embed)) is graph:
            return
        if len(_vocabularies) >= 16:  # graphs read again: forget the old ones
            _vocabularies.clear()
        _vocabularies[(id(graph), embed)] = graph
    texts = [humanise(t) for t in (*graph.steps, *graph.type_names)]
    if len(texts) > _VOCABULARY_MAX:
        return

    def run() -> None:
        try:
            for start in range(0, len(texts), _VOCABULARY_BATCH):
                _prefill(embed, embed_many, texts[start : start + _VOCABULARY_BATCH])
        # no caller to raise to: the walk embeds what it meets itself meanwhile
        except Exception as exc:
            _log.warning("relation types not embedded in advance: %s", exc)

    threading.Thread(target=run, name="kgsearch-path-vocabulary", daemon=True).start()


def _text_vector(embed: Callable[[str], Vector], text: str) -> Vector:
    """The unit vector of a relation text, embedded once per embedder."""
    cache_key = (embed, text)
    vector = _VECTORS.get(cache_key)
    if vector is None:
        if len(_VECTORS) >= _CACHE_SIZE:
            _VECTORS.clear()
        made = embed(text)
        vector = _VECTORS[cache_key] = _unit(made)
        note_saved(embed, {text: made})
    return vector
