"""Hostile replies parse in time linear in their length: 1 MB of each shape that made
the parser quadratic (or recurse without bound) reads in under a second of CPU time
(process time, so other work on a shared machine does not count; each took from 30 s
to hours before)."""

from __future__ import annotations

import time

import pytest

from kgsearch.extract.parse import (
    MAX_MALFORMED,
    is_empty_reply,
    parse_reply_lenient,
)

MB = 1_000_000
HOSTILE = {
    "letters": "x" * MB,  # every position started a triple head that ran to the end
    "braces": "{" * MB,  # every brace a failed JSON decode that rescanned the text
    "brackets": "[" * MB,  # the JSON decoder's recursion limit
    "open heads": "a(" * (MB // 2),  # every head scanned to the end for its ")"
    "nested heads": "r(" * (MB // 4) + ")" * (MB // 4),
    "spaces": "a" + " " * MB + "b",  # a lazy bracket-line part backtracked over spaces
    "underscores": "x_" * (MB // 2),
    "list keys": '"entities": [x ' * (MB // 15),
    "fences": "```" * (MB // 3),
    "tuple spaces": " " * MB + "<|>",
    "wrapped lines": "a [b] c: d\n" + "x y\n" * (MB // 4),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_megabyte_parses_in_under_a_second(name: str) -> None:
    text = HOSTILE[name]
    started = time.process_time()
    parse_reply_lenient(text)
    is_empty_reply(text)
    assert time.process_time() - started < 1.0


def test_deeply_nested_json_is_unreadable_not_a_crash() -> None:
    parsed = parse_reply_lenient('{"entities": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert parsed.items == 0


def test_malformed_pieces_past_the_limit_are_counted_not_kept() -> None:
    parsed = parse_reply_lenient("f(, )\n" * 500)
    assert len(parsed.rejected) == MAX_MALFORMED
    assert parsed.more_malformed == 500 - MAX_MALFORMED
    assert parsed.records == 500


def test_a_long_wrapped_description_is_joined_once() -> None:
    parsed = parse_reply_lenient("Ada [met] Babbage: in 1833\nat a party\nin London")
    (relation,) = parsed.graph.relationships
    assert relation.description == "in 1833 at a party in London"


def test_nested_triples_are_read_inside_a_rejected_outer_one() -> None:
    parsed = parse_reply_lenient("rank(a, next_rank(b, c)) born(x, y)")
    assert [(r.relation, r.source, r.target) for r in parsed.graph.relationships] == [
        ("next_rank", "b", "c"),
        ("born", "x", "y"),
    ]
    assert [r.item for r in parsed.rejected] == ["rank(a, next_rank(b, c))"]
