"""Typed facts, entity screening and coreference of SpacyExtractor, on small sentences
with the real pinned spaCy pipeline."""

from __future__ import annotations

import pytest

from kgsearch.extract.schema import ChunkText, ExtractedGraph
from kgsearch.extract.spacy import SpacyExtractor


@pytest.fixture(scope="module")
def extractor() -> SpacyExtractor:
    return SpacyExtractor()


@pytest.fixture(scope="module")
def unresolved(extractor: SpacyExtractor) -> SpacyExtractor:
    other = SpacyExtractor(resolve=False)
    other._nlp = extractor.nlp  # share the loaded pipeline
    return other


def graph(extractor: SpacyExtractor, text: str) -> ExtractedGraph:
    (result,) = extractor.extract([ChunkText("c", text)])
    assert result.error is None
    return result.graph


def triples(extractor: SpacyExtractor, text: str) -> list[tuple[str, str, str]]:
    return [(r.source, r.relation, r.target) for r in graph(extractor, text).relationships]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Marie Curie was born in Warsaw.", [("Marie Curie", "born in", "Warsaw")]),
        ("Kraft Foods is based in Chicago.", [("Kraft Foods", "base in", "Chicago")]),
        ("Apple was founded by Steve Jobs.", [("Steve Jobs", "found", "Apple")]),
        (
            "Ringo Starr was a member of the Beatles.",
            [("Ringo Starr", "be member of", "Beatles")],
        ),
        (
            "The Louvre is located in Paris.",
            [("Louvre", "locate in", "Paris")],
        ),
        ("Paris is the capital of France.", [("Paris", "be capital of", "France")]),
        ("Tim Cook, the CEO of Apple, spoke.", [("Tim Cook", "ceo of", "Apple")]),
        (
            "Apple's CEO Tim Cook visited Paris.",
            [("Tim Cook", "ceo of", "Apple"), ("Tim Cook", "visit", "Paris")],
        ),
        (
            "Marie Curie, a French physicist, won.",
            [("Marie Curie", "physicist", "French")],
        ),
        ("The label is based in Columbus, Ohio.", [("Columbus", "located in", "Ohio")]),
    ],
)
def test_a_stated_fact_becomes_a_typed_relationship(
    extractor: SpacyExtractor, text: str, expected: list[tuple[str, str, str]]
) -> None:
    assert triples(extractor, text) == expected


def test_two_people_joined_by_a_copula_are_no_fact(extractor: SpacyExtractor) -> None:
    assert triples(extractor, "Emilio Estevez is Pat Hingle.") == []


def test_a_parenthesised_place_is_no_location(extractor: SpacyExtractor) -> None:
    assert ("Kristiania", "located in", "Oslo") not in triples(
        extractor, "He died in Kristiania (now Oslo), Norway."
    )


def test_description_is_the_stating_span_and_evidence_the_sentence(
    extractor: SpacyExtractor,
) -> None:
    text = "In 1867, after a long and difficult journey, Marie Curie was born in Warsaw."
    (relation,) = graph(extractor, text).relationships
    assert (relation.description, relation.evidence) == ("Marie Curie was born in Warsaw", text)


def test_a_long_stating_span_is_cut_to_the_source_and_the_verb_phrase(
    extractor: SpacyExtractor,
) -> None:
    text = (
        "Marie Curie, who had studied for many years with great determination and "
        "against the wishes of several teachers and the rules of the time, was born in Warsaw."
    )
    (relation,) = graph(extractor, text).relationships
    assert relation.description == "Marie Curie … born in Warsaw"


def test_code_words_numbers_and_pronouns_are_no_entities(extractor: SpacyExtractor) -> None:
    text = "Returns NULL if the value is False. Integer and os.path are types. She met 42."
    assert [e.name for e in graph(extractor, text).entities] == []


def test_a_pronoun_subject_is_resolved_to_the_recent_person(
    extractor: SpacyExtractor, unresolved: SpacyExtractor
) -> None:
    text = "Marie Curie studied physics. She was born in Warsaw."
    assert triples(unresolved, text) == []
    facts = graph(extractor, text).relationships
    assert [(r.source, r.relation, r.target, r.description) for r in facts] == [
        ("Marie Curie", "born in", "Warsaw", "Marie Curie was born in Warsaw")
    ]


def test_it_is_resolved_to_the_topic_of_the_text(extractor: SpacyExtractor) -> None:
    text = "Apple is a technology company. It was founded by Steve Jobs."
    assert triples(extractor, text) == [("Steve Jobs", "found", "Apple")]


def test_an_expletive_it_is_not_resolved(extractor: SpacyExtractor) -> None:
    text = "Apple is a company. It is said that Google bought Fitbit."
    assert [t for t in triples(extractor, text) if t[0] == "Apple"] == []


def test_a_short_name_is_the_longer_name_before_it(extractor: SpacyExtractor) -> None:
    text = "Marie Curie studied physics. In 1891 Curie moved to Paris."
    result = graph(extractor, text)
    assert [e.name for e in result.entities] == ["Marie Curie", "Paris"]
    assert triples(extractor, text) == [("Marie Curie", "move to", "Paris")]


def test_a_parenthesised_acronym_is_an_alias_not_a_relationship(
    extractor: SpacyExtractor,
) -> None:
    text = (
        "The Energy and Environmental Security Initiative (EESI) is an institute. "
        "EESI was founded by Ted Smith."
    )
    result = graph(extractor, text)
    assert "EESI" not in [e.name for e in result.entities]
    assert [(r.source, r.relation, r.target) for r in result.relationships] == [
        ("Ted Smith", "found", "Energy and Environmental Security Initiative")
    ]


def test_a_line_break_ends_a_sentence(extractor: SpacyExtractor) -> None:
    result = graph(extractor, "Hank Snow\nSnow moved to Nashville.")
    assert [(e.name, e.description) for e in result.entities] == [
        ("Hank Snow", "Hank Snow Snow moved to Nashville."),  # its first two sentences
        ("Nashville", "Snow moved to Nashville."),
    ]
    assert [(r.source, r.relation, r.target, r.description) for r in result.relationships] == [
        ("Hank Snow", "move to", "Nashville", "Snow moved to Nashville")
    ]


def test_one_stating_word_gives_one_fact_per_pair(extractor: SpacyExtractor) -> None:
    text = "The Beatles performed the song as Britain's contribution to Our World."
    pairs = [(r.source, r.target) for r in graph(extractor, text).relationships]
    assert len(pairs) == len(set(pairs))


def test_a_comma_list_of_places_nests_them(extractor: SpacyExtractor) -> None:
    located = [
        (r.source, r.target)
        for r in graph(
            extractor, "The site is located in Huangpi, Wuhan, Hubei, China."
        ).relationships
        if r.relation == "located in"
    ]
    assert located == [
        ("Huangpi", "Wuhan"),
        ("Huangpi", "Hubei"),
        ("Huangpi", "China"),
        ("Wuhan", "Hubei"),
        ("Wuhan", "China"),
        ("Hubei", "China"),
    ]


def test_places_listed_with_and_are_not_nested(extractor: SpacyExtractor) -> None:
    assert triples(extractor, "He visited Paris, London and Berlin.") == []


def test_a_participle_on_the_attribute_takes_the_copula_subject(
    extractor: SpacyExtractor,
) -> None:
    text = "Kraft Lake is a lake located in Gogebic County."
    assert triples(extractor, text) == [("Kraft Lake", "locate in", "Gogebic County")]


def test_a_first_name_taken_for_another_entity_joins_the_person(
    extractor: SpacyExtractor,
) -> None:
    text = "Anatoly Borisovich Chubais is the head of the Russian Nanotechnology Corporation."
    assert [e.name for e in graph(extractor, text).entities] == [
        "Anatoly Borisovich Chubais",
        "Russian Nanotechnology Corporation",
    ]


def test_a_pronoun_of_the_other_gender_skips_a_person(extractor: SpacyExtractor) -> None:
    text = (
        "Ada Lovelace met Charles Babbage in London. She moved to Kent. "
        "Charles Babbage stayed. She wrote about him. He died in Marylebone."
    )
    found = triples(extractor, text)
    assert ("Ada Lovelace", "write about", "Charles Babbage") in found
    assert ("Charles Babbage", "die in", "Marylebone") in found


def test_a_shorter_name_of_another_kind_stays_its_own_entity(extractor: SpacyExtractor) -> None:
    text = "The French Resistance fought on. Many French citizens joined."
    assert [e.name for e in graph(extractor, text).entities] == ["French Resistance", "French"]


def test_places_with_words_between_are_a_list_not_a_nesting(extractor: SpacyExtractor) -> None:
    text = "Publix has stores in Florida (785), Georgia (186), Alabama (68) and Virginia (8)."
    assert [t for t in triples(extractor, text) if t[1] == "located in"] == []


def test_a_negated_verb_states_no_fact(extractor: SpacyExtractor) -> None:
    assert triples(extractor, "Josip Broz Tito did not agree to align with Moscow.") == []
    assert triples(extractor, "Marie Curie never moved to Berlin.") == []


def test_a_named_district_in_apposition_to_a_place_is_in_it(extractor: SpacyExtractor) -> None:
    text = "Nagercoil is a city in Kanyakumari district, Tamil Nadu, India."
    assert ("Kanyakumari", "located in", "Tamil Nadu") in triples(extractor, text)
    assert ("Nagercoil", "be city in", "Kanyakumari") in triples(extractor, text)


def test_a_title_line_is_the_antecedent_of_she(extractor: SpacyExtractor) -> None:
    text = (
        "Maia Hirasawa\nShe was born in Sollentuna. Maia became known through Annika "
        "Norlin's band, where she sings. In 2007 she toured around Sweden."
    )
    found = triples(extractor, text)
    assert ("Maia Hirasawa", "tour around", "Sweden") in found
    assert [t for t in found if t[0] == "Annika Norlin"] == []


def test_a_place_inside_a_passive_agent_is_not_an_agent(extractor: SpacyExtractor) -> None:
    text = (
        "Founded by Peter Williams and other free black men in New York City, "
        "Freedom's Journal was the first newspaper."
    )
    assert triples(extractor, text) == [("Peter Williams", "found", "Freedom's Journal")]


def test_a_place_stated_by_a_comma_is_described_by_its_relation_and_kept(
    extractor: SpacyExtractor,
) -> None:
    from kgsearch.config import ExtractSettings
    from kgsearch.engine.providers import quality_rules
    from kgsearch.extract.quality import QualityFiltered

    text = "The battle was fought near Mobile, Alabama in 1864."
    kept = QualityFiltered(extractor, quality_rules(ExtractSettings(), extractive=True))
    (result,) = kept.extract([ChunkText("c", text)])
    facts = {(r.source, r.relation, r.target): r.description for r in result.graph.relationships}
    assert facts[("Mobile", "located in", "Alabama")] == "Mobile located in Alabama"
    assert not [r for r in result.rejected if r.reason == "trivial_description"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "At the championships in Dortmund, West Germany, they finished last.",
            [("Dortmund", "located in", "West Germany", "place apposition")],
        ),
        (
            "Clark Lake is a lake in the U.S. state of Michigan.",
            [("Michigan", "located in", "U.S.", "place noun")],
        ),
        (
            "The cover shows a photo by Cuban photographer Alberto Korda.",
            [("Alberto Korda", "photographer", "Cuban", "role modifier")],
        ),
        ("The song preceded Iceland's Yohanna.", [("Yohanna", "of", "Iceland", "possessive")]),
        (
            "He grew up in Springfield, Illinois. Later he toured Illinois, United States.",
            [("Springfield", "located in", "United States", "transitive place")],
        ),
        (
            "Marie Curie was born in the city of Warsaw.",
            [("Marie Curie", "born in city of", "Warsaw", "verb noun")],
        ),
    ],
)
def test_each_pattern_family_finds_its_fact(
    extractor: SpacyExtractor, text: str, expected: list[tuple[str, str, str, str]]
) -> None:
    graph, origins = extractor.read(extractor.nlp(text))
    found = [
        (r.source, r.relation, r.target, o.family)
        for r, o in zip(graph.relationships, origins, strict=True)
    ]
    assert set(expected) <= set(found)


def test_a_list_of_places_is_no_chain(extractor: SpacyExtractor) -> None:
    assert triples(extractor, "She toured Paris, London and Rome.") == []


def test_an_entity_that_only_qualifies_the_object_gets_no_fact(
    extractor: SpacyExtractor,
) -> None:
    assert triples(extractor, "Bart takes the cell phone of Denis Leary.") == []


def test_a_title_is_not_part_of_a_person_name(extractor: SpacyExtractor) -> None:
    assert triples(extractor, "Governor Rick Scott signed the bill in Tallahassee.") == [
        ("Rick Scott", "sign in", "Tallahassee")
    ]


def test_the_topic_noun_refers_to_the_topic(extractor: SpacyExtractor) -> None:
    text = "Kraft Foods is an American food company. The company was founded by James Kraft."
    assert ("James Kraft", "found", "Kraft Foods") in triples(extractor, text)
    graph_ = graph(extractor, text)
    assert [r.description for r in graph_.relationships if r.relation == "found"] == [
        "Kraft Foods was founded by James Kraft"
    ]


def test_the_topic_noun_is_left_alone_without_a_definition(extractor: SpacyExtractor) -> None:
    text = "Kraft Foods sells cheese. The company was founded by James Kraft."
    assert ("James Kraft", "found", "Kraft Foods") not in triples(extractor, text)


def test_a_nationality_on_a_things_object_is_no_fact(extractor: SpacyExtractor) -> None:
    text = "During the war the United States detonated two weapons over the Japanese cities."
    assert triples(extractor, text) == []


def test_a_nationality_on_a_persons_object_stays(extractor: SpacyExtractor) -> None:
    assert triples(extractor, "Marie Curie joined the French army.") == [
        ("Marie Curie", "join army", "French")
    ]
