"""Merging one description per chunk: repeats and near-duplicates collapse; past the
budget, the most representative sentences are kept, in their order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kgsearch.text.descriptions import merge_descriptions, sentences


def test_repeats_and_near_duplicates_collapse_keeping_the_longer() -> None:
    merged = merge_descriptions(
        [
            "Scrooge is a miser.",
            "scrooge   is a MISER.",
            "Scrooge is a cold-hearted miser who runs a counting house.",
            "Scrooge is a cold hearted miser who runs a counting-house in London.",
            "Marley was his partner.",
            "",
        ]
    )
    assert merged.split("\n") == [
        "Scrooge is a miser.",
        "Scrooge is a cold hearted miser who runs a counting-house in London.",
        "Marley was his partner.",
    ]


def test_past_the_budget_the_central_sentences_are_kept_in_order() -> None:
    texts = [
        "Scrooge is a miser in London.",
        "Scrooge keeps his counting house cold.",
        "The weather was foggy.",
        "Scrooge is a miser who keeps Cratchit's coal low in the counting house.",
        "A goose hung in the window of the poulterer.",
    ]
    merged = merge_descriptions(texts, budget=120)
    assert len(merged) <= 120
    kept = merged.split("\n")
    assert len(kept) >= 2 and all("Scrooge" in k for k in kept)  # the off-topic ones go
    assert kept == [t for t in texts if t in kept]  # original order


def test_one_sentence_longer_than_the_budget_is_cut_at_a_character() -> None:
    merged = merge_descriptions(["é" * 500], budget=50)
    assert len(merged) == 50 and merged.endswith("…")


def test_sentences_split_after_stops_before_capitals() -> None:
    assert sentences("He left. Then 3 came! Why? e.g. not this") == [
        "He left.",
        "Then 3 came!",
        "Why? e.g. not this",
    ]


@given(
    st.lists(st.text(min_size=0, max_size=80), max_size=12),
    st.integers(min_value=1, max_value=300),
)
def test_any_input_fits_the_budget_and_is_deterministic(texts: list[str], budget: int) -> None:
    merged = merge_descriptions(texts, budget=budget)
    assert len(merged) <= budget
    assert merged == merge_descriptions(list(texts), budget=budget)


def test_one_description_is_kept_as_it_is_with_whitespace_collapsed() -> None:
    assert merge_descriptions(["  Ada   wrote\nnotes. "]) == "Ada wrote notes."
    assert merge_descriptions(["", " "]) == ""
