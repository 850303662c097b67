"""Relation path scores (``search/path_scores.py``): the answer phrase, word matching of
relation names, and precision + recall + answer type on hand-made vectors."""

from __future__ import annotations

import numpy as np
import pytest

from kgsearch.search.path_scores import (
    PathScorer,
    answer_phrase,
    content_words,
    named_relations,
    overlap,
)


@pytest.mark.parametrize(
    ("question", "phrase"),
    [
        ("who directed the films starred by", "who"),
        ("when did the movies written by release", "when"),
        ("what are the genres of the films written by", "genres"),
        ("what were the release years of the movies", "release years"),
        ("which films share the same director of", "films share"),
        ("the films acted by were in which languages", "languages"),
        ("name the films of", ""),
        ("what does [Tom] star in", "what"),
    ],
)
def test_answer_phrase(question: str, phrase: str) -> None:
    words = [None if w.startswith("[") else w for w in question.split()]
    assert answer_phrase(words) == phrase


@pytest.mark.parametrize(
    ("words", "relation", "share"),
    [
        ("who are the directors of", "directed by", 1.0),
        ("the screenwriter of", "written by", 1.0),
        ("the co-star of", "starred actors", 0.5),
        ("which actors starred in", "starred actors", 1.0),
        ("the release years of", "has genre", 0.0),
        ("a factory worker", "starred actors", 0.0),
    ],
)
def test_overlap_matches_stems_and_compound_heads(words: str, relation: str, share: float) -> None:
    assert overlap(content_words(words), content_words(relation)) == share


AXES = ["directed", "written", "starred", "person", "movie"]


def vec(*words: str) -> np.ndarray:
    """A unit vector over :data:`AXES` with weight on the given words."""
    v = np.array([1.0 if a in words else 0.0 for a in AXES], dtype=np.float32) + 0.01
    return v / np.linalg.norm(v)


TEXTS = {
    "directed by": vec("directed"),
    "written by": vec("written"),
    "starred": vec("starred"),
    "person": vec("person"),
    "movie": vec("movie"),
}


def text_vector(text: str) -> np.ndarray:
    """The hand-made vector of a text; any other word points nowhere in particular."""
    return TEXTS.get(text, vec())


def scorer(
    question: str, vector: np.ndarray, answer: np.ndarray | None, phrase: str = ""
) -> PathScorer:
    words = content_words(question)
    found = PathScorer(vector, words, answer, content_words(phrase), text_vector)
    found.add_relations(["directed_by", "written_by", "starred"])
    found.add_object_types(["Person", "Movie"])
    return found


def test_recall_prefers_the_path_with_every_asked_relation() -> None:
    s = scorer(
        "who are the directors of the films written by", vec("directed"), vec("person"), "who"
    )
    both = s.score((("written_by", False), ("directed_by", True)), "Person")
    again = s.score((("written_by", False), ("written_by", True)), "Person")
    other = s.score((("written_by", False), ("starred", True)), "Person")
    assert both > again > other


def test_answer_type_picks_the_path_that_ends_at_people() -> None:
    s = scorer("who co-wrote films with", vec("written"), vec("person"), "who")
    writers = s.score((("written_by", False), ("written_by", True)), "Person")
    films = s.score((("written_by", False),), "Movie")
    assert writers > films


def test_without_an_answer_phrase_the_shorter_path_wins_a_tie() -> None:
    s = scorer("films written by", vec("written"), None)
    assert s.type_match("Person") == 1.0
    assert s.score((("written_by", False),), "Movie") > s.score(
        (("written_by", False), ("written_by", True), ("written_by", False)), "Movie"
    )


def test_an_answer_phrase_naming_a_relation_wants_the_path_to_end_on_it() -> None:
    s = scorer("which directors worked with", vec("directed"), vec("movie"), "directors")
    assert s.answer_match((("directed_by", False), ("directed_by", True)), "Person") == 1.0
    assert s.answer_match((("directed_by", False),), "Movie") == 0.0


def test_a_word_close_to_one_relation_names_it() -> None:
    TEXTS["wrote"] = vec("written")
    try:
        s = scorer("who wrote the films starred by", vec("starred"), vec("person"), "who")
        assert s.relation_matches()["written_by"] == 1.0
        assert s.relation_matches()["directed_by"] < 0.5
    finally:
        del TEXTS["wrote"]


def test_named_relations_needs_a_close_and_clear_winner() -> None:
    TEXTS["wrote"] = vec("written")
    TEXTS["credits"] = vec("written", "directed")  # as close to both: names neither
    try:
        types = ["directed_by", "written_by", "starred"]
        assert named_relations(["wrote", "film"], types, text_vector) == {"written_by"}
        assert named_relations(["credits"], types, text_vector) == set()
        assert named_relations(["wrote"], [], text_vector) == set()
    finally:
        del TEXTS["wrote"], TEXTS["credits"]
