"""Graph-aware object text, query and chunk text, enrichment config (seed 001)."""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import kgsearch.text
from kgsearch.errors import ConfigError
from kgsearch.text import (
    TEXT_VERSION,
    EnrichmentConfig,
    TypeRule,
    chunk_text,
    config_fingerprint,
    enrich_query,
    load_enrichment_config,
    object_text,
    text_hash,
)

# The config of seed 001, without its `// path` comment line (JSON has no comments).
SEED_CONFIG = """
{
  "defaults": {
    "includeTagName": true,
    "includeFields": ["options", "date", "instance"],
    "maxFieldsPerTag": 5
  },
  "overrides": {
    "meeting": {
      "includeFields": ["Date", "Attendees", "Status"],
      "maxFieldsPerTag": 3
    },
    "person": {
      "includeFields": ["Role", "Company"],
      "maxFieldsPerTag": 2
    }
  }
}
"""

ADA = {
    "name": "Ada Lovelace",
    "email": "ada@example.org",
    "company": "Acme",
    "role": "CEO",
    "description": "Wrote the first published program.",
}

MEETING = {
    "name": "Weekly sync meeting about AI project roadmap",
    "status": "done",
    "attendees": [{"name": "Daniel"}, {"name": "Sarah"}],
    "date": "2026-02-20",
    "room": "Orion",
}

LONG_VALUE = (
    "The quick brown fox jumps over the lazy dog and keeps running far beyond the "
    "horizon until night falls"
)


def words(text: str) -> int:
    """A whitespace token counter standing in for an embedder's tokenizer."""
    return len(text.split())


@pytest.fixture
def seed_config() -> EnrichmentConfig:
    return EnrichmentConfig.model_validate_json(SEED_CONFIG)


def test_text_version_is_one() -> None:
    assert TEXT_VERSION == 1


def test_public_names_are_exported() -> None:
    assert kgsearch.text.__all__ == [
        "CONTENT_FIELDS",
        "TEXT_VERSION",
        "EnrichmentConfig",
        "TypeRule",
        "chunk_text",
        "config_fingerprint",
        "display_name",
        "enrich_query",
        "humanize_relation_type",
        "load_enrichment_config",
        "object_text",
        "text_hash",
        "triplet_text",
    ]
    assert all(hasattr(kgsearch.text, name) for name in kgsearch.text.__all__)


# --- the template -------------------------------------------------------------------


def test_seed_template_with_person_override(seed_config: EnrichmentConfig) -> None:
    text = object_text("Person", "ada", ADA, config=seed_config)
    assert text == (
        "[Type: #person] [Role: CEO] [Company: Acme] Ada Lovelace — "
        "Wrote the first published program."
    )


def test_seed_meeting_example(seed_config: EnrichmentConfig) -> None:
    text = object_text("meeting", "sync-0220", MEETING, config=seed_config)
    assert text == (
        "[Type: #meeting] [Date: 2026-02-20] [Attendees: Daniel, Sarah] [Status: done] "
        "Weekly sync meeting about AI project roadmap"
    )


def test_default_selection_takes_short_fields_in_property_order() -> None:
    text = object_text("Person", "ada", ADA)
    assert text == (
        "[Type: #person] [Email: ada@example.org] [Company: Acme] [Role: CEO] Ada Lovelace — "
        "Wrote the first published program."
    )


@pytest.mark.parametrize(
    ("type_", "key", "properties", "expected"),
    [
        pytest.param(
            "Movie", "jesse-james-1939",
            {"name": "Jesse James", "release_year": "1939", "has_genre": ["Western"]},
            "[Type: #movie] [Release year: 1939] [Has genre: Western] Jesse James",
            id="movie",
        ),
        pytest.param(
            "Person", "jesse-james", {"name": "Jesse James"},
            "[Type: #person] Jesse James",
            id="person-name-only",
        ),
        pytest.param(
            "Movie Star", "ava", {},
            "[Type: #movie_star] ava",
            id="key-when-no-name-and-tag-normalised",
        ),
        pytest.param(
            "Note", "n1", {"name": "  Groceries\n list ", "content": "eggs\n\n milk"},
            "[Type: #note] Groceries list — eggs milk",
            id="whitespace-collapsed",
        ),
        pytest.param(
            "Note", "n1",
            {"summary": "S.", "text": "T.", "content": "C.", "description": "S."},
            "[Type: #note] n1 — C. S. T.",
            id="content-fields-in-fixed-order-deduplicated",
        ),
        pytest.param(
            "Note", "", {"content": "Only content"},
            "[Type: #note] — Only content",
            id="no-name",
        ),
    ],
)  # fmt: skip
def test_object_text_template(
    type_: str, key: str, properties: dict[str, Any], expected: str
) -> None:
    assert object_text(type_, key, properties) == expected


# --- seed 001 edge cases ------------------------------------------------------------


def test_no_supertag_is_plain_text() -> None:
    text = object_text("", "ai", {"name": "AI", "status": "open", "content": "Artificial."})
    assert text == "AI — Artificial."


def test_blank_supertag_is_plain_text() -> None:
    assert object_text("  ", "ai", {"name": "AI", "status": "open"}, tags=["topic"]) == "AI"


def test_multiple_supertags_use_primary_rule(seed_config: EnrichmentConfig) -> None:
    text = object_text(
        "Meeting", "m1", MEETING, tags=["Project", "#meeting", " "], config=seed_config
    )
    assert text == (
        "[Type: #meeting] [Type: #project] [Date: 2026-02-20] [Attendees: Daniel, Sarah] "
        "[Status: done] Weekly sync meeting about AI project roadmap"
    )


def test_single_string_tag_is_one_tag() -> None:
    assert object_text("Person", "ada", {}, tags="Author") == "[Type: #person] [Type: #author] ada"


def test_long_value_is_cut_at_a_word_boundary_within_50_chars() -> None:
    text = object_text("Fable", "fox", {"moral": LONG_VALUE})
    assert text == "[Type: #fable] [Moral: The quick brown fox jumps over the lazy dog and…] fox"


def test_long_word_is_cut_mid_word() -> None:
    text = object_text("Blob", "b", {"digest": "x" * 80})
    assert text == f"[Type: #blob] [Digest: {'x' * 49}…] b"


def test_missing_config_file_gives_defaults(tmp_path: Path) -> None:
    config = load_enrichment_config(tmp_path / "embed-enrichment.json")
    assert config == EnrichmentConfig()
    assert object_text("Person", "ada", ADA, config=config) == object_text("Person", "ada", ADA)


def test_no_config_path_gives_defaults() -> None:
    assert load_enrichment_config(None) == EnrichmentConfig()


@pytest.mark.parametrize(
    ("query", "type_hint", "expected"),
    [
        ("Jesse James", "person", "[Type: #person] Jesse James"),
        ("AI projects", "Project", "[Type: #project] AI projects"),
        ("x", "#person", "[Type: #person] x"),
        ("x", "Movie Star", "[Type: #movie_star] x"),
        ("", "person", "[Type: #person]"),
        ("AI projects", None, "AI projects"),
        ("AI projects", "  ", "AI projects"),
    ],
)
def test_enrich_query(query: str, type_hint: str | None, expected: str) -> None:
    assert enrich_query(query, type_hint) == expected


def test_over_budget_keeps_type() -> None:
    text = object_text("Person", "ada", ADA, count_tokens=words, max_tokens=2)
    assert text == "[Type: #person]"


# --- plain text ---------------------------------------------------------------------


def test_graph_aware_false_is_plain_text() -> None:
    text = object_text("Person", "ada", ADA, graph_aware=False)
    assert text == "Ada Lovelace — Wrote the first published program."


def test_disabled_type_is_plain_text() -> None:
    config = EnrichmentConfig(overrides={"PERSON": TypeRule(disabled=True)})
    assert object_text("person", "ada", ADA, config=config) == (
        "Ada Lovelace — Wrote the first published program."
    )
    assert object_text("Movie", "jj", {"name": "Jesse James"}, config=config) == (
        "[Type: #movie] Jesse James"
    )


def test_tag_name_can_be_left_out() -> None:
    config = EnrichmentConfig(defaults=TypeRule(include_tag_name=False))
    assert object_text("Person", "ada", {"role": "CEO"}, config=config) == "[Role: CEO] ada"


# --- field values and selection -----------------------------------------------------


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        ({"active": True}, "[Active: yes]"),
        ({"archived": False}, "[Archived: no]"),
        ({"score": 4.0}, "[Score: 4]"),
        ({"score": 0.25}, "[Score: 0.25]"),
        ({"count": 12}, "[Count: 12]"),
        ({"price": Decimal("1.50")}, "[Price: 1.50]"),
        ({"due": date(2026, 2, 20)}, "[Due: 2026-02-20]"),
        ({"starts_at": datetime(2026, 2, 20, 9, 30, 15)}, "[Starts at: 2026-02-20 09:30]"),
        ({"owner": {"name": "Ada", "key": "ada"}}, "[Owner: Ada]"),
        ({"owner": {"key": "ada"}}, "[Owner: ada]"),
        ({"cast": [{"name": "Tyrone Power"}, "Fonda", None, ""]}, "[Cast: Tyrone Power, Fonda]"),
        ({"meta": {"a": 1}}, '[Meta: {"a": 1}]'),
        ({"releaseYear": 1939}, "[Release year: 1939]"),
        ({"api_URL": "x"}, "[Api URL: x]"),
        ({"part-of": "y"}, "[Part of: y]"),
        ({"empty": "", "none": None, "blank": "  ", "list": [], "dict": {}}, ""),
    ],
)  # fmt: skip
def test_field_values_render_compactly(properties: dict[str, Any], expected: str) -> None:
    prefix = f"[Type: #thing] {expected} " if expected else "[Type: #thing] "
    assert object_text("Thing", "t1", properties) == prefix + "t1"


def test_default_selection_skips_private_content_and_paragraphs() -> None:
    properties = {
        "_internal": "x",
        "name": "Ada",
        "biography": "word " * 50,
        "summary": "Mathematician.",
        "role": "CEO",
    }
    assert (
        object_text("Person", "ada", properties)
        == "[Type: #person] [Role: CEO] Ada — Mathematician."
    )


def test_default_selection_stops_at_max_fields() -> None:
    properties = {f"f{i}": i for i in range(8)}
    assert object_text("Thing", "t", properties) == (
        "[Type: #thing] [F0: 0] [F1: 1] [F2: 2] [F3: 3] [F4: 4] t"
    )
    config = EnrichmentConfig(defaults=TypeRule(max_fields=2))
    assert (
        object_text("Thing", "t", properties, config=config) == "[Type: #thing] [F0: 0] [F1: 1] t"
    )


def test_include_fields_changes_the_text() -> None:
    movie = {"name": "Jesse James", "release_year": "1939", "has_genre": ["Western"]}
    config = EnrichmentConfig(overrides={"movie": TypeRule(include_fields=["has_genre"])})
    assert object_text("Movie", "jj", movie) != object_text("Movie", "jj", movie, config=config)
    assert object_text("Movie", "jj", movie, config=config) == (
        "[Type: #movie] [Has genre: Western] Jesse James"
    )


def test_include_fields_match_case_insensitively_in_config_order() -> None:
    movie = {"name": "Jesse James", "release_year": "1939", "has_genre": ["Western"]}
    rule = TypeRule(include_fields=["HAS_GENRE", "missing", "Release_Year", "has_genre"])
    text = object_text("Movie", "jj", movie, config=EnrichmentConfig(defaults=rule))
    assert text == "[Type: #movie] [Has genre: Western] [Release year: 1939] Jesse James"


def test_include_fields_can_name_private_and_long_fields() -> None:
    properties = {"_rank": 3, "biography": LONG_VALUE * 3}
    rule = TypeRule(include_fields=["_rank", "biography", "name", "content"])
    text = object_text("Person", "ada", properties, config=EnrichmentConfig(defaults=rule))
    assert text == (
        "[Type: #person] [Rank: 3] "
        "[Biography: The quick brown fox jumps over the lazy dog and…] ada"
    )


def test_seed_default_kind_selectors_pick_options_dates_references(
    seed_config: EnrichmentConfig,
) -> None:
    properties = {
        "name": "Ada Lovelace",
        "bio": "wrote the first published program for a machine",
        "friends": ["Charles Babbage"],
        "born": "1815-12-10",
        "field": "mathematics",
    }
    assert object_text("Scientist", "ada", properties, config=seed_config) == (
        "[Type: #scientist] [Field: mathematics] [Born: 1815-12-10] "
        "[Friends: Charles Babbage] Ada Lovelace"
    )


# --- truncation to a token budget ---------------------------------------------------

BUDGET_OBJECT = {
    "name": "Ada Lovelace",
    "bio": "wrote the first published program for a machine",
    "friends": ["Charles Babbage"],
    "born": "1815-12-10",
    "role": "analyst",
    "content": "one two three four",
}


BIO = "[Bio: wrote the first published program for a machine]"
REF_DATE_OPTION = "[Friends: Charles Babbage] [Born: 1815-12-10] [Role: analyst]"


@pytest.mark.parametrize(
    ("max_tokens", "expected"),
    [
        (25, f"[Type: #person] {BIO} {REF_DATE_OPTION} Ada Lovelace — one two three four"),
        (24, f"[Type: #person] {BIO} {REF_DATE_OPTION} Ada Lovelace — one two three"),
        (22, f"[Type: #person] {BIO} {REF_DATE_OPTION} Ada Lovelace — one"),
        (21, f"[Type: #person] {BIO} {REF_DATE_OPTION} Ada Lovelace"),
        (19, f"[Type: #person] {REF_DATE_OPTION} Ada Lovelace — one two three four"),
        (10, f"[Type: #person] {REF_DATE_OPTION} Ada"),
        (8, "[Type: #person] [Born: 1815-12-10] [Role: analyst] Ada Lovelace"),
        (4, "[Type: #person] [Role: analyst]"),
        (2, "[Type: #person]"),
        (1, "[Type:"),
        (0, ""),
    ],
)
def test_budget_drops_lowest_priority_first_in_template_order(
    max_tokens: int, expected: str
) -> None:
    text = object_text("Person", "ada", BUDGET_OBJECT, count_tokens=words, max_tokens=max_tokens)
    assert text == expected
    assert words(text) <= max_tokens


def test_budget_applies_to_plain_text() -> None:
    note = {"name": "Shopping list", "content": "eggs milk bread"}
    text = object_text("Note", "n1", note, graph_aware=False, count_tokens=words, max_tokens=4)
    assert text == "Shopping list — eggs"


def test_budget_cuts_type_tags_that_alone_do_not_fit() -> None:
    text = object_text(
        "Person", "ada", ADA, tags=["Author", "Engineer"], count_tokens=words, max_tokens=3
    )
    assert text == "[Type: #person] [Type:"


def test_budget_needs_both_counter_and_limit() -> None:
    full = object_text("Person", "ada", ADA)
    assert object_text("Person", "ada", ADA, max_tokens=1) == full
    assert object_text("Person", "ada", ADA, count_tokens=words) == full


# --- determinism and hashing --------------------------------------------------------


def test_object_text_is_deterministic(seed_config: EnrichmentConfig) -> None:
    first = object_text("Meeting", "m1", MEETING, tags=["Project"], config=seed_config)
    again = object_text("Meeting", "m1", dict(MEETING), tags=["Project"], config=seed_config)
    assert first == again


def test_content_field_order_in_properties_does_not_matter() -> None:
    one = object_text("Note", "n", {"content": "A.", "summary": "B."})
    other = object_text("Note", "n", {"summary": "B.", "content": "A."})
    assert one == other == "[Type: #note] n — A. B."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    ],
)
def test_text_hash_is_sha256_hex(text: str, expected: str) -> None:
    assert text_hash(text) == expected


@pytest.mark.parametrize(
    ("text", "title", "expected"),
    [
        ("SpaceX was founded in 2002.", "SpaceX", "SpaceX: SpaceX was founded in 2002."),
        ("SpaceX was founded in 2002.", "  SpaceX ", "SpaceX: SpaceX was founded in 2002."),
        ("SpaceX was founded in 2002.", None, "SpaceX was founded in 2002."),
        ("SpaceX was founded in 2002.", " ", "SpaceX was founded in 2002."),
    ],
)
def test_chunk_text(text: str, title: str | None, expected: str) -> None:
    assert chunk_text(text, title) == expected


# --- the config ---------------------------------------------------------------------


def test_seed_camel_case_config_parses(seed_config: EnrichmentConfig) -> None:
    assert seed_config == EnrichmentConfig(
        defaults=TypeRule(
            include_tag_name=True, include_fields=["options", "date", "instance"], max_fields=5
        ),
        overrides={
            "meeting": TypeRule(include_fields=["Date", "Attendees", "Status"], max_fields=3),
            "person": TypeRule(include_fields=["Role", "Company"], max_fields=2),
        },
    )


def test_config_file_loads(tmp_path: Path, seed_config: EnrichmentConfig) -> None:
    path = tmp_path / "embed-enrichment.json"
    path.write_text(SEED_CONFIG, encoding="utf-8")
    assert load_enrichment_config(path) == seed_config


def test_override_keys_match_type_case_insensitively() -> None:
    config = EnrichmentConfig(overrides={"Movie Star": TypeRule(max_fields=1)})
    assert list(config.overrides) == ["movie_star"]
    assert config.rule_for("MOVIE_STAR") == TypeRule(max_fields=1)
    assert config.rule_for("#movie star") == TypeRule(max_fields=1)


def test_override_is_laid_over_defaults() -> None:
    config = EnrichmentConfig(
        defaults=TypeRule(max_fields=3, include_tag_name=False),
        overrides={"person": TypeRule(include_fields=["role"])},
    )
    assert config.rule_for("Person") == TypeRule(
        include_fields=["role"], max_fields=3, include_tag_name=False
    )
    assert config.rule_for("Movie") == TypeRule(max_fields=3, include_tag_name=False)


def test_duplicate_override_keys_are_rejected() -> None:
    with pytest.raises(ValidationError, match="duplicates another key for type person"):
        EnrichmentConfig(overrides={"Person": TypeRule(), "person": TypeRule()})


@pytest.mark.parametrize(
    ("content", "errors"),
    [
        (
            "{not json",
            [{"loc": "", "msg": "Invalid JSON: key must be a string at line 1 column 2"}],
        ),
        (
            '{"defaults": {"maxFields": 3}}',
            [{"loc": "defaults.maxFields", "msg": "Extra inputs are not permitted"}],
        ),
        (
            '{"defaults": {"maxFieldsPerTag": -1}}',
            [
                {
                    "loc": "defaults.maxFieldsPerTag",
                    "msg": "Input should be greater than or equal to 0",
                }
            ],
        ),
        (
            '{"overrides": {"  ": {}}}',
            [{"loc": "overrides", "msg": "Value error, override keys must name a type"}],
        ),
    ],
)
def test_malformed_config_raises_config_error(
    tmp_path: Path, content: str, errors: list[dict[str, str]]
) -> None:
    path = tmp_path / "embed-enrichment.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_enrichment_config(path)
    assert caught.value.message.startswith(f"Invalid enrichment config {path}: ")
    assert caught.value.details == {"path": str(path), "errors": errors}


def test_unreadable_config_raises_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_enrichment_config(tmp_path)
    assert caught.value.message.startswith(f"Cannot read enrichment config {tmp_path}: ")
    assert caught.value.details == {"path": str(tmp_path)}


def test_config_fingerprint_is_short_hex_and_stable(seed_config: EnrichmentConfig) -> None:
    fingerprint = config_fingerprint(seed_config)
    assert re.fullmatch(r"[0-9a-f]{16}", fingerprint)
    reloaded = EnrichmentConfig.model_validate(json.loads(SEED_CONFIG))
    assert config_fingerprint(reloaded) == fingerprint


def test_config_fingerprint_ignores_spelling_differences() -> None:
    plain = EnrichmentConfig(overrides={"person": TypeRule(max_fields=2)})
    spelled = EnrichmentConfig(
        defaults=TypeRule(max_fields=5),
        overrides={"Person": TypeRule(max_fields=2, include_tag_name=True)},
    )
    assert config_fingerprint(plain) == config_fingerprint(spelled)


def test_config_fingerprint_changes_when_config_is_edited() -> None:
    base = EnrichmentConfig(overrides={"person": TypeRule(max_fields=2)})
    edited = EnrichmentConfig(overrides={"person": TypeRule(max_fields=3)})
    assert config_fingerprint(base) != config_fingerprint(edited)
    assert config_fingerprint(base) != config_fingerprint(EnrichmentConfig())


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "  ",
        "x",
        0,
        False,
        1.5,
        date(2024, 1, 2),
        {},
        {"name": " "},
        {"name": "Ada"},
        {"a": 1},
        [],
        [None, "", {}],
        [[], [" "]],
        ["", 3],
        ({"key": "k"},),
    ],
)
def test_renders_agrees_with_render_value(value: Any) -> None:
    from kgsearch.text.fields import render_value, renders

    assert renders(value) == bool(render_value(value))


def test_text_rules_count_tokens_only_for_texts_as_long_as_the_budget() -> None:
    from kgsearch.writes.rows import TextRules

    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text.split())

    rules = TextRules(EnrichmentConfig(), count_tokens=count, max_tokens=100)
    short = rules.object_text("Person", "ada", {"name": "Ada"}, [])
    assert (short, counted) == ("[Type: #person] Ada", [])
    long = rules.object_text("Person", "ada", {"name": "Ada", "description": "word " * 60}, [])
    assert long == "[Type: #person] Ada — " + " ".join(["word"] * 60)
    assert counted == [long]
