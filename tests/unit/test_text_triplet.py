"""Relationship triplet text (seed 000)."""

from __future__ import annotations

from typing import Any

import pytest

from kgsearch.text import display_name, humanize_relation_type, triplet_text


@pytest.mark.parametrize(
    ("source_properties", "source_key", "type_", "target_properties", "target_key", "expected"),
    [
        (
            {"name": "Elon Musk"},
            "elon",
            "FOUNDED",
            {"name": "Tesla"},
            "tesla",
            "Elon Musk founded Tesla",
        ),
        (
            {"name": "Alice"},
            "alice",
            "WORKS_FOR",
            {"name": "Acme Corp"},
            "acme",
            "Alice works for Acme Corp",
        ),
        (
            {"name": "React"},
            "react",
            "DEPENDS_ON",
            {"name": "JavaScript"},
            "js",
            "React depends on JavaScript",
        ),
        ({}, "srv-01", "HOSTS", {"name": "PostgreSQL"}, "pg", "srv-01 hosts PostgreSQL"),
    ],
)
def test_seed_000_examples(
    source_properties: dict[str, Any],
    source_key: str,
    type_: str,
    target_properties: dict[str, Any],
    target_key: str,
    expected: str,
) -> None:
    source = display_name(source_properties, source_key, "id-source")
    target = display_name(target_properties, target_key, "id-target")
    assert triplet_text(source, type_, target) == expected


@pytest.mark.parametrize(
    ("properties", "key", "expected"),
    [
        ({"name": "Ada Lovelace"}, "ada", "Ada Lovelace"),
        ({"name": "  Ada Lovelace  "}, "ada", "Ada Lovelace"),
        ({"name": "   "}, "ada", "ada"),
        ({"name": ""}, "ada", "ada"),
        ({"name": 42}, "ada", "ada"),
        ({"name": None}, "ada", "ada"),
        ({}, "srv-01", "srv-01"),
        ({}, "", "3f2a-uuid"),
        ({}, "   ", "3f2a-uuid"),
        ({}, None, "3f2a-uuid"),
        ({"name": " "}, None, "3f2a-uuid"),
    ],
)
def test_display_name_falls_back_from_name_to_key_to_id(
    properties: dict[str, Any], key: str | None, expected: str
) -> None:
    assert display_name(properties, key, "3f2a-uuid") == expected


@pytest.mark.parametrize(
    ("type_", "expected"),
    [
        ("WORKS_FOR", "works for"),
        ("FOUNDED_BY", "founded by"),
        ("directed_by", "directed by"),
        ("HOSTS", "hosts"),
        ("  PART__OF ", "part of"),
        ("has  genre", "has genre"),
    ],
)
def test_humanize_relation_type(type_: str, expected: str) -> None:
    assert humanize_relation_type(type_) == expected


@pytest.mark.parametrize(
    ("label", "description", "expected"),
    [
        ("was directed by", None, "Jesse James was directed by Henry King"),
        ("  ", None, "Jesse James directed by Henry King"),
        (
            None,
            "the 1939 Technicolor western",
            "Jesse James directed by Henry King: the 1939 Technicolor western",
        ),
        (None, "  his first western  ", "Jesse James directed by Henry King: his first western"),
        (None, "   ", "Jesse James directed by Henry King"),
        ("was directed by", "in 1939", "Jesse James was directed by Henry King: in 1939"),
    ],
)
def test_triplet_text_label_and_description(
    label: str | None, description: str | None, expected: str
) -> None:
    text = triplet_text(
        "Jesse James", "DIRECTED_BY", "Henry King", label=label, description=description
    )
    assert text == expected


def test_triplet_text_uses_id_when_endpoint_has_no_name_or_key() -> None:
    source = display_name({}, None, "0b6f-uuid")
    target = display_name({"name": ""}, "", "9c1e-uuid")
    assert triplet_text(source, "LINKS_TO", target) == "0b6f-uuid links to 9c1e-uuid"
