"""Entity-anchored relationship retrieval: the facts about the objects a query names,
ranked by how well their relation matches the rest of the query.

Vector and BM25 legs rank a relationship by its whole text, so "who directed Top Hat"
finds "Top Hat directed_by Mark Sandrich" but also "Top Hat written_by ..." and
"Top Hats directed_by ..." near it. This leg starts from the other end:

1. **Anchors.** The query's names are linked to objects by exact key, ignoring case
   (:func:`~kgsearch.search.paths.link_spans`, the same linking the ``paths`` graph
   uses, its names looked up with the name leg's in one call:
   :meth:`~kgsearch.search.rows.Rows.named`); where a name is spelt exactly as some of
   its objects' keys, those only. When no name matches, the best object of the
   ``objects:bm25`` leg anchors instead, at a lower weight.
2. **Edges.** The anchors' incident relationships are read in one bounded call
   (:meth:`~kgsearch.store.base.GraphReads.typed_edges`, at most ``_HUB_EDGES`` per object
   and direction).
3. **Relation match.** Each relation type met is scored by the cosine between its
   humanised text ("directed by") and the query without the main anchor's name ("who
   directed"), both embedded by the query embedder (type texts once per process, see
   :func:`~kgsearch.search.paths.relation_vectors`), turned into a distribution over the
   types met by a softmax. Edges are ranked by anchor weight times their type's share;
   edges of one type and anchor keep the store's order.
4. **The rest, only when in doubt.** Embedding the rest of a first-time question costs
   model time (with the question in one call it added ~4-6 ms of CPU to ~1 MetaQA
   question in 3). Most questions name their relation ("who directed", "what genre"),
   so each span first matches with a stand-in (:func:`_stand_in`: the query's vector
   plus the rest's words, embedded once per process); only when that leaves the best
   type less than :data:`_SETTLED` ahead of the next (:func:`_settled`) is the rest
   embedded, mid-search, in a call of its own. The prefetch therefore embeds only the
   rest's words with the question (:func:`_prefetch`).

The leg is recorded as ``relationships:anchored``, fused like any other leg (its default
weight, :data:`WEIGHT`, is on its :class:`~kgsearch.search.parts.Leg`; for a query that
names one relation clearly it weighs :data:`CONFIDENT` times that), and shows in
``found_by`` and ``explain``.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kgsearch.model import EmbeddingStatus, Kind, Relationship
from kgsearch.search.legs import beside
from kgsearch.search.names import look_up_names
from kgsearch.search.parts import LEGS, Leg, LegInput, Legs, Prefetch, SearchReads, key, split_key
from kgsearch.search.path_scores import content_words, named_relations, overlap
from kgsearch.search.paths import (
    Links,
    humanise,
    link_spans,
    relation_vectors,
    remember_vectors,
    unembedded,
)
from kgsearch.search.plan import Plan, Vector
from kgsearch.search.rows import Rows
from kgsearch.search.saved_texts import keep_saved, saved_texts
from kgsearch.search.statements import Traces, log_of
from kgsearch.store.base import Trace

__all__ = ["CONFIDENT", "LEG", "WEIGHT", "Linked", "anchored_leg"]

LEG = "relationships:anchored"
WEIGHT = 4.0
"""The leg's default fusion weight (every other leg weighs 1.0). Calibrated on MetaQA
1-hop dev questions disjoint from the evaluated ones (``scripts/bench_quality.py
--part metaqa --offset 1000``, docs/benchmarks.md): the leg names facts about the very
objects the query names, in the order of the relation the question asks for, while the
vector and BM25 legs both put the topic's shortest facts first ("X has_genre Drama" for
"who wrote X"); at 2.0 their two first ranks outweighed the leg's. On 600 such
questions relationship MRR@10 read 0.839 at 2.0, 0.846 at 4.0 and 0.847 at 8.0."""
CONFIDENT = 8.0
"""How much more the leg weighs in fusion for a query that names one relation clearly
(:func:`_clear`): its facts about the named object then come first. At the fixed weight
the other legs' first ranks (the topic's shortest facts, "X has_genre Drama" for "who
directed X") outweighed the leg's first hit whenever the leg ranked them second; where
the query names no relation clearly ("what sort of film is X"), the leg's order is a
guess and keeps :data:`WEIGHT`. Chosen on MetaQA 1-hop dev questions 1000–1599 (held
out from the measured ones; docs/benchmarks.md, quality-metaqa): relationship MRR@10
0.866 at 1×, 0.880 at 4×, 0.883 at 8×, 0.883 at 16×."""
_CLEAR_MARGIN = 0.06
"""A relation is named clearly when its match (cosine plus lexical bonus) beats every
other type's by this much (0.078 and 0.046 read within 0.003 of it)."""
_HUB_EDGES = 64
# Softmax temperature over type cosines (cosines of short texts differ by a few 0.01).
_TEMPERATURE = 0.02
# Added to a type's cosine when all its words are in the query (in part when some are).
_LEXICAL = 0.3
# The longest spans whose own rest of the query is embedded (shorter ones, and a BM25
# anchor, match against the whole query's vector).
_MAX_RESTS = 1
_SETTLED = 0.1
"""A span's relation is settled (its rest of the query is not embedded) when its best
type's match with the stand-in (:func:`_stand_in`) beats every other type's by this much
(``exp(-0.1 / _TEMPERATURE)``: the runner-up's share is under 1%). Chosen on MetaQA
1-hop dev questions 1000-1599 (``scripts/bench_quality.py --part metaqa --offset 1000``),
default hybrid relationship search, MRR@10 / triple hits@10: rest always embedded
0.8776 / 0.9933; at 0.1, 0.8782 / 0.9950 with 71 of 600 questions in doubt (0.08:
0.8758, 65; 0.12: 0.8782, 76; 0.05: 0.8731, 52). Checked once on questions 0-999:
0.8862 / 0.9960 -> 0.8854 / 0.9970, 106 of 999 in doubt. With the question's vector alone
as the stand-in the top type held but the order of the others did not ("who wrote X"
whose gold is *directed by*: the rest puts it second, the question does not): 0.8691
at 0.1, 0.8750 at 0.2 (0.8816 and 0.8836 on 0-999)."""
# Weight of an anchor found by BM25 rather than by its exact name.
_BM25_ANCHOR = 0.5
_EDGE_PUNCTUATION = " \t\"'?.,!;:()"


@dataclass(frozen=True)
class Linked:
    """The query's links and the anchors they give, as the leg's prefetch found them
    before the query was embedded: the leg reuses them rather than linking the names
    again (:func:`~kgsearch.search.paths.link_spans` ran twice a search; thread CPU on
    MetaQA, 300 questions: 0.20 -> 0.08 ms a search)."""

    links: Links
    anchors: dict[str, tuple[float, int]]


def anchored_leg(
    store: SearchReads,
    plan: Plan,
    rows: Rows,
    vector: Vector | None,
    embed: Callable[[str], Vector] | None,
    embed_many: Callable[[Sequence[str]], list[Vector]] | None = None,
    traces: Traces | None = None,
    linked_early: Linked | None = None,
) -> Callable[[Legs], None]:
    """Start the ``relationships:anchored`` leg (see the module docstring) beside the
    first round's legs, and return what adds it to their ``legs`` once they are done.

    Linking the query's names, reading their edges and matching the relation types
    (which embeds the rest of the query) need nothing from the first round, so they run
    in a leg worker while the other legs run; only a query that names no object waits
    for the ``objects:bm25`` leg, whose best object anchors it instead.

    Args:
        store: The store searched.
        plan: The search plan.
        rows: The search's rows (relationships read here are kept for hydration).
        vector: The query vector of the relationship scope, if it was embedded.
        embed: The query embedder (type texts); None scores types by the votes only.
        embed_many: Embeds many type texts in one call, when the embedder can.
        traces: Where the leg's statements go when the search is explained.
        linked_early: The query's links and anchors, when the leg's prefetch found them
            (the names are not linked again).
    """
    started = time.perf_counter()
    trace = log_of(traces, LEG)
    request = plan.request
    if embed is not None:
        keep_saved(embed, lambda: saved_texts(store), remember_vectors)

    def ranked(
        anchors: dict[str, tuple[float, int]], links: Links
    ) -> tuple[list[tuple[str, float]], bool]:
        # the edge read happens whatever was linked, so the leg's store calls follow
        # from the query alone (tests/unit/test_search_store_calls.py)
        edges = store.typed_edges(
            rows.project, list(anchors), limit=_HUB_EDGES, as_of=request.filters.as_of, trace=trace
        )
        return _rank(plan, anchors, links, edges, vector, embed, embed_many)

    def linked() -> tuple[Links, tuple[list[tuple[str, float]], bool] | None]:
        if linked_early is None:
            links, anchors = _linked(store, rows, request.query, trace)
        else:
            links, anchors = linked_early.links, linked_early.anchors
        return links, (ranked(anchors, links) if anchors else None)

    early = beside(store, linked)

    def finish(legs: Legs) -> None:
        links, found = early()
        if found is None:  # no name linked: the best BM25 object anchors the leg
            best = legs.lists.get("objects:bm25", [])[:1]
            found = ranked({split_key(k)[1]: (_BM25_ANCHOR, -1) for k, _ in best}, links)
        best_first, clear = found
        keep = _allowed(rows, plan, [r for r, _ in best_first], trace)
        multiplier = CONFIDENT if clear else 1.0
        if trace is not None and clear:
            trace.note(f"one relation named clearly: fusion weight x{multiplier:g}")
        hits = [(key(Kind.RELATIONSHIP, r), s) for r, s in best_first if r in keep]
        legs.add(LEG, hits, started, multiplier)

    return finish


def _linked(
    store: SearchReads, rows: Rows, query: str, trace: Trace | None
) -> tuple[Links, dict[str, tuple[float, int]]]:
    """The query's linked spans and the anchors they give (see :func:`_anchors`)."""
    # the names come from the search's one look-up (names.py looked them up with the
    # name leg's before the query was embedded, when that leg runs unfiltered), with the
    # keys as stored, which tell an exact spelling from a case-folded one
    keys: dict[str, str] = {}

    def named(names: list[str]) -> dict[str, list[tuple[str, str, str]]]:
        found = rows.named(names, trace)
        keys.update((id, key) for entries in found.values() for _, id, key in entries)
        return found

    links = link_spans(store, rows.project, query, trace, named)
    return links, _anchors(links, keys)


def _anchors(links: Links, keys: Mapping[str, str]) -> dict[str, tuple[float, int]]:
    """Anchor id → (weight, its span's index): each object at its best span's weight.

    Names are linked ignoring case, so "alida valli" links the tag *alida valli* and the
    person *Alida Valli*; when some object's key is spelt exactly as the span is, the
    span anchors those only (objects no longer live, absent from ``keys``, are left
    out)."""
    anchors: dict[str, tuple[float, int]] = {}
    for index, linked in enumerate(links.spans):
        spelt = _spellings(" ".join(links.words[w] for w in linked.words))
        live = [id for id in linked.ids if id in keys]
        exact = [id for id in live if keys[id] in spelt]
        for id in exact or live:
            if id not in anchors or anchors[id][0] < linked.weight:
                anchors[id] = (linked.weight, index)
    return anchors


def _spellings(span: str) -> set[str]:
    """The span as written, without its edge punctuation, and without a final "'s" (the
    forms :func:`~kgsearch.search.paths.link_spans` looks up)."""
    bare = span.strip(_EDGE_PUNCTUATION)
    return {span, bare, bare.removesuffix("'s")}


def _rank(
    plan: Plan,
    anchors: dict[str, tuple[float, int]],
    links: Links,
    edges: Sequence[tuple[str, str, str, str]],
    vector: Vector | None,
    embed: Callable[[str], Vector] | None,
    embed_many: Callable[[Sequence[str]], list[Vector]] | None,
) -> tuple[list[tuple[str, float]], bool]:
    """The anchors' edges, best first: anchor weight times their relation's match; and
    whether one relation matched clearly best (see :func:`_clear`)."""
    request = plan.request
    wanted = request.filters.relationship_types
    # (span, type) → edges with their anchor's weight
    steps: dict[tuple[int, str], list[tuple[str, float]]] = defaultdict(list)
    for rid, source, target, type_ in edges:
        if wanted is not None and type_ not in wanted:
            continue
        for end in {source, target} & anchors.keys():
            weight, span = anchors[end]
            steps[(span, type_)].append((rid, weight))
    rests = {span: _rest(links, span, request.query) for span, _ in steps}
    score = _match(steps.keys(), rests, vector, embed, embed_many)
    ranked: dict[str, float] = {}
    for step in sorted(steps, key=lambda s: (-score[s], s)):
        for rid, weight in steps[step]:
            ranked[rid] = max(ranked.get(rid, 0.0), weight * score[step])
    best_first = sorted(ranked.items(), key=lambda x: -x[1])
    return best_first[: plan.candidates[Kind.RELATIONSHIP]], _clear(score)


def _clear(score: Mapping[tuple[int, str], float]) -> bool:
    """Whether the query names one relation clearly: the best (span, type) match beats
    that of every other type by :data:`_CLEAR_MARGIN` (its share over theirs is
    ``exp(margin / _TEMPERATURE)``), with the anchor linked by name (not by BM25)."""
    if not score:
        return False
    best = max(score, key=lambda step: (score[step], step))
    if best[0] < 0:
        return False
    runner_up = max((v for (_, t), v in score.items() if t != best[1]), default=0.0)
    return runner_up < math.exp(-_CLEAR_MARGIN / _TEMPERATURE)


def _rest(links: Links, span: int, query: str) -> str:
    """The query without the words of one linked span (the whole query for a BM25
    anchor, or when the span is all of it)."""
    rest = links.rest(links.spans[span : span + 1]) if span >= 0 else ""
    return rest if rest.strip() else query


def _match(
    steps: Iterable[tuple[int, str]],
    rests: Mapping[int, str],
    vector: Vector | None,
    embed: Callable[[str], Vector] | None,
    embed_many: Callable[[Sequence[str]], list[Vector]] | None,
) -> dict[tuple[int, str], float]:
    """How well each (span, relation type) matches the query without that span's words,
    in (0, 1]: the cosine between the two texts' embeddings plus a lexical bonus, as
    ``exp((match - best match) / _TEMPERATURE)``. Without an embedder or a query vector
    (the embedder failed), every match is lexical only.

    Every span first matches with the whole query's vector; a span with its own rest
    (the first) embeds that rest only when the match leaves its relation in doubt
    (:func:`_settled`), in a model call of its own."""
    steps = list(steps)
    types = sorted({t for _, t in steps})
    texts = {t: humanise(t) for t in types}
    vectors: dict[str, Vector] = {}
    queries: dict[int, Vector | None] = dict.fromkeys(rests)
    named: dict[int, set[str]] = {}
    if embed is not None and vector is not None and types:
        try:
            found = relation_vectors(embed, [texts[t] for t in types], embed_many)
            vectors = dict(zip(types, found, strict=True))
            named = _named(steps, rests, embed, embed_many)
            queries = dict.fromkeys(rests, vector)
            for span in named:  # a span with its own rest and two types or more
                queries[span] = _stand_in(vector, content_words(rests[span]), embed, embed_many)
        except Exception:  # the query was embedded, so this is rare: match by words only
            vectors, queries, named = {}, dict.fromkeys(rests), {}
    rest_words = {span: content_words(rest) for span, rest in rests.items()}
    type_words = {t: content_words(text) for t, text in texts.items()}
    lexical = {
        (span, t): _LEXICAL
        * (1.0 if t in named.get(span, ()) else overlap(rest_words[span], type_words[t]))
        for span, t in steps
    }
    raw = _cosines(steps, queries, vectors, lexical)
    doubt = [s for s in rests if 0 <= s < _MAX_RESTS and vectors and not _settled(raw, s)]
    if doubt and embed is not None:
        try:
            queries.update(
                zip(
                    doubt,
                    relation_vectors(embed, [rests[s] for s in doubt], embed_many),
                    strict=True,
                )
            )
            raw = _cosines(steps, queries, vectors, lexical)
        except Exception:  # the rest failed to embed: the whole query's vector matches
            pass
    top = max(raw.values(), default=0.0)
    return {step: math.exp((value - top) / _TEMPERATURE) for step, value in raw.items()}


def _stand_in(
    vector: Vector,
    words: Sequence[str],
    embed: Callable[[str], Vector],
    embed_many: Callable[[Sequence[str]], list[Vector]] | None,
) -> Vector:
    """What a span's rest of the query matches with until it is embedded: the whole
    query's unit vector plus the mean direction of the rest's words (already embedded
    for :func:`_named`, once per process). The query alone carries the linked name,
    which pulls every type alike; the words alone ("writer") miss the phrase; together
    they rank the types as the rest does often enough to decide (see :data:`_SETTLED`)."""
    unit = vector / (float(np.linalg.norm(vector)) or 1.0)
    if not words:
        return unit
    mean = np.sum(relation_vectors(embed, words, embed_many), axis=0)
    return np.asarray(unit + mean / (float(np.linalg.norm(mean)) or 1.0), dtype=np.float32)


def _cosines(
    steps: Sequence[tuple[int, str]],
    queries: Mapping[int, Vector | None],
    vectors: Mapping[str, Vector],
    lexical: Mapping[tuple[int, str], float],
) -> dict[tuple[int, str], float]:
    """Each step's match: the cosine between its span's query vector and its type's
    (0 without either) plus its lexical bonus."""
    norms = {s: float(np.linalg.norm(q)) or 1.0 for s, q in queries.items() if q is not None}
    raw: dict[tuple[int, str], float] = {}
    for span, type_ in steps:
        query = queries[span]
        cosine = 0.0
        if query is not None and type_ in vectors:
            cosine = float(np.dot(query, vectors[type_])) / norms[span]
        raw[(span, type_)] = cosine + lexical[(span, type_)]
    return raw


def _settled(raw: Mapping[tuple[int, str], float], span: int) -> bool:
    """Whether a span's relation is settled without its own rest of the query: one type
    met there, or the best type's match (with the whole query's vector) beating every
    other type's by :data:`_SETTLED`."""
    values = sorted((v for (s, _), v in raw.items() if s == span), reverse=True)
    return len(values) < 2 or values[0] - values[1] >= _SETTLED


def _named(
    steps: Sequence[tuple[int, str]],
    rests: Mapping[int, str],
    embed: Callable[[str], Vector],
    embed_many: Callable[[Sequence[str]], list[Vector]] | None,
) -> dict[int, set[str]]:
    """Per span with its own rest of the query, the relation types met there that a word
    of the rest names by meaning ("wrote" names *written by*, see
    :func:`~kgsearch.search.path_scores.named_relations`): they match as if the
    question spelt them out. The words are embedded once per process, in one call."""
    found: dict[int, set[str]] = {}
    for span, rest in rests.items():
        words = content_words(rest) if 0 <= span < _MAX_RESTS else []
        types = sorted({t for s, t in steps if s == span})
        if not words or len(types) < 2:
            continue
        relation_vectors(embed, words, embed_many)  # embeds the words not cached yet
        found[span] = named_relations(words, types, lambda text: relation_vectors(embed, [text])[0])
    return found


def _allowed(rows: Rows, plan: Plan, ids: Sequence[str], trace: Trace | None) -> set[str]:
    """Relationship ids passing the property filter and, when asked, embedded only
    (types and validity are applied by the edge read itself)."""
    f = plan.request.filters
    if not f.properties and not f.embedded_only:
        return set(ids)
    found: dict[str, Relationship] = rows.relationships(ids, trace)
    return {
        r.id
        for r in found.values()
        if all(r.properties.get(k) == v for k, v in (f.properties or {}).items())
        and (not f.embedded_only or r.embedding.status is EmbeddingStatus.EMBEDDED)
    }


def _prefetch(given: LegInput) -> Prefetch | None:
    """The words of the rest of the query (without the first span's name), which
    :func:`_named` embeds when the first span anchors an object: found from the names
    alone (the search's one name look-up, made here, before the query is embedded), so
    they are embedded with the question in one model call. The links are kept for the
    leg (``LegInput.prefetched``), which does not link the names again.

    The rest itself is not prefetched: the match embeds it only when the relation is in
    doubt (:func:`_settled`), which is unknown before the edge read."""
    plan, embed = given.plan, given.embed
    if embed is None or given.embed_many is None or Kind.RELATIONSHIP not in plan.vector_kinds:
        return None
    keep_saved(embed, lambda: saved_texts(given.store), remember_vectors)
    look_up_names(plan, given.rows, given.traces)
    links, anchors = _linked(given.store, given.rows, plan.request.query, log_of(given.traces, LEG))
    given.prefetched[LEG] = Linked(links, anchors)
    if not any(0 <= span < _MAX_RESTS for _, span in anchors.values()):
        return None
    texts = unembedded(embed, content_words(_rest(links, 0, plan.request.query)))
    return Prefetch(texts, lambda vectors: remember_vectors(embed, texts, vectors))


def _start(given: LegInput) -> Callable[[], None]:
    finish = anchored_leg(
        given.store,
        given.plan,
        given.rows,
        given.vectors.get(Kind.RELATIONSHIP),
        given.embed,
        given.embed_many,
        given.traces,
        early if isinstance(early := given.prefetched.get(LEG), Linked) else None,
    )
    return lambda: finish(given.legs)


LEGS.register(
    LEG,
    Leg(
        LEG,
        "beside",
        (Kind.RELATIONSHIP,),
        selected=lambda plan: plan.anchored,
        run=_start,
        weights={LEG: WEIGHT},
        needs=frozenset({"names", "embedder", "graph", "index"}),
        scales=frozenset({LEG}),
        prefetch=_prefetch,
    ),
)
