"""RAG context: line formats, the token budget, cuts at character boundaries, and
Engine.context with the embedder's token counter."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgsearch.engine import Engine
from kgsearch.errors import InvalidRequest
from kgsearch.model import ChunkIn, ObjectIn, RelationshipIn
from kgsearch.search.context import format_context, format_line
from kgsearch.search.request import GraphResult, RelationshipResult, TextResult
from kgsearch.testing import FakeEmbedder

Result = GraphResult | RelationshipResult | TextResult


def words(text: str) -> int:
    """A whitespace token counter."""
    return len(text.split())


def utf8_bytes(text: str) -> int:
    """A counter that charges every UTF-8 byte, so a cut inside a character would show."""
    return len(text.encode("utf-8"))


def person(name: str = "Ada", **fields: object) -> GraphResult:
    return GraphResult(
        id="o1", score=1.0, object_type="Person", key="ada", name=name, fields=fields
    )


def triplet(text: str) -> RelationshipResult:
    return RelationshipResult(
        id="r1",
        score=1.0,
        relationship_type="works_for",
        triplet_text=text,
        source_id="o1",
        target_id="o2",
    )


def chunk(text: str, id: str = "c1") -> TextResult:
    return TextResult(id=id, score=1.0, snippet=text)


# --- line formats -----------------------------------------------------------------------


def test_object_line_has_type_name_and_sorted_fields() -> None:
    line = format_line(person(role="CEO", company="Acme"))
    assert line == "- **Person**: Ada — company=Acme, role=CEO"


def test_object_line_without_fields_has_no_dash() -> None:
    assert format_line(person()) == "- **Person**: Ada"


def test_object_line_skips_empty_field_values() -> None:
    assert format_line(person(a="", b=None, c=[], d={}, e=0)) == "- **Person**: Ada — e=0"


def test_object_line_joins_lists_and_writes_dicts_as_sorted_json() -> None:
    line = format_line(person(tags=["x", "y"], meta={"b": 1, "a": "é"}))
    assert line == '- **Person**: Ada — meta={"a": "é", "b": 1}, tags=x, y'


def test_object_line_shortens_long_field_values_to_80_characters() -> None:
    assert format_line(person(bio="x" * 100)) == "- **Person**: Ada — bio=" + "x" * 79 + "…"


def test_relationship_line_is_its_triplet_text() -> None:
    assert format_line(triplet("Ada works for Acme")) == "- Ada works for Acme"


def test_chunk_line_is_its_snippet_with_whitespace_collapsed() -> None:
    assert format_line(chunk("Ada\n  leads\tAcme.  ")) == "- Ada leads Acme."


# --- budget -----------------------------------------------------------------------------

RESULTS: list[Result] = [
    person(role="CEO"),  # 5 words
    triplet("Ada works for Acme"),  # 5 words
    chunk("the quick brown fox jumps"),  # 6 words
]


def test_context_joins_lines_best_first_when_everything_fits() -> None:
    assert format_context(RESULTS, max_tokens=100, count_tokens=words) == (
        "- **Person**: Ada — role=CEO\n- Ada works for Acme\n- the quick brown fox jumps"
    )


def test_context_stops_at_the_budget_and_shortens_the_last_line() -> None:
    assert format_context(RESULTS, max_tokens=13, count_tokens=words) == (
        "- **Person**: Ada — role=CEO\n- Ada works for Acme\n- the quick…"
    )


def test_context_with_a_budget_that_fits_whole_lines_exactly() -> None:
    assert format_context(RESULTS, max_tokens=10, count_tokens=words) == (
        "- **Person**: Ada — role=CEO\n- Ada works for Acme"
    )


def test_context_is_empty_when_nothing_fits() -> None:
    assert format_context(RESULTS, max_tokens=1, count_tokens=words) == ""


def test_context_of_no_results_is_empty() -> None:
    assert format_context([], max_tokens=100, count_tokens=words) == ""


@pytest.mark.parametrize("budget", range(1, 20))
def test_context_never_exceeds_the_budget(budget: int) -> None:
    text = format_context(RESULTS, max_tokens=budget, count_tokens=words)
    assert words(text) <= budget


# --- character boundaries ---------------------------------------------------------------


def assert_prefix_lines(text: str, results: Sequence[Result]) -> None:
    """Every line is a whole result line, except that the last may be a prefix plus '…'."""
    if not text:
        return
    full = [format_line(r) for r in results]
    lines = text.split("\n")
    assert lines[:-1] == full[: len(lines) - 1]
    last, whole = lines[-1], full[len(lines) - 1]
    assert last == whole or (last.endswith("…") and whole.startswith(last[:-1]))


EMOJI = [
    chunk("👩‍💻 codes 🚀 fast 🇫🇷 à Paris — ünïcödé 北京 القاهرة", id="c1"),
    chunk("𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ☃ snow 🧑🏽‍🚀 astronaut", id="c2"),
]


@pytest.mark.parametrize("budget", range(1, 120, 7))
def test_emoji_context_is_cut_between_characters(budget: int) -> None:
    text = format_context(EMOJI, max_tokens=budget, count_tokens=utf8_bytes)
    assert utf8_bytes(text) <= budget
    assert text.encode("utf-8").decode("utf-8") == text
    assert_prefix_lines(text, EMOJI)


_LINE_TEXT = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\n\r"),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(_LINE_TEXT, min_size=1, max_size=5),
    budget=st.integers(min_value=1, max_value=200),
)
def test_any_unicode_context_is_within_budget_and_made_of_prefixes(
    texts: list[str], budget: int
) -> None:
    results: list[Result] = [triplet(t) for t in texts]
    text = format_context(results, max_tokens=budget, count_tokens=utf8_bytes)
    assert utf8_bytes(text) <= budget
    assert_prefix_lines(text, results)


# --- Engine.context ---------------------------------------------------------------------


def _graph(engine: Engine, *, documents: bool = True) -> None:
    objs = engine.add_objects(
        [
            ObjectIn(type="Person", key="ada", properties={"name": "Ada Lovelace", "role": "CEO"}),
            ObjectIn(type="Company", key="acme", properties={"name": "Acme"}),
        ]
    )
    engine.add_relationships(
        [RelationshipIn(type="works_for", source=objs[0].id, target=objs[1].id)]
    )
    if documents:
        engine.add_chunks([ChunkIn(id="c1", text=_CHUNK)])
    engine.embed_pending()


_CHUNK = "Ada Lovelace leads Acme as CEO, and 🚀 ships fast."


def test_engine_context_of_a_graph_without_documents_is_its_lines(engine: Engine) -> None:
    _graph(engine, documents=False)
    value = engine.context("Ada Lovelace Acme", max_tokens=1000)
    results = engine.search("Ada Lovelace Acme").results
    assert value.context == "\n".join(format_line(r) for r in results)
    assert value.results == len(results)


def test_engine_context_of_documents_leads_with_the_passages(engine: Engine) -> None:
    _graph(engine)
    value = engine.context("Ada Lovelace Acme", max_tokens=1000)
    results = engine.search("Ada Lovelace Acme").results
    others = [format_line(r) for r in results if not isinstance(r, TextResult)]
    assert value.context.splitlines() == [f"- {_CHUNK}", *others]
    assert value.results == len(results)


@pytest.mark.parametrize("budget", [1, 3, 5, 8, 13, 21])
def test_engine_context_respects_the_embedders_token_budget(engine: Engine, budget: int) -> None:
    _graph(engine, documents=False)
    value = engine.context("Ada Lovelace Acme", max_tokens=budget)
    count = FakeEmbedder(32).count_tokens
    assert value.tokens == count(value.context)
    assert value.tokens <= budget
    assert value.context == format_context(
        engine.search("Ada Lovelace Acme").results, max_tokens=budget, count_tokens=count
    )


@pytest.mark.parametrize("budget", [1, 3, 5, 8, 13, 21, 40])
def test_engine_context_of_documents_keeps_to_the_budget(engine: Engine, budget: int) -> None:
    _graph(engine)
    value = engine.context("Ada Lovelace Acme", max_tokens=budget, style="sections")
    assert value.tokens == FakeEmbedder(32).count_tokens(value.context) <= budget


def test_engine_context_includes_the_search_metadata(engine: Engine) -> None:
    _graph(engine)
    value = engine.context("Ada", max_tokens=50, result_types="text")
    assert (value.metadata["totalResults"], value.metadata["textResultCount"]) == (1, 1)


@pytest.mark.parametrize("budget", [0, 100_001])
def test_engine_context_rejects_an_out_of_range_budget(engine: Engine, budget: int) -> None:
    with pytest.raises(InvalidRequest):
        engine.context("Ada", max_tokens=budget)


def test_engine_context_of_an_empty_store_is_empty(engine: Engine) -> None:
    value = engine.context("Ada", max_tokens=50)
    assert (value.context, value.tokens, value.results) == ("", 0, 0)
