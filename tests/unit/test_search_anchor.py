"""The entity-anchored relationship leg (search/anchor.py) on every store backend: the
facts of the object a query names, the relation that matches the rest of the query first,
filters applied inside the leg, the leg in found_by and explain, and fusion weights; the
rest of the query's words embedded with the question, in one model call, and the rest
itself only when the relation is in doubt; a new process embeds only the question for
texts an earlier one saved beside the store."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from kgsearch import connect
from kgsearch.embed.base import Vector
from kgsearch.engine import Engine
from kgsearch.model import ObjectIn, RelationshipIn
from kgsearch.search import anchor, paths, pipeline, saved_texts
from kgsearch.search.parts import default_weights
from kgsearch.testing import FakeEmbedder

LEG = "relationships:anchored"
FILMS = 12


def movie_graph(engine: Engine) -> dict[str, str]:
    """Engines was directed by Bob, written by Cy and starred Ada; ``FILMS`` more films
    were directed by Bob too (so the vector and BM25 legs see many "directed by Bob"
    facts). Returns key → id."""
    objects = [
        ObjectIn(type="Person", key="Ada Lovelace"),
        ObjectIn(type="Person", key="Bob"),
        ObjectIn(type="Person", key="Cy"),
        ObjectIn(type="Movie", key="Engines"),
        *(ObjectIn(type="Movie", key=f"Film {i}") for i in range(FILMS)),
    ]
    ids = {o.key: o.id for o in engine.add_objects(objects)}

    def rel(type_: str, source: str, target: str) -> RelationshipIn:
        return RelationshipIn(type=type_, source=ids[source], target=ids[target])

    engine.add_relationships(
        [
            rel("starred_actors", "Engines", "Ada Lovelace"),
            rel("written_by", "Engines", "Cy"),
            rel("directed_by", "Engines", "Bob"),
            *(rel("directed_by", f"Film {i}", "Bob") for i in range(FILMS)),
        ]
    )
    engine.embed_pending()
    return ids


def anchored(engine: Engine, query: str, **options: object) -> list[tuple[str, str, str]]:
    """(source key, type, target key) of the anchored leg's hits, best first."""
    response = engine.search(query, include_debug=True, **options)  # type: ignore[arg-type]
    assert response.debug is not None
    keys = [h["key"] for h in response.debug["fusion_details"]["legs"].get(LEG, [])]
    out = []
    for value in keys:
        rel = engine.get_relationship(value.split(":", 1)[1])
        out.append(
            (engine.get_object(rel.source_id).key, rel.type, engine.get_object(rel.target_id).key)
        )
    return out


def test_the_named_objects_facts_come_first_the_matching_relation_on_top(
    engine: Engine,
) -> None:
    movie_graph(engine)
    hits = anchored(engine, "who directed Engines?")
    assert hits[0] == ("Engines", "directed_by", "Bob")
    assert {h[1] for h in hits} == {"directed_by", "written_by", "starred_actors"}
    assert all("Engines" in (h[0], h[2]) for h in hits)
    assert anchored(engine, "who wrote the screenplay, the writer of Engines")[0] == (
        "Engines",
        "written_by",
        "Cy",
    )


def test_the_leg_is_fused_and_shows_in_found_by(engine: Engine) -> None:
    ids = movie_graph(engine)
    response = engine.search("who directed Engines", result_types="graph")
    top = next(r for r in response.results if r.type == "relationship")
    assert (top.source_id, top.target_id) == (ids["Engines"], ids["Bob"])
    assert LEG in {hit.leg for hit in top.found_by}
    assert LEG in response.metadata["legs"]


def test_filters_apply_inside_the_leg(engine: Engine) -> None:
    movie_graph(engine)
    hits = anchored(engine, "who directed Engines", filters={"relationship_types": ["written_by"]})
    assert hits == [("Engines", "written_by", "Cy")]
    hits = anchored(engine, "who directed Engines", filters={"properties": {"role": "lead"}})
    assert hits == []


def test_without_a_named_object_the_leg_finds_nothing_or_the_best_bm25_object(
    engine: Engine,
) -> None:
    movie_graph(engine)
    assert anchored(engine, "zzz qqq", objects=None) == []
    # no exact name, but "Engines" is the object BM25 ranks first
    hits = anchored(engine, "the director of engines movie please")
    assert hits and hits[0][0] == "Engines"


def test_the_leg_weighs_as_configured_and_can_be_switched_off(engine: Engine) -> None:
    movie_graph(engine)
    assert default_weights()[LEG] > 1.0
    response = engine.search(
        "who directed Engines", include_debug=True, weights={LEG: 0.0}, result_types="graph"
    )
    assert response.debug is not None
    fused = response.debug["fusion_details"]
    assert LEG not in fused["legs"]  # weighed 0, it is not run at all
    weighed = engine.search("who directed Engines", include_debug=True).debug
    assert weighed is not None and LEG in weighed["fusion_details"]["legs"]
    only_bm25 = engine.search(
        "who directed Engines", relationships={"methods": ["vector"]}, include_debug=True
    )
    assert only_bm25.debug is not None
    assert LEG not in only_bm25.debug["fusion_details"]["legs"]  # needs the lexical methods


def test_explain_lists_the_legs_statements(engine: Engine) -> None:
    movie_graph(engine)
    statements = engine.explain("who directed Engines").statements
    sql = " ".join(s.sql for s in statements[LEG])
    assert "relationships" in sql and "objects" not in sql  # the edge read only
    # the spans it links were looked up with the name leg's names, in its one statement
    (lookup,) = statements["objects:name"]
    params = json.dumps(lookup.params).lower()  # as asked, or as the store folds them
    assert "objects" in lookup.sql and '"engines"' in params and '"who directed engines"' in params


def test_a_hub_costs_at_most_the_edge_limit(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    movie_graph(engine)
    monkeypatch.setattr(anchor, "_HUB_EDGES", 5)
    hits = anchored(engine, "what did Bob direct")
    assert 0 < len(hits) <= 5
    assert all(h[2] == "Bob" for h in hits)


def test_a_word_naming_a_relation_by_meaning_puts_it_first() -> None:
    """The word "wrote" shares no stem with "written by", and the rest of the query as a whole
    embeds closer to "directed by"; the word's own embedding names *written by*."""
    axes = {"directed by": 0, "written by": 1, "starred actors": 2, "wrote": 1}

    def embed(text: str) -> np.ndarray:
        v = np.full(4, 0.01, dtype=np.float32)
        if text in axes:
            v[axes[text]] = 1.0
        elif " " in text:  # the rest of the query: closest to "directed by"
            v[0], v[1] = 1.0, 0.8
        else:  # any other word points nowhere in particular
            v[3] = 1.0
        return v

    steps = [(0, "directed_by"), (0, "written_by"), (0, "starred_actors")]
    rests = {0: "who wrote the movie"}
    scores = anchor._match(steps, rests, embed("who wrote the movie"), embed, None)
    assert max(scores, key=lambda s: scores[s]) == (0, "written_by")
    # a word that names nothing leaves the ranking to the whole rest's meaning
    plain = anchor._match(steps, {0: "who made the movie"}, embed("x y"), embed, None)
    assert max(plain, key=lambda s: plain[s]) == (0, "directed_by")


def test_a_name_spelt_exactly_anchors_that_object_only(engine: Engine) -> None:
    """Names link ignoring case: "alida valli" is the tag, "Alida Valli" the actor; a
    spelling that matches neither exactly anchors both."""
    objects = [
        ObjectIn(type="Person", key="Alida Valli"),
        ObjectIn(type="Tag", key="alida valli"),
        ObjectIn(type="Movie", key="Senso"),
        ObjectIn(type="Movie", key="The Third Man"),
    ]
    ids = {o.key: o.id for o in engine.add_objects(objects)}
    engine.add_relationships(
        [
            RelationshipIn(type="starred_actors", source=ids["Senso"], target=ids["Alida Valli"]),
            RelationshipIn(type="has_tags", source=ids["The Third Man"], target=ids["alida valli"]),
        ]
    )
    engine.embed_pending()
    tagged = ("The Third Man", "has_tags", "alida valli")
    starred = ("Senso", "starred_actors", "Alida Valli")
    assert anchored(engine, "which films can be described by alida valli") == [tagged]
    assert anchored(engine, "which films did Alida Valli act in?") == [starred]
    assert set(anchored(engine, "which films did ALIDA VALLI act in")) == {tagged, starred}


def test_a_clearly_named_relation_weighs_the_leg_more_for_that_query(engine: Engine) -> None:
    movie_graph(engine)
    notes = engine.explain("who directed Engines?").notes
    assert f"one relation named clearly: fusion weight x{anchor.CONFIDENT:g}" in notes[LEG]
    # an object found by BM25 rather than by its name never counts as clear ("engines"
    # would link Engines by name, ignoring case: "engine" does not)
    notes = engine.explain("the director of the engine movie please").notes
    assert LEG not in notes


@pytest.mark.parametrize(
    ("scores", "clear"),
    [
        ({(0, "directed_by"): 1.0, (0, "written_by"): 0.01}, True),
        ({(0, "directed_by"): 1.0, (0, "written_by"): 0.2}, False),
        # the same relation on a second span is no rival
        ({(0, "directed_by"): 1.0, (1, "directed_by"): 0.9, (0, "has_genre"): 0.01}, True),
        ({(-1, "directed_by"): 1.0, (-1, "written_by"): 0.01}, False),  # a BM25 anchor
        ({(0, "directed_by"): 1.0}, True),
        ({}, False),
    ],
)
def test_clear_wants_one_relation_well_ahead_of_every_other(
    scores: dict[tuple[int, str], float], clear: bool
) -> None:
    assert anchor._clear(scores) is clear


# one model call per first-time question: the words of the rest of the query (without
# the name it links) are embedded with the question (search/parts.py Prefetch); the rest
# itself only when the relation is in doubt, mid-search


class Batching(FakeEmbedder):
    """A fake with a batch call for queries (as the bundled model has), logging each
    model call's texts."""

    def __init__(self) -> None:
        super().__init__(32)
        self.log: list[list[str]] = []

    def embed_query(self, text: str) -> Vector:
        self.log.append([text])
        return super().embed_query(text)

    def embed_queries(self, texts: Sequence[str]) -> list[Vector]:
        self.log.append(list(texts))
        return [super(Batching, self).embed_query(t) for t in texts]


def test_a_first_time_question_naming_its_relation_embeds_no_rest() -> None:
    """ "directed" names *directed by* outright: the rest of the query ("which person
    directed") could not change the leg's first type, so only the question and the
    rest's words (for _named) are embedded, in one call."""
    embedder = Batching()
    with Engine(connect(":memory:"), embedder=embedder) as engine:
        movie_graph(engine)
        engine.search("who wrote Engines")  # the relation types are embedded once
        embedder.log.clear()
        hits = anchored(engine, "which person directed Engines")
    assert embedder.log == [["which person directed Engines", "person", "directed"]]
    assert hits[0] == ("Engines", "directed_by", "Bob")


def test_a_first_time_question_in_doubt_embeds_its_rest_mid_search() -> None:
    """No word of "who is behind" names a type, and the question's vector leaves the
    types close: the rest is embedded, in a call of its own once the edges are read."""
    embedder = Batching()
    with Engine(connect(":memory:"), embedder=embedder) as engine:
        movie_graph(engine)
        engine.search("who wrote Engines")
        embedder.log.clear()
        anchored(engine, "who is behind Engines")
    assert embedder.log == [["who is behind Engines", "behind"], ["who is behind"]]


AXES = {"directed by": 0, "written by": 1, "starred actors": 2}


def axes_embed(log: list[str]) -> Callable[[str], np.ndarray]:
    """Type texts on their own axes; "who made the movie" near *directed by*; any other
    text (the query, a word) on a fourth axis, as close to every type: it decides
    nothing. Logs each text embedded."""

    def embed(text: str) -> np.ndarray:
        log.append(text)
        v = np.full(4, 0.01, dtype=np.float32)
        if text in AXES:
            v[AXES[text]] = 1.0
        elif text == "who made the movie":
            v[0], v[1] = 1.0, 0.5
        else:
            v[3] = 1.0
        return v

    return embed


def test_the_rest_is_embedded_only_when_the_relation_is_in_doubt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(paths, "_VECTORS", {})
    steps = [(0, "directed_by"), (0, "written_by"), (0, "starred_actors")]
    log: list[str] = []
    embed = axes_embed(log)
    query = np.eye(4, dtype=np.float32)[3]
    # "directed" spells *directed by* out: settled by the words, the rest not embedded
    scores = anchor._match(steps, {0: "who directed the movie"}, query, embed, None)
    assert max(scores, key=lambda s: scores[s]) == (0, "directed_by")
    assert "who directed the movie" not in log
    # nothing in the words or the query tells the types apart: the rest decides
    scores = anchor._match(steps, {0: "who made the movie"}, query, embed, None)
    assert "who made the movie" in log
    assert max(scores, key=lambda s: scores[s]) == (0, "directed_by")


def test_the_legs_ranking_is_the_same_as_with_the_rest_embedded_by_the_leg(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    questions = ["which person directed Engines", "the writer of Engines is who"]
    found, calls = [], []
    for prefetch in (True, False):
        monkeypatch.setattr(paths, "_VECTORS", {})  # equal fakes share relation vectors
        if not prefetch:  # the leg embeds its rest itself, mid-search, as it did
            monkeypatch.setattr(pipeline, "prefetches", lambda given: [])
        embedder = Batching()
        with Engine(connect(":memory:"), embedder=embedder) as engine:
            movie_graph(engine)
            found.append([anchored(engine, q) for q in questions])
        calls.append(len(embedder.log))
    assert found[0] == found[1]
    assert found[0][0][0] == ("Engines", "directed_by", "Bob")
    assert calls[0] < calls[1]


def test_the_rests_vectors_are_kept_for_the_leg() -> None:
    embedder = Batching()
    with Engine(connect(":memory:"), embedder=embedder) as engine:
        movie_graph(engine)
        engine.search("which person directed Engines")
        embedder.log.clear()
        engine.search("which person directed Film 3")  # the same rest: nothing new to embed
    assert embedder.log == [["which person directed Film 3"]]


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget what this process embedded and which files it read, as a new one would."""
    monkeypatch.setattr(paths, "_VECTORS", {})
    monkeypatch.setattr(saved_texts, "_SINKS", {})
    monkeypatch.setattr(saved_texts, "_LOADED", {})


def test_a_new_process_embeds_only_the_question_for_texts_saved_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "kg.db")
    _new_process(monkeypatch)
    first = Batching()
    with Engine(connect(path), embedder=first) as engine:
        movie_graph(engine)
        engine.search("who wrote Engines")
        first.log.clear()
        hits = anchored(engine, "who is behind Engines")
        saved = saved_texts.saved_texts(engine.store)
        assert saved is not None and saved.save()
    # the rest's word, then the rest itself (in doubt): both model calls of a first meeting
    assert first.log == [["who is behind Engines", "behind"], ["who is behind"]]
    _new_process(monkeypatch)
    second = Batching()
    with Engine(connect(path), embedder=second) as engine:
        assert anchored(engine, "who is behind Engines") == hits
    assert second.log == [["who is behind Engines"]]
