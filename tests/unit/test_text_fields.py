"""Field labels, value cuts and the truncation classes of object properties."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

import pytest

from kgsearch.text.fields import FieldKind, classify_field, cut, field_label, normalize_tag


@pytest.mark.parametrize(
    ("name", "value", "kind"),
    [
        ("active", True, FieldKind.OPTION),
        ("rating", 4.5, FieldKind.OPTION),
        ("status", "in progress", FieldKind.OPTION),
        ("status", "x" * 30, FieldKind.OPTION),
        ("status", "x" * 31, FieldKind.TEXT),
        ("motto", "one two three four", FieldKind.TEXT),
        ("due", date(2026, 2, 20), FieldKind.DATE),
        ("seen", datetime(2026, 2, 20, 9, 30), FieldKind.DATE),
        ("seen", "2026-02-20T09:30:00Z", FieldKind.DATE),
        ("seen", "2026-02-20 09:30:00.5+01:00", FieldKind.DATE),
        ("release_year", "1939", FieldKind.DATE),
        ("releaseYear", 1939, FieldKind.DATE),
        ("startDate", "soon", FieldKind.DATE),
        ("dates", ["2026-01-01", date(2026, 2, 1)], FieldKind.DATE),
        ("update_count", 3, FieldKind.OPTION),
        ("has_date", True, FieldKind.OPTION),
        ("owner", {"name": "Ada"}, FieldKind.REFERENCE),
        ("owner", {"key": "ada"}, FieldKind.REFERENCE),
        ("cast", ["Tyrone Power", {"name": "Henry Fonda"}], FieldKind.REFERENCE),
        ("meta", {"a": 1}, FieldKind.TEXT),
        ("scores", [1, 2], FieldKind.TEXT),
        ("blob", b"bytes", FieldKind.TEXT),
    ],
)
def test_classify_field(name: str, value: Any, kind: FieldKind) -> None:
    assert classify_field(name, value) is kind


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("short", "short"),
        ("x" * 50, "x" * 50),
        ("x" * 51, "x" * 49 + "…"),
        ("word, " * 12, "word, word, word, word, word, word, word, word…"),
        ("a " + "y" * 60, "a " + "y" * 47 + "…"),
    ],
)
def test_cut_keeps_50_chars_with_ellipsis(text: str, expected: str) -> None:
    assert cut(text) == expected
    assert len(cut(text)) <= 50


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("release_year", "Release year"),
        ("releaseYear", "Release year"),
        ("Role", "Role"),
        ("URL", "URL"),
        ("api_URL", "Api URL"),
        ("  has__genre ", "Has genre"),
        ("größe", "Größe"),
    ],
)
def test_field_label(name: str, label: str) -> None:
    assert field_label(name) == label


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("Person", "#person"),
        ("#Person", "#person"),
        ("Movie  Star", "#movie_star"),
        ("   ", ""),
        ("#", ""),
    ],
)
def test_normalize_tag(tag: str, expected: str) -> None:
    assert normalize_tag(tag) == expected
