"""The offline extractor's entity-name screen (pure, no spaCy model)."""

from __future__ import annotations

import pytest

from kgsearch.extract.spacy_names import junk_reason, name_key


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("NULL", "code"),
        ("False", "code"),
        ("None", "code"),
        ("Integer", "code"),
        ("os.path", "code"),
        ("get_item", "code"),
        ("len()", "code"),
        ("parseInt", "code"),
        ("XMLHttpRequest", "code"),
        ("1999", "number"),
        ("3.5 %", "number"),
        ("X", "short"),
        ("She", "stop"),
        ("Monday", "stop"),
        ("The", "stop"),
        ("Church of", "fragment"),
        ("Bishop", "title"),
        ("Queen", "title"),
        ("sandy beach", "lowercase"),
        ("A" * 81, "long"),
        (" ".join(["Word"] * 11), "long"),
        ("", "short"),
    ],
)
def test_junk_names_are_refused_with_their_reason(name: str, reason: str) -> None:
    assert junk_reason(name) == reason


@pytest.mark.parametrize(
    "name",
    [
        "Marie Curie",
        "NASA",
        "U.S.",
        "U.S",
        "US",
        "北京鸭篮球俱乐部",
        "Amazon.com",
        "McDonald",
        "PlayStation",
        "DiCaprio",
        "iPhone",
        "Apple Inc.",
        "Formula One",
        "3M",
        "University of Paris",
    ],
)
def test_real_names_are_kept(name: str) -> None:
    assert junk_reason(name) is None


def test_name_key_casefolds_and_collapses_spaces() -> None:
    assert name_key("  Marie   CURIE ") == "marie curie"
