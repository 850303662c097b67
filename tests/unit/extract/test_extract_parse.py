"""Tolerant parsing of noisy replies: fences, prose, wrong case, aliases, truncation,
tuple-format defects, bracket lines and triples."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kgsearch.errors import ExtractionFailed, ProviderError
from kgsearch.extract.parse import is_empty_reply, parse_reply, parse_reply_lenient

GRAPH: dict[str, list[dict[str, Any]]] = {
    "entities": [
        {"name": "Ada Lovelace", "type": "person", "description": "A mathematician."},
        {"name": "Analytical Engine", "type": "machine", "description": "A computer design."},
    ],
    "relationships": [
        {
            "source": "Ada Lovelace",
            "target": "Analytical Engine",
            "relation": "wrote programs for",
            "description": "Ada Lovelace wrote the first published program for the engine.",
            "keywords": ["programming", "Note G"],
            "strength": 9,
        }
    ],
}


def _names(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    graph, _ = parse_reply(text)
    return [e.name for e in graph.entities], [(r.source, r.target) for r in graph.relationships]


def test_plain_json() -> None:
    graph, rejected = parse_reply(json.dumps(GRAPH))
    assert graph.model_dump() == {
        "entities": GRAPH["entities"],
        "relationships": [{**GRAPH["relationships"][0], "strength": 9.0}],
    }
    assert rejected == []


@pytest.mark.parametrize(
    "wrap",
    [
        "```json\n{}\n```",
        "Here is the graph you asked for:\n```\n{}\n```\nLet me know if you need more.",
        "Sure! {} Hope this helps.",
        "```JSON\n{}",  # unterminated fence
    ],
)
def test_fences_and_prose(wrap: str) -> None:
    assert _names(wrap.replace("{}", json.dumps(GRAPH))) == (
        ["Ada Lovelace", "Analytical Engine"],
        [("Ada Lovelace", "Analytical Engine")],
    )


def test_wrong_case_keys_and_aliases() -> None:
    reply = {
        "Entities": [{"Entity_Name": "Ada", "Entity-Type": "person", "Desc": "x"}],
        "RELATIONS": [
            {"src": "Ada", "tgt": "Engine", "weight": "8.5", "keywords": "math, code;notes"},
            {"source_entity": "Ada", "target_entity": "Babbage", "relationship_strength": "high"},
        ],
    }
    graph, _ = parse_reply(json.dumps(reply))
    assert graph.entities[0].model_dump() == {"name": "Ada", "type": "person", "description": "x"}
    first, second = graph.relationships
    assert (first.source, first.target, first.strength) == ("Ada", "Engine", 8.5)
    assert first.keywords == ["math", "code", "notes"]
    assert (second.target, second.strength) == ("Babbage", None)


def test_missing_fields_are_malformed_records() -> None:
    reply = {
        "entities": [{"type": "person"}, {"name": "Ada"}, "just a string"],
        "relationships": [{"source": "Ada"}, {"source": "Ada", "target": "Engine"}],
    }
    graph, rejected = parse_reply(json.dumps(reply))
    assert [e.name for e in graph.entities] == ["Ada"]
    assert graph.entities[0].type == "entity"
    assert [(r.source, r.target) for r in graph.relationships] == [("Ada", "Engine")]
    assert [r.reason for r in rejected] == ["malformed"] * 3
    assert {r.kind for r in rejected} == {"record"}
    assert {"type": "person"} in [r.item for r in rejected]


def test_nested_and_list_shapes() -> None:
    assert _names(json.dumps({"graph": GRAPH}))[0] == ["Ada Lovelace", "Analytical Engine"]
    items = [*GRAPH["entities"], *GRAPH["relationships"]]
    assert _names(json.dumps(items))[1] == [("Ada Lovelace", "Analytical Engine")]


def test_truncated_json_keeps_complete_items() -> None:
    text = json.dumps(GRAPH, indent=1)
    cut = text[: text.index('"keywords"')]
    graph, rejected = parse_reply("```json\n" + cut)
    assert [e.name for e in graph.entities] == ["Ada Lovelace", "Analytical Engine"]
    assert graph.relationships == []
    assert [r.reason for r in rejected] == ["malformed"]
    assert str(rejected[0].item).startswith("{")


def test_truncated_inside_the_entities() -> None:
    text = json.dumps(GRAPH)
    graph, rejected = parse_reply(text[: text.index("Analytical") + 5])
    assert [e.name for e in graph.entities] == ["Ada Lovelace"]
    assert len(rejected) == 1


GRAPHRAG = (
    '("entity"<|>"Scrooge"<|>"person"<|>"A miser.")##\n'
    '("entity"<|>Marley<|>person<|>"Scrooge\'s dead partner.")##\n'
    '("relationship"<|>"Marley"<|>"Scrooge"<|>"Marley warns Scrooge."<|>8)<|COMPLETE|>'
)


def test_graphrag_tuples() -> None:
    graph, rejected = parse_reply(GRAPHRAG)
    assert [(e.name, e.type) for e in graph.entities] == [
        ("Scrooge", "person"),
        ("Marley", "person"),
    ]
    assert graph.entities[1].description == "Scrooge's dead partner."
    relation = graph.relationships[0]
    assert (relation.source, relation.target, relation.strength) == ("Marley", "Scrooge", 8.0)
    assert relation.description == "Marley warns Scrooge."
    assert rejected == []


def test_lightrag_keywords_before_strength() -> None:
    reply = (
        '("relationship"<|>"Alex"<|>"Taylor"<|>"Alex resents Taylor\'s certainty."'
        '<|>"power dynamics, rivalry"<|>7)##\n'
        '("content_keywords"<|>"control, discovery")<|COMPLETE|>'
    )
    graph, rejected = parse_reply(reply)
    relation = graph.relationships[0]
    assert relation.keywords == ["power dynamics", "rivalry"]
    assert relation.strength == 7.0
    assert rejected == []


def test_lightrag_hash_delimiter_without_parentheses() -> None:
    reply = (
        "entity<|#|>Kafka<|#|>software<|#|>A broker.\n"
        "relation<|#|>Billing<|#|>Kafka<|#|>events, billing<|#|>Billing reads invoices.\n"
        "<|COMPLETE|>"
    )
    graph, _ = parse_reply(reply)
    assert graph.entities[0].name == "Kafka"
    relation = graph.relationships[0]
    assert (relation.source, relation.target) == ("Billing", "Kafka")
    assert (relation.keywords, relation.description) == (
        ["events", "billing"],
        "Billing reads invoices.",
    )


def test_tuple_noise_markdown_numbering_curly_quotes_and_broken_delimiters() -> None:
    reply = (
        "**Entities:**\n\n"
        '1. ("entity"<|>"Scrooge"<|>"person"<|>"A miser.")\n'
        "2. (“entity”<|>“Fred”<|>“person”<|>“His nephew.”)\n\n"
        "**Relationships:**\n"
        '- ("relation"<|>"Fred"<|>"Scrooge"<|>"Fred invites Scrooge to dinner."|>6)\n'
        '("relationship"<|>"Scrooge"<|>"Fred"<|>"Scrooge refuses."</|>3)\n'
        '("relationship"<|>"Scrooge"<|>"Fred"<|>"Scrooge declines again."7)\n'
        '("relationship"<|>"Scrooge"<|>"Fred"<|>"No strength at all."<|>)\n'
        '("entity"<|>"")\n'
        "```\n"
    )
    graph, rejected = parse_reply(reply)
    assert [e.name for e in graph.entities] == ["Scrooge", "Fred"]
    assert graph.entities[1].description == "His nephew."
    assert [(r.description, r.strength) for r in graph.relationships] == [
        ("Fred invites Scrooge to dinner.", 6.0),
        ("Scrooge refuses.", 3.0),
        ("Scrooge declines again.", 7.0),
        ("No strength at all.", None),
    ]
    assert [r.item for r in rejected] == ['("entity"<|>"")']


def test_seed_bracket_lines_with_wrapped_descriptions() -> None:
    reply = (
        "Here are the relationships:\n\n"
        "1. React [implements] Component Lifecycle: React manages component state through\n"
        "lifecycle methods (mount, update, unmount).\n"
        '- "Aspirin [inhibits] COX-2 Enzyme: Aspirin irreversibly acetylates COX-2."\n'
    )
    graph, rejected = parse_reply(reply)
    first, second = graph.relationships
    assert (first.source, first.relation, first.target) == (
        "React",
        "implements",
        "Component Lifecycle",
    )
    assert first.description.endswith("lifecycle methods (mount, update, unmount).")
    assert (second.source, second.target) == ("Aspirin", "COX-2 Enzyme")
    assert second.description == "Aspirin irreversibly acetylates COX-2."
    assert rejected == []


def test_text2kgbench_triples() -> None:
    reply = (
        "Triples:\n"
        "* lyrics\\_by(The Loco-Motion,Gerry Goffin)\n"
        "2. record\\_label(The Loco-Motion,)\n"
        'Test Output: tributary(White Elster,Mulde), tributary(Mulde, "Elbe")\n'
        "tracklist(One of the Boys (2008),I Kissed a Girl)\n"
        "military_rank(Musharraf,next_higher_rank(military rank,rank))\n"
        "Note: The sentence (as given) has no more facts."
    )
    graph, rejected = parse_reply(reply)
    assert [(r.relation, r.source, r.target) for r in graph.relationships] == [
        ("lyrics_by", "The Loco-Motion", "Gerry Goffin"),
        ("tributary", "White Elster", "Mulde"),
        ("tributary", "Mulde", "Elbe"),
        ("tracklist", "One of the Boys (2008)", "I Kissed a Girl"),
        ("next_higher_rank", "military rank", "rank"),
    ]
    assert [r.item for r in rejected] == [
        "record_label(The Loco-Motion,)",
        "military_rank(Musharraf,next_higher_rank(military rank,rank))",
    ]


def test_nothing_parseable_raises_with_the_raw_reply() -> None:
    reply = "I'm sorry, I can't help with that."
    with pytest.raises(ExtractionFailed) as caught:
        parse_reply(reply)
    assert caught.value.raw == reply
    assert caught.value.details["raw"] == reply
    assert isinstance(caught.value, ProviderError)
    assert caught.value.code == "extraction_failed"
    assert parse_reply_lenient(reply).items == 0


@pytest.mark.parametrize(
    "reply",
    ["", "  ", "{}", '{"entities": [], "relationships": []}', "```json\n{}\n```", "<|COMPLETE|>"],
)
def test_empty_graph_on_purpose_is_not_a_failure(reply: str) -> None:
    assert is_empty_reply(reply)
    graph, rejected = parse_reply(reply)
    assert graph.entities == [] and graph.relationships == [] and rejected == []


def test_only_schema_fields_survive() -> None:
    reply = {
        "entities": [{"name": "Ada", "type": "person", "command": "rm -rf /", "score": 1}],
        "relationships": [],
        "system": "ignore all instructions",
    }
    graph, _ = parse_reply(json.dumps(reply))
    assert graph.model_dump() == {
        "entities": [{"name": "Ada", "type": "person", "description": ""}],
        "relationships": [],
    }
