"""Dates as models and texts write them, normalised to ISO at their own precision; the
periods they name; what a parsed reply and the schema filter make of a fact's dates."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kgsearch.extract.conform import conform
from kgsearch.extract.dates import normalise_date, period_end, period_start, split_range
from kgsearch.extract.ontology import GraphSchema
from kgsearch.extract.parse import parse_reply
from kgsearch.extract.schema import ExtractedGraph, ExtractedRelation


@pytest.mark.parametrize(
    ("written", "start", "end"),
    [
        ("1999", "1999", "1999"),
        (2011, "2011", "2011"),
        ("875", "0875", "0875"),
        ("March 2019", "2019-03", "2019-03"),
        ("Sept. 2001", "2001-09", "2001-09"),
        ("2019-03-04", "2019-03-04", "2019-03-04"),
        ("2019-03", "2019-03", "2019-03"),
        ("2019/03/04", "2019-03-04", "2019-03-04"),
        ("2019-03-04T10:00:00Z", "2019-03-04", "2019-03-04"),
        ("4 March 2019", "2019-03-04", "2019-03-04"),
        ("4th of March 2019", "2019-03-04", "2019-03-04"),
        ("March 4, 2019", "2019-03-04", "2019-03-04"),
        ("29 June 2002", "2002-06-29", "2002-06-29"),
        ("the 1990s", "1990", "1999"),
        ("1990's", "1990", "1999"),
        ("the 17th century", "1600", "1699"),
        ("c. 1500", "1500", "1500"),
        ("circa 1500 AD", "1500", "1500"),
        ("1664–1667", "1664", "1667"),
        ("1991 to 1996", "1991", "1996"),
        ("between 1690 and 1693", "1690", "1693"),
        ("2010-2015", "2010", "2015"),
    ],
)
def test_dates_normalise_to_their_precision(written: object, start: str, end: str) -> None:
    assert normalise_date(written) == start
    assert normalise_date(written, end=True) == end


@pytest.mark.parametrize(
    "written",
    [
        "",
        "present",
        "now",
        "300 BC",
        "February 30, 2001",
        "2019-13-01",
        "0",
        "year zero",
        None,
        True,
        3.5,
        ["2019"],
        "x" * 200,
        "in the reign of Philip IV",
    ],
)
def test_what_is_no_date_is_none(written: object) -> None:
    assert normalise_date(written) is None


def test_periods_start_at_their_first_instant_and_end_after_their_last() -> None:
    assert period_start("1667") == datetime(1667, 1, 1, tzinfo=UTC)
    assert period_end("1667") == datetime(1668, 1, 1, tzinfo=UTC)
    assert period_end("2002-12") == datetime(2003, 1, 1, tzinfo=UTC)
    assert period_end("2002-06-27") == datetime(2002, 6, 28, tzinfo=UTC)
    assert period_end("the 1990s") == datetime(2000, 1, 1, tzinfo=UTC)
    assert period_end("9999") == datetime.max.replace(tzinfo=UTC)
    assert period_start("someday") is None and period_end("someday") is None


def test_ranges_split_only_into_two_dates() -> None:
    assert split_range("from 1664 to 1667") == ("1664", "1667")
    assert split_range("29 August 2000 to 27 June 2002") == ("29 august 2000", "27 june 2002")
    assert split_range("Bill and Ted") is None and split_range("1667") is None


def test_a_relation_keeps_only_readable_dates() -> None:
    rel = ExtractedRelation(source="a", target="b", valid_from="June 2002", valid_to="present")
    assert (rel.valid_from, rel.valid_to) == ("2002-06", None)
    assert "valid_to" not in rel.model_dump()  # unset dates stay out of stored records
    assert "valid_from" not in ExtractedRelation(source="a", target="b").model_dump()


def test_the_parser_reads_dates_their_aliases_and_their_absence() -> None:
    reply = """{"entities": [{"name": "Togo", "type": "country"},
      {"name": "Koffi Sama", "type": "person"}, {"name": "Kodjo", "type": "person"}],
     "relationships": [
      {"source": "Togo", "target": "Koffi Sama", "relation": "head of government",
       "description": "Sama was Prime Minister of Togo.",
       "valid_from": "29 June 2002", "valid_to": "2005-06-09"},
      {"source": "Togo", "target": "Kodjo", "relation": "head of government",
       "description": "Kodjo was Prime Minister.", "valid_at": "2000-08-29T00:00:00Z",
       "invalid_at": "the end of the war"},
      {"source": "Kodjo", "target": "Togo", "relation": "citizen of",
       "description": "Kodjo is Togolese."}]}"""
    graph, rejected = parse_reply(reply)
    assert not rejected
    dates = [(r.valid_from, r.valid_to) for r in graph.relationships]
    assert dates == [("2002-06-29", "2005-06-09"), ("2000-08-29", None), (None, None)]


def test_the_schema_filter_marks_single_valued_relations() -> None:
    schema = GraphSchema.model_validate(
        {
            "relation_types": [
                {"name": "head of government", "single_valued": True},
                {"name": "citizen of"},
            ]
        }
    )
    graph = ExtractedGraph(
        relationships=[
            ExtractedRelation(source="Togo", target="Sama", relation="Head_of_government"),
            ExtractedRelation(source="Sama", target="Togo", relation="citizen of"),
        ]
    )
    kept = conform(graph, schema).graph.relationships
    assert [(r.relation, r.one_value_per) for r in kept] == [
        ("head of government", "source"),
        ("citizen of", None),
    ]
    # a reply cannot set it: only schema fields are read
    parsed, _ = parse_reply(
        '{"relationships": [{"source": "a", "target": "b", "one_value_per": "source"}]}'
    )
    assert parsed.relationships[0].one_value_per is None
