"""Offline temporal facts: the DATE entities the dependency parse attaches to the word
that states a fact become its validity, with the real pinned spaCy pipeline. The
sentences marked as such are from the 2WikiMultihopQA corpus (Apache-2.0; eval-data
``2wikimultihopqa-hipporag``)."""

from __future__ import annotations

import pytest

from kgsearch.extract.schema import ChunkText
from kgsearch.extract.spacy import SpacyExtractor


@pytest.fixture(scope="module")
def extractor() -> SpacyExtractor:
    return SpacyExtractor()


def dated(
    extractor: SpacyExtractor, text: str
) -> dict[tuple[str, str, str], tuple[str | None, str | None]]:
    (result,) = extractor.extract([ChunkText("c", text)])
    assert result.error is None
    return {
        (r.source, r.relation, r.target): (r.valid_from, r.valid_to)
        for r in result.graph.relationships
    }


@pytest.mark.parametrize(
    ("text", "fact", "when"),
    [
        (
            "Tim Cook became CEO of Apple in 2011.",
            ("Tim Cook", "become ceo of", "Apple"),
            ("2011", None),
        ),
        (
            "Steve Jobs was the CEO of Apple until 2011.",
            ("Steve Jobs", "be ceo of", "Apple"),
            (None, "2011"),
        ),
        (  # 2Wiki, "Elisa Godínez Gómez de Batista"
            "Elisa Godínez Gómez de Batista (c. 1905 – June 19, 1993) was the First Lady of "
            "Cuba from 1940 to 1944.",
            ("Elisa Godínez Gómez de Batista", "be lady of", "Cuba"),
            ("1940", "1944"),
        ),
        (  # 2Wiki, "Marta Fernandez Miranda de Batista": the birth date is not the fact's
            "Marta Fernández Miranda de Batista (November 11, 1923 – October 2, 2006) was "
            "First Lady of Cuba from 1952 until 1959.",
            ("Marta Fernández Miranda de Batista", "be lady of", "Cuba"),
            ("1952", "1959"),
        ),
        (  # 2Wiki, "Elisa Godínez Gómez de Batista": no date, none made up
            "Elisa Godínez was the First Lady of Cuba. She was the first wife of Cuban "
            "President Fulgencio Batista.",
            ("Elisa Godínez", "be wife of", "Fulgencio Batista"),
            (None, None),
        ),
    ],
)
def test_dates_attached_to_the_stating_word_date_the_fact(
    extractor: SpacyExtractor,
    text: str,
    fact: tuple[str, str, str],
    when: tuple[str | None, str | None],
) -> None:
    assert dated(extractor, text)[fact] == when


def test_two_names_side_by_side_take_no_date(extractor: SpacyExtractor) -> None:
    found = dated(extractor, "Serena Evans was born on 2 December 1959 in London, England.")
    assert found[("London", "located in", "England")] == (None, None)
