"""Passages are the evidence (issue 30 #4): packing whole passages first, the extractive
offline answer, and the context of a graph built from documents end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgsearch import ChunkIn, Engine, ObjectIn, RelationshipIn
from kgsearch.search.context import Passage, format_sections, pack_evidence, sentences
from kgsearch.search.extractive import best_sentences, extractive_answer
from kgsearch.search.request import GraphResult, RelationshipResult, TextResult
from kgsearch.search.service import DocumentsCache, _evidence_results
from kgsearch.store import connect
from kgsearch.testing import FakeEmbedder, FakeExtractor

Result = GraphResult | RelationshipResult | TextResult


def words(text: str) -> int:
    """A whitespace token counter."""
    return len(text.split())


def text_hit(id: str) -> TextResult:
    return TextResult(id=id, score=1.0, snippet=f"snippet of {id}")


def fact(id: str, text: str) -> RelationshipResult:
    return RelationshipResult(
        id=id,
        score=1.0,
        relationship_type="co_occurs",
        triplet_text=text,
        source_id="o1",
        target_id="o2",
    )


def body(n: int, word: str = "word") -> str:
    return " ".join([word] * (n - 1)) + "."


# --- packing ----------------------------------------------------------------------------


def test_passages_have_the_budget_first_and_facts_fill_what_they_leave() -> None:
    results: list[Result] = [
        fact("r1", "Radio co_occurs Arcade"),
        *(text_hit(f"c{i}") for i in range(6)),
    ]
    passages = {f"c{i}": Passage(text=body(30, f"p{i}")) for i in range(6)}

    text, _ = pack_evidence(results, passages, max_tokens=100, count_tokens=words)

    sources, relationships = text.split("\n\n")
    assert "[S3]" in sources and "[S4]" not in sources  # three passages of 31 words
    assert relationships == "## Relationships\n[R1] Radio co_occurs Arcade"


def test_passages_are_packed_whole_with_title_and_section_not_as_snippets() -> None:
    results: list[Result] = [text_hit("c1")]
    passages = {"c1": Passage(text=body(300), title="Guide", section="Install > Linux")}

    text, citations = pack_evidence(
        results, passages, max_tokens=1000, count_tokens=words, cited=True
    )

    assert text == f"## Sources\n[S1] (Guide › Install > Linux) {body(300)}"
    assert citations == {"S1": "c1"}


def test_a_passage_that_does_not_fit_is_skipped_for_a_smaller_one() -> None:
    results: list[Result] = [text_hit("a"), text_hit("big"), text_hit("c")]
    passages = {
        "a": Passage(text=body(20, "alpha")),
        "big": Passage(text=body(60, "beta")),
        "c": Passage(text=body(20, "gamma")),
    }

    text, citations = pack_evidence(results, passages, max_tokens=50, count_tokens=words)

    assert words(text) <= 50
    assert "beta" not in text and "…" not in text
    assert text.splitlines() == [
        "## Sources",
        f"[S1] {body(20, 'alpha')}",
        f"[S2] {body(20, 'gamma')}",
    ]
    assert citations == {"S1": "a", "S2": "c"}


def test_the_first_passage_alone_over_the_budget_is_cut_at_a_sentence_boundary() -> None:
    long = "One two three four five. Six seven eight nine ten. Eleven twelve thirteen."
    results: list[Result] = [text_hit("c1"), text_hit("c2")]
    passages = {"c1": Passage(text=long), "c2": Passage(text=body(40))}

    text, _ = pack_evidence(results, passages, max_tokens=14, count_tokens=words)

    assert text == "## Sources\n[S1] One two three four five. Six seven eight nine ten."


@pytest.mark.parametrize("budget", [1, 5, 9, 17, 30, 64, 200])
def test_the_budget_is_never_exceeded(budget: int) -> None:
    results: list[Result] = [
        text_hit("c1"),
        fact("r1", "Ada works for Acme"),
        text_hit("c2"),
        fact("r2", "Acme is in London"),
    ]
    passages = {"c1": Passage(text=body(25), title="T"), "c2": Passage(text=body(8))}

    for cited in (True, False):
        text, _ = pack_evidence(
            results, passages, max_tokens=budget, count_tokens=words, cited=cited
        )
        assert words(text) <= budget


def test_facts_are_cited_beside_the_passages_in_their_share_of_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("kgsearch.search.context.FACT_SHARE", 0.2)
    results: list[Result] = [
        fact("r1", "Radio co_occurs Arcade"),
        fact("r2", "Radio co_occurs PlayStation"),
        *(text_hit(f"c{i}") for i in range(6)),
    ]
    passages = {f"c{i}": Passage(text=body(20, f"p{i}")) for i in range(6)}

    text, citations = pack_evidence(results, passages, max_tokens=100, count_tokens=words)

    sources, relationships = text.split("\n\n")
    assert sources.startswith("## Sources\n[S1] p0") and "[S3]" in sources
    assert relationships == (
        "## Relationships\n[R1] Radio co_occurs Arcade\n[R2] Radio co_occurs PlayStation"
    )
    assert citations["R1"] == "r1" and citations["S1"] == "c0"
    assert words(text) <= 100


def test_uncited_lines_put_the_passages_first() -> None:
    results: list[Result] = [fact("r1", "Ada works for Acme"), text_hit("c1")]
    passages = {"c1": Passage(text="Ada joined Acme in 1843.", title="Notes")}

    text, citations = pack_evidence(
        results, passages, max_tokens=100, count_tokens=words, cited=False
    )

    assert text == "- (Notes) Ada joined Acme in 1843.\n- Ada works for Acme"
    assert citations == {}


def test_sentences_split_after_end_punctuation() -> None:
    assert sentences("It is 3.5 m long. Is it? Yes!  Done") == [
        "It is 3.5 m long.",
        "Is it?",
        "Yes!",
        "Done",
    ]


# --- extractive answers -------------------------------------------------------------------


def test_the_best_sentence_is_quoted_with_its_passage_cited() -> None:
    passages = [
        ("S1", "Radio waves travel far. Arcade games were popular in 1990."),
        ("S2", "Eric founded it. Two Dollar Radio is based in Columbus, Ohio."),
    ]

    text, cites = extractive_answer(
        "Where is Two Dollar Radio based?", passages, {"S2": "Notes › Two Dollar Radio"}
    )

    lines = text.splitlines()
    assert lines[1] == "- Two Dollar Radio is based in Columbus, Ohio. [S2]"
    assert cites[0] == "S2"
    assert "[S2] Notes › Two Dollar Radio" in lines[lines.index("Sources:") :]


def test_a_fact_of_the_context_can_be_quoted_beside_the_passages() -> None:
    text, cites = extractive_answer(
        "who does Ada work for",
        [("S1", "Ada wrote the first program.")],
        {"S1": "Notes"},
        facts=[("R1", "Ada Lovelace works for Acme Corp")],
    )

    # the passage shares one word of three: under MIN_SHARE of the fact's score
    assert text.splitlines()[1:] == [
        "- Ada Lovelace works for Acme Corp [R1]",
        "",
        "Sources:",
        "[S1] Notes",  # only a fact quoted: the best passage is still listed
    ]
    assert cites == ["R1"]


def test_sentences_sharing_no_word_with_the_question_are_not_quoted() -> None:
    chosen = best_sentences(
        "who founded Acme", [("S1", "Acme was founded by Ada. The sky is blue today.")]
    )
    assert [s.text for s in chosen] == ["Acme was founded by Ada."]


def test_no_shared_word_says_so_and_quotes_the_best_passage() -> None:
    text, cites = extractive_answer("Where?", [("S1", "Columbus is a city. It is in Ohio.")], {})

    assert text.splitlines()[0].startswith("No sentence of the passages found shares a word")
    assert text.splitlines()[1] == "- Columbus is a city. [S1]"
    assert cites == ["S1"]


# --- end to end: a graph built from documents -----------------------------------------------

NOTES = {
    "press.md": (
        "## Two Dollar Radio\n\n"
        "Two Dollar Radio is an independent publisher founded by Eric Obenauf and Eliza "
        "Wood. Two Dollar Radio is based in Columbus, Ohio.\n"
    ),
    "games.md": (
        "## Formula One Arcade\n\n"
        "Formula One Arcade for PlayStation came from Studio Liverpool. Formula One "
        "Arcade, Two Dollar Radio, PlayStation, Sony, Studio Liverpool and Radio Tokyo "
        "were named in Radio Magazine.\n"
    ),
    "radio.md": (
        "## Radio Days\n\n"
        "Radio Days, Two Dollar Radio, Dollar Tree and Radio Tokyo appear in Radio Days "
        "Weekly. Radio Tokyo met Dollar Tree and Two Dollar Radio at Radio Days.\n"
    ),
}
QUESTION = "Where is Two Dollar Radio based?"


@pytest.fixture
def documents(tmp_path: Path) -> Engine:
    for name, text in NOTES.items():
        (tmp_path / "notes" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "notes" / name).write_text(text, encoding="utf-8")
    engine = Engine(
        connect(f"sqlite:///{tmp_path / 'kg.db'}"),
        embedder=FakeEmbedder(32),
        extractors=lambda name, domain: FakeExtractor(),
    )
    engine.ingest(sorted((tmp_path / "notes").glob("*.md")))
    engine.embed_pending()
    return engine


ANSWER = "Two Dollar Radio is based in Columbus, Ohio."


@pytest.mark.parametrize("recipe", [None, "mix"])
def test_the_answering_passage_leads_the_context(documents: Engine, recipe: str | None) -> None:
    options = {"recipe": recipe} if recipe else {}
    with documents:
        found = documents.context(QUESTION, max_tokens=300, style="sections", **options)

    lines = found.context.splitlines()
    assert lines[0] == "## Sources"
    assert lines[1].startswith("[S1] (press.md › Two Dollar Radio) ") and ANSWER in lines[1]
    assert found.tokens <= 300


@pytest.mark.parametrize("recipe", ["local", "global", "hybrid", "multi_hop", "expand"])
def test_the_answering_passage_is_in_the_context_whatever_the_recipe(
    documents: Engine, recipe: str
) -> None:
    with documents:
        found = documents.context(QUESTION, max_tokens=300, style="sections", recipe=recipe)

    assert found.context.startswith("## Sources\n[S")
    assert ANSWER in found.context


def test_ask_offline_quotes_the_answer_from_the_documents(documents: Engine) -> None:
    with documents:
        answer = documents.ask(QUESTION, llm=False)

    assert answer.answer.splitlines()[1] == f"- {ANSWER} [S1]"
    assert "Sources:\n[S1] press.md" in answer.answer
    chunks = [r for r in answer.references if r.cited and r.kind == "chunk"]
    assert chunks[0].cite == "S1" and chunks[0].text.startswith("(press.md › Two Dollar Radio)")


def test_the_evidence_leg_ranks_the_passages_the_entities_point_to(documents: Engine) -> None:
    with documents:
        response = documents.search(QUESTION, include_debug=True)

    legs = {h.leg for r in response.results for h in r.found_by}
    assert "graph:evidence" in legs


def test_a_graph_without_documents_keeps_its_context() -> None:
    with Engine(connect(":memory:"), embedder=FakeEmbedder(32)) as engine:
        radio, ohio = engine.add_objects(
            [
                ObjectIn(type="Org", key="tdr", properties={"name": "Two Dollar Radio"}),
                ObjectIn(type="Place", key="oh", properties={"name": "Columbus, Ohio"}),
            ]
        )
        engine.add_relationships([RelationshipIn(type="BASED_IN", source=radio.id, target=ohio.id)])
        engine.embed_pending()
        count = engine.embedder.count_tokens

        found = engine.context(QUESTION, max_tokens=60, style="sections")
        results = engine.search(QUESTION).results

    assert found.context == format_sections(results, max_tokens=60, count_tokens=count)[0]
    assert found.context.startswith("## Entities")
    assert "graph:evidence" not in {h.leg for r in results for h in r.found_by}


def test_the_check_for_documents_is_cached_per_project() -> None:
    with Engine(connect(":memory:"), embedder=FakeEmbedder(32)) as engine:
        now = [0.0]
        cache = DocumentsCache(engine.store, ttl=5.0, clock=lambda: now[0])
        assert cache.get("default") is False
        engine.add_chunks([ChunkIn(id="c1", text="Ada wrote the first program.")])
        assert cache.get("default") is False  # trusted for ttl seconds
        now[0] = 5.0
        assert (cache.get("default"), cache.get("other")) == (True, False)


def test_a_fact_its_passage_states_is_quoted_as_the_passages_sentence() -> None:
    from kgsearch.search.extractive import best_sentences

    sentence = "Hans Edler (born in Björkhagen, Stockholm, Sweden on 23 March 1945) is a musician."
    fact = ("R1", "Hans Edler born in Björkhagen: Hans Edler (born in Björkhagen, Stockholm")
    chosen = best_sentences("Where was Hans Edler born?", [("S1", sentence)], [fact])
    assert [(s.cite, s.text) for s in chosen] == [("S1", sentence)]
    # a fact whose passage is not in the context still competes
    alone = best_sentences("Where was Hans Edler born?", [("S1", "Stockholm is big.")], [fact])
    assert alone[0].cite == "R1"


def test_the_limit_counts_passages_and_facts_apart() -> None:
    hits: list[Result] = [
        fact("r1", "a"),
        fact("r2", "b"),
        text_hit("c1"),
        fact("r3", "c"),
        text_hit("c2"),
        text_hit("c3"),
    ]

    kept = _evidence_results(hits, 2)

    assert [r.id for r in kept] == ["r1", "r2", "c1", "c2"]


def test_facts_ranked_first_do_not_take_the_passages_place(documents: Engine) -> None:
    with documents:
        top = documents.search(QUESTION, limit=2, result_types="both").results
        found = documents.context(
            QUESTION, max_tokens=1000, style="sections", limit=2, result_types="both"
        )

    assert sum(isinstance(r, TextResult) for r in top) < 2  # facts outrank the passages
    sources = [c for c in found.citations if c.startswith("S")]
    assert len(sources) == 2, found.context
    assert ANSWER in found.context


def test_the_context_is_the_same_from_run_to_run(tmp_path: Path) -> None:
    # issue 35 papercut #16: tied results must not swap places between runs (each run
    # a fresh engine over the same store, as `make demo` twice)
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(6):  # six identical passages under different titles: all tied
        (notes / f"n{i}.md").write_text(
            f"## Note {i}\n\nTwo Dollar Radio is based in Columbus, Ohio.\n", encoding="utf-8"
        )
    url = f"sqlite:///{tmp_path / 'kg.db'}"

    def engine() -> Engine:
        return Engine(
            connect(url), embedder=FakeEmbedder(32), extractors=lambda n, d: FakeExtractor()
        )

    with engine() as first:
        first.ingest(sorted(notes.glob("*.md")))
        first.embed_pending()
    runs = []
    for _ in range(3):
        with engine() as again:
            runs.append(again.context(QUESTION, max_tokens=400, style="sections").context)

    assert runs[0] == runs[1] == runs[2]
    assert runs[0].count("Columbus, Ohio") >= 3
