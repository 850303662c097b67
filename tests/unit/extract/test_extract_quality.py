"""The quality filter: each rule moves the item to ``rejected`` with its reason."""

from __future__ import annotations

import pytest

from kgsearch.extract.quality import QualityRules, apply_quality, normalize_name
from kgsearch.extract.schema import (
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    ExtractionResult,
    Rejection,
)

TEXT = (
    "Ada Lovelace wrote the first published program for Charles Babbage's Analytical "
    "Engine in 1843, in her notes on Menabrea's paper. The ﬁrst program computed "
    "Bernoulli numbers."
)
LONG = "Ada Lovelace wrote Note G, the first published program for the Analytical Engine."


def _result(entities=(), relations=()) -> ExtractionResult:
    return ExtractionResult(
        chunk_id="c",
        graph=ExtractedGraph(entities=list(entities), relationships=list(relations)),
    )


def _rel(
    source: str, target: str, description: str = LONG, relation: str = ""
) -> ExtractedRelation:
    return ExtractedRelation(
        source=source, target=target, description=description, relation=relation
    )


def _reasons(result: ExtractionResult) -> list[tuple[str, str]]:
    return [(r.kind, r.reason) for r in result.rejected]


ADA = ExtractedEntity(name="Ada Lovelace", type="person", description="A mathematician.")
ENGINE = ExtractedEntity(name="Analytical Engine", type="machine")


def test_good_items_are_kept() -> None:
    result = apply_quality(
        _result([ADA, ENGINE], [_rel("Ada Lovelace", "Analytical Engine")]), TEXT, QualityRules()
    )
    assert result.rejected == []
    assert [e.name for e in result.graph.entities] == ["Ada Lovelace", "Analytical Engine"]
    assert len(result.graph.relationships) == 1


def test_short_description() -> None:
    result = apply_quality(
        _result([ADA, ENGINE], [_rel("Ada Lovelace", "Analytical Engine", "Wrote for it.")]),
        TEXT,
        QualityRules(),
    )
    assert _reasons(result) == [("relationship", "short_description")]
    assert result.graph.relationships == []
    relaxed = apply_quality(
        _result([ADA, ENGINE], [_rel("Ada Lovelace", "Analytical Engine", "Wrote for it.")]),
        TEXT,
        QualityRules(min_description_length=5),
    )
    assert relaxed.rejected == []


def test_entity_description_minimum_is_off_by_default() -> None:
    assert apply_quality(_result([ENGINE]), TEXT, QualityRules()).rejected == []
    result = apply_quality(_result([ENGINE]), TEXT, QualityRules(min_entity_description_length=10))
    assert _reasons(result) == [("entity", "short_description")]


def test_trivial_descriptions_after_removing_names() -> None:
    rules = QualityRules(min_description_length=10)
    for description in [
        "Ada Lovelace is related to Analytical Engine.",
        "Ada Lovelace is associated with the Analytical Engine",
        "Analytical Engine relates to Ada Lovelace",
    ]:
        result = apply_quality(
            _result([ADA, ENGINE], [_rel("Ada Lovelace", "Analytical Engine", description)]),
            TEXT,
            rules,
        )
        assert _reasons(result) == [("relationship", "trivial_description")], description
    meaningful = (
        "Ada Lovelace is related to the Analytical Engine through Note G, its first program."
    )
    assert (
        apply_quality(
            _result([ADA, ENGINE], [_rel("Ada Lovelace", "Analytical Engine", meaningful)]),
            TEXT,
            rules,
        ).rejected
        == []
    )


def test_self_loop_and_empty_names() -> None:
    result = apply_quality(
        _result(
            [ADA, ExtractedEntity(name="  ")],
            [_rel("Ada Lovelace", "ada  lovelace"), _rel("Ada Lovelace", " ")],
        ),
        TEXT,
        QualityRules(),
    )
    assert _reasons(result) == [
        ("entity", "empty_name"),
        ("relationship", "self_loop"),
        ("relationship", "empty_name"),
    ]


def test_long_name() -> None:
    long_name = "Ada Lovelace wrote the first published program"
    result = apply_quality(
        _result([ExtractedEntity(name=long_name)]), TEXT, QualityRules(max_name_length=20)
    )
    assert _reasons(result) == [("entity", "long_name")]


def test_hallucination_check_is_case_whitespace_and_nfkc_insensitive() -> None:
    entities = [
        ExtractedEntity(name="ADA   LOVELACE"),
        ExtractedEntity(name="first program"),  # the text has the "ﬁ" ligature
        ExtractedEntity(name="Washington", type="geo"),
    ]
    result = apply_quality(_result(entities), TEXT, QualityRules(strict_in_text=True))
    assert [e.name for e in result.graph.entities] == ["ADA LOVELACE", "first program"]
    assert _reasons(result) == [("entity", "not_in_text")]
    unchecked = apply_quality(_result(entities), TEXT, QualityRules(check_in_text=False))
    assert (unchecked.rejected, unchecked.signals) == ([], [])


@pytest.mark.parametrize(
    "name",
    [
        "ada lovelace",  # case
        "Ada  Lovelace",  # spacing
        "Babbage's Analytical Engine",  # possessive
        "Charles Babbage’s",  # curly possessive
        "Ménabréa",  # diacritics the text does not have
        "Lovelace",  # in part
        "Countess Ada Byron",  # in part: a distinctive word of it
        "A.E.",  # a dotted abbreviation of "Analytical Engine"
        "AE",  # abbreviation of "Analytical Engine"
    ],
)
def test_a_name_the_text_spells_another_way_is_grounded(name: str) -> None:
    result = apply_quality(
        _result([ExtractedEntity(name=name)]), TEXT, QualityRules(strict_in_text=True)
    )
    assert [e.name for e in result.graph.entities] == [" ".join(name.split())]
    assert (result.rejected, result.signals) == ([], [])


def test_a_name_the_text_does_not_spell_is_kept_as_a_soft_signal() -> None:
    result = apply_quality(
        _result([ExtractedEntity(name="Washington", type="geo")]), TEXT, QualityRules()
    )
    assert [e.name for e in result.graph.entities] == ["Washington"]
    assert result.rejected == []
    assert [s.model_dump() for s in result.signals] == [
        {
            "kind": "entity",
            "reason": "not_in_text",
            "item": {"name": "Washington", "type": "geo", "description": "", "confidence": 0.5},
        }
    ]


def test_endpoint_in_text_is_added_and_unknown_endpoint_rejected() -> None:
    result = apply_quality(
        _result(
            [ADA], [_rel("Ada Lovelace", "Charles Babbage"), _rel("Ada Lovelace", "Sam Rivera")]
        ),
        TEXT,
        QualityRules(),
    )
    assert [(e.name, e.type) for e in result.graph.entities] == [
        ("Ada Lovelace", "person"),
        ("Charles Babbage", "entity"),
    ]
    assert _reasons(result) == [("relationship", "unknown_entity")]
    item = result.rejected[0].item
    assert isinstance(item, dict) and item["target"] == "Sam Rivera"


def test_endpoint_of_a_rejected_entity_is_unknown() -> None:
    result = apply_quality(
        _result([ExtractedEntity(name="Sam Rivera")], [_rel("Ada Lovelace", "Sam Rivera")]),
        TEXT,
        QualityRules(strict_in_text=True),
    )
    assert _reasons(result) == [("entity", "not_in_text"), ("relationship", "unknown_entity")]


def test_duplicates_are_merged() -> None:
    entities = [
        ADA,
        ExtractedEntity(name="ada lovelace", type="Person", description="She wrote Note G."),
        ExtractedEntity(name="Ada Lovelace", type="person", description="A mathematician."),
        ExtractedEntity(name="Ada Lovelace", type="author"),
    ]
    relations = [
        _rel("Ada Lovelace", "Analytical Engine", LONG, "programmed"),
        _rel(
            "ada lovelace",
            "Analytical  Engine",
            "She published the program in her 1843 notes on Menabrea's paper.",
            "Programmed",
        ),
    ]
    result = apply_quality(_result([*entities, ENGINE], relations), TEXT, QualityRules())
    ada = result.graph.entities[0]
    assert ada.description == "A mathematician. She wrote Note G."
    assert [(e.name, e.type) for e in result.graph.entities] == [
        ("Ada Lovelace", "person"),
        ("Ada Lovelace", "author"),
        ("Analytical Engine", "machine"),
    ]
    assert len(result.graph.relationships) == 1
    assert result.graph.relationships[0].description.endswith("Menabrea's paper.")
    assert _reasons(result) == [("relationship", "duplicate")]


def test_over_cap() -> None:
    relations = [
        _rel("Ada Lovelace", "Analytical Engine"),
        _rel("Ada Lovelace", "Charles Babbage"),
        _rel("Charles Babbage", "Analytical Engine"),
    ]
    result = apply_quality(
        _result([ADA, ENGINE], relations), TEXT, QualityRules(max_relationships=2)
    )
    assert len(result.graph.relationships) == 2
    assert _reasons(result) == [("relationship", "over_cap")]


def test_earlier_rejections_are_kept() -> None:
    result = _result([ADA]).model_copy(
        update={"rejected": [Rejection(kind="record", reason="malformed", item="(x")]}
    )
    assert _reasons(apply_quality(result, TEXT, QualityRules())) == [("record", "malformed")]


def test_normalize_name() -> None:
    assert normalize_name("  ＡＤＡ\u00a0 Lovelace ") == "ada lovelace"


def test_a_relationship_without_a_description_is_described_by_its_label() -> None:
    result = apply_quality(
        _result(relations=[_rel("Ada Lovelace", "Charles Babbage", "", relation="workedWith")]),
        TEXT,
        QualityRules(),
    )
    assert [r.description for r in result.graph.relationships] == [
        "Ada Lovelace worked with Charles Babbage"
    ]
    assert result.rejected == []


def test_a_relationship_with_neither_description_nor_meaningful_label_is_trivial() -> None:
    result = apply_quality(
        _result(
            relations=[
                _rel("Ada Lovelace", "Charles Babbage", ""),
                _rel("Ada Lovelace", "Analytical Engine", "", relation="related_to"),
            ]
        ),
        TEXT,
        QualityRules(),
    )
    assert _reasons(result) == [("relationship", "trivial_description")] * 2


def test_oversized_and_punctuation_only_items_are_rejected() -> None:
    rules = QualityRules(max_description_length=100)
    result = apply_quality(
        _result(
            entities=[
                ExtractedEntity(name="...", type="x"),
                ExtractedEntity(name="Ada Lovelace", type="t" * 200),
                ExtractedEntity(name="Charles Babbage", description="d" * 101),
            ],
            relations=[_rel("Ada Lovelace", "Analytical Engine", LONG + "x" * 100)],
        ),
        TEXT,
        rules,
    )
    assert _reasons(result) == [
        ("entity", "empty_name"),
        ("entity", "long_name"),
        ("entity", "long_description"),
        ("relationship", "long_description"),
    ]


def test_a_name_copied_from_the_prompt_examples_is_rejected_even_when_soft() -> None:
    rules = QualityRules(example_names=("Sam Rivera", "Ada Lovelace"))
    result = apply_quality(
        _result([ExtractedEntity(name="Sam Rivera"), ExtractedEntity(name="Ada Lovelace")]),
        TEXT,
        rules,
    )
    assert [e.name for e in result.graph.entities] == ["Ada Lovelace"]  # the text spells it
    assert _reasons(result) == [("entity", "copied_from_examples")]
    assert result.signals == []


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("IBM", "She joined International Business Machines in 1950."),
        ("Bank of England", "The BOE raised its rate."),
        ("Alan Turing", "Turing wrote the paper."),
    ],
)
def test_abbreviations_and_parts_are_grounded_either_way(name: str, text: str) -> None:
    result = apply_quality(_result([ExtractedEntity(name=name)]), text, QualityRules())
    assert (result.rejected, result.signals) == ([], [])


@pytest.mark.parametrize(
    "name",
    [
        "Alex",  # initials of four ordinary words are not an abbreviation
        "Alex's team",  # an ordinary word of the name is not enough
        "B.N.",  # "Bernoulli numbers": the second word is not capitalised
    ],
)
def test_ordinary_words_do_not_ground_a_name(name: str) -> None:
    text = "A little extra x-ray made the team work. Bernoulli numbers came next."
    result = apply_quality(_result([ExtractedEntity(name=name)]), text, QualityRules())
    assert [s.reason for s in result.signals] == ["not_in_text"]
