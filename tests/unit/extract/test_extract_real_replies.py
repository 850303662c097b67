"""The parser over every recorded real LLM reply in shared/eval-data, with exact counts.

Christmas Carol (nano-graphrag tuple format, first pass + gleaning): the README counts
records as the ``##``-separated pieces that start with ``("entity"`` (636 / 498 for the
gpt-4o fixture). Ours are higher because we also read the records behind markdown
headers (``**Entities:**\\n\\n1. ("entity"…``), records separated by a newline instead of
``##``, the 5 ``"relation"`` and 2 curly-quoted tags; no record is left malformed.

Text2KGBench (``rel(s, o)`` triples): malformed records are mostly empty slots
(``record_label(The Fame, )``), one-argument calls (``sport(Ice Hockey)``) and nested
calls; notes and echoed sentences are prose and not records.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from eval_data import EVAL_DATA

from kgsearch.extract.parse import parse_reply, parse_reply_lenient

EVAL = EVAL_DATA
CAROL = EVAL / "christmas-carol-graphrag" / "extractions.jsonl"
T2KG = EVAL / "text2kgbench" / "wikidata_tekgen" / "baselines"

# run → (replies, entities, relationships, malformed, relationships without a strength)
CAROL_EXPECTED = {
    "upstream-test-fixture": (84, 654, 520, 0, 0),
    "fork-dickens": (84, 592, 252, 0, 14),
    "fork-dickens-partial": (24, 184, 120, 0, 0),
}
# README figures (##-pieces starting with ("entity" / ("relationship")
README_ENTITY_RECORDS = {
    "upstream-test-fixture": 636,
    "fork-dickens": 582,
    "fork-dickens-partial": 181,
}
README_RELATION_RECORDS = {
    "upstream-test-fixture": 498,
    "fork-dickens": 249,
    "fork-dickens-partial": 117,
}

# (model, split) → (replies, relationships, malformed, replies with ≥1 item)
T2KG_EXPECTED = {
    ("Vicuna-13B", "test"): (1946, 7529, 989, 1802),
    ("Vicuna-13B", "unseen"): (90, 184, 22, 76),
    ("Alpaca-LoRA-13B", "test"): (2080, 4178, 767, 1873),
    ("Alpaca-LoRA-13B", "unseen"): (90, 126, 11, 78),
}


def _carol_rows() -> list[dict[str, object]]:
    with CAROL.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def _replies(run: str) -> list[str]:
    return [
        str(row[key])
        for row in _carol_rows()
        if row["run"] == run
        for key in ("first_pass", "gleaning")
        if row[key] is not None
    ]


@pytest.mark.parametrize("run", sorted(CAROL_EXPECTED))
def test_christmas_carol_counts(run: str) -> None:
    replies = _replies(run)
    entities = relations = malformed = no_strength = 0
    for reply in replies:
        parsed = parse_reply_lenient(reply)
        assert parsed.format == "tuples"
        assert parsed.items > 0
        entities += len(parsed.graph.entities)
        relations += len(parsed.graph.relationships)
        malformed += len(parsed.rejected)
        no_strength += sum(r.strength is None for r in parsed.graph.relationships)
    assert (len(replies), entities, relations, malformed, no_strength) == CAROL_EXPECTED[run]


@pytest.mark.parametrize("run", sorted(CAROL_EXPECTED))
def test_christmas_carol_at_least_the_readme_counts(run: str) -> None:
    pieces = Counter(
        m.group(1)
        for reply in _replies(run)
        for piece in reply.replace("<|COMPLETE|>", "").split("##")
        if (m := re.match(r'\("(entity|relationship)"', piece.strip()))
    )
    assert pieces["entity"] == README_ENTITY_RECORDS[run]
    assert pieces["relationship"] >= README_RELATION_RECORDS[run]
    _, entities, relations, _, _ = CAROL_EXPECTED[run]
    assert entities >= pieces["entity"] and relations >= pieces["relationship"]


def test_christmas_carol_record_defects_are_repaired() -> None:
    fixture = _replies("upstream-test-fixture")
    graphs = [parse_reply(reply)[0] for reply in fixture]
    names = {e.name for g in graphs for e in g.entities}
    assert "Charles Dickens" in names
    assert all(not n.startswith(("(", '"', "**", "1.")) for n in names)
    strengths = {r.strength for g in graphs for r in g.relationships}
    assert 6.5 in strengths and None not in strengths
    descriptions = [r.description for g in graphs for r in g.relationships]
    assert all("<|>" not in d and "|>" not in d for d in descriptions)


def _t2kg(model: str, split: str) -> list[dict[str, object]]:
    rows = []
    for path in sorted(T2KG.glob(f"{model}/**/llm_responses/*.jsonl")):
        if ("unseen" in path.parts) == (split == "unseen"):
            with path.open(encoding="utf-8") as lines:
                rows += [json.loads(line) for line in lines]
    return rows


@pytest.mark.parametrize(("model", "split"), sorted(T2KG_EXPECTED))
def test_text2kgbench_counts(model: str, split: str) -> None:
    rows = _t2kg(model, split)
    relations = malformed = with_items = 0
    for row in rows:
        parsed = parse_reply_lenient(str(row["response"]))
        assert not parsed.graph.entities
        relations += len(parsed.graph.relationships)
        malformed += len(parsed.rejected)
        with_items += bool(parsed.items)
    assert (len(rows), relations, malformed, with_items) == T2KG_EXPECTED[(model, split)]


def test_text2kgbench_triples_match_the_authors_parse_where_well_formed() -> None:
    rows = _t2kg("Vicuna-13B", "test")
    agree = total = 0
    for row in rows:
        ours = {
            (r.source, r.relation, r.target)
            for r in parse_reply_lenient(str(row["response"])).graph.relationships
        }
        theirs = {
            (s.strip(), rel.strip(), o.strip())
            for s, rel, o in row["triples"]  # type: ignore[attr-defined]
            if s.strip() and o.strip() and "(" not in s + o
        }
        total += len(theirs)
        agree += len(theirs & ours)
    assert total > 7000
    assert agree / total > 0.97
