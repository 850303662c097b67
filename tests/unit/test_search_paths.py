"""Structured multi-hop (``graph="paths"``, recipe ``multi_hop``) on a tiny movie graph,
on every store backend: linking without brackets, the right end objects of a 2-hop
question, capped hub expansion, and the store's per-object edge limit."""

from __future__ import annotations

import pytest

from kgsearch.engine import Engine
from kgsearch.model import ObjectIn, RelationshipIn
from kgsearch.search import paths
from kgsearch.search.paths import humanise, walk_paths

HUB_FILMS = 30


def movie_graph(engine: Engine) -> dict[str, str]:
    """Ada starred in two films (one directed by Bob, one by Cy), both dramas; Drama is a
    hub of ``HUB_FILMS`` more films. Returns key → id."""
    objects = [
        ObjectIn(type="Person", key="Ada Lovelace"),
        ObjectIn(type="Person", key="Bob"),
        ObjectIn(type="Person", key="Cy"),
        ObjectIn(type="Movie", key="Engines"),
        ObjectIn(type="Movie", key="Looms"),
        ObjectIn(type="Genre", key="Drama"),
        *(ObjectIn(type="Movie", key=f"Film {i}") for i in range(HUB_FILMS)),
    ]
    ids = {o.key: o.id for o in engine.add_objects(objects)}

    def rel(type_: str, source: str, target: str) -> RelationshipIn:
        return RelationshipIn(type=type_, source=ids[source], target=ids[target])

    engine.add_relationships(
        [
            rel("starred", "Engines", "Ada Lovelace"),
            rel("starred", "Looms", "Ada Lovelace"),
            rel("directed_by", "Engines", "Bob"),
            rel("directed_by", "Looms", "Cy"),
            rel("has_genre", "Engines", "Drama"),
            rel("has_genre", "Looms", "Drama"),
            *(rel("has_genre", f"Film {i}", "Drama") for i in range(HUB_FILMS)),
        ]
    )
    engine.embed_pending()
    return ids


def test_humanise() -> None:
    assert humanise("directed_by") == "directed by"
    assert humanise("WORKS_FOR") == "works for"
    assert humanise("hasGenre") == "has genre"


def test_two_hop_question_ranks_the_path_ends(engine: Engine) -> None:
    ids = movie_graph(engine)
    response = engine.search("who directed the films starred by [Ada Lovelace]", recipe="multi_hop")
    objects = [r.id for r in response.results if r.type == "graph"]
    assert set(objects[:2]) == {ids["Bob"], ids["Cy"]}
    assert ids["Ada Lovelace"] not in objects[:2]
    rels = [r for r in response.results if r.type == "relationship"]
    assert {r.target_id for r in rels[:2]} == {ids["Bob"], ids["Cy"]}


def test_linking_ignores_brackets(engine: Engine) -> None:
    ids = movie_graph(engine)
    seeds, rest = paths.link_entities(
        engine.store, "default", "who directed the films starred by Ada Lovelace?"
    )
    assert set(seeds) == {ids["Ada Lovelace"]}
    assert "Lovelace" not in rest


def test_hub_expansion_is_capped(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = movie_graph(engine)
    monkeypatch.setattr(paths, "_HUB_EDGES", 10)
    edges = engine.store.typed_edges("default", [ids["Drama"]], limit=10)
    assert len(edges) == 10  # 32 edges into the hub, none out of it
    embedder = engine.embedder
    assert embedder is not None
    found = walk_paths(
        engine.store,
        "default",
        "which films has genre has genre of films starred by Ada Lovelace",
        embedder.embed_query,
        depth=3,
    )
    hub_films = {ids[f"Film {i}"] for i in range(HUB_FILMS)}
    films = [i for i, _ in found.objects if i in hub_films]
    assert 0 < len(films) <= 10


def test_nothing_linked_falls_back_to_the_other_legs(engine: Engine) -> None:
    movie_graph(engine)
    response = engine.search("zzz unknown words", recipe="multi_hop", include_debug=True)
    assert response.metadata is not None


def test_a_name_shaped_span_links_before_a_longer_lower_case_one(engine: Engine) -> None:
    ids = {
        o.key: o.id
        for o in engine.add_objects(
            [
                ObjectIn(type="Movie", key="Movie Crazy"),
                ObjectIn(type="Movie", key="Crazy Heart"),
                ObjectIn(type="Tag", key="the movie crazy heart"),
            ]
        )
    }
    links = paths.link_spans(engine.store, "default", "who wrote the movie Crazy Heart")
    assert [s.ids for s in links.spans] == [[ids["Crazy Heart"]]]
    assert links.spans[0].weight == 1.0


def test_the_path_ends_on_the_relation_the_answer_phrase_names(engine: Engine) -> None:
    ids = movie_graph(engine)
    embedder = engine.embedder
    found = walk_paths(
        engine.store,
        "default",
        "what genres do the films starred by Ada Lovelace have",
        embedder.embed_query,
        depth=3,
    )
    assert found.objects[0][0] == ids["Drama"]
    assert found.paths[0][0] == "starred (reverse) → has_genre"


@pytest.mark.parametrize(
    ("span", "expected"),
    [
        ("Top Hat", ["Top Hat"]),
        ("Top Hat?", ["Top Hat?", "Top Hat"]),
        ('"Top Hat"', ['"Top Hat"', "Top Hat"]),
        ("(Ada's", ["(Ada's", "Ada's", "Ada"]),
        ("Ada's", ["Ada's", "Ada"]),
        ("'Ada'", ["'Ada'", "Ada'"]),
        ("?!", ["?!"]),
        ("'s", ["'s", "s"]),
        ("x's?", ["x's?", "x's", "x"]),
    ],
)
def test_a_span_is_looked_up_as_written_bare_and_without_its_possessive(
    span: str, expected: list[str]
) -> None:
    assert paths._variants(span) == expected
