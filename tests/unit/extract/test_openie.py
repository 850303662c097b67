"""Loading HippoRAG OpenIE output: the real MuSiQue file and malformed inputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from eval_data import EVAL_DATA

from kgsearch.errors import ImportFailed
from kgsearch.extract.openie import (
    OpenIERecord,
    index_by_text,
    load_openie,
    openie_model,
    parse_openie,
    text_key,
)
from kgsearch.extract.schema import ExtractedEntity, ExtractedRelation, Rejection

REAL = EVAL_DATA / "musique-hipporag-train100" / "openie_gpt-3.5-turbo-1106.json"


@pytest.fixture(scope="module")
def records() -> list[OpenIERecord]:
    return load_openie(REAL)


def write(tmp_path: Path, data: Any, name: str = "openie_gpt-4o-mini_3.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def doc(**overrides: Any) -> dict[str, Any]:
    base = {
        "title": "Acme",
        "text": "Acme was founded by Ada.",
        "extracted_entities": ["Acme", "Ada"],
        "extracted_triples": [["Ada", "founded", "Acme"]],
    }
    return {**base, **overrides}


def errors_of(excinfo: pytest.ExceptionInfo[ImportFailed]) -> list[dict[str, str]]:
    return list(excinfo.value.details["errors"])


def test_real_file_has_the_counts_its_readme_gives(records: list[OpenIERecord]) -> None:
    well_formed = sum(len(r.graph.relationships) for r in records)
    malformed = sum(1 for r in records for x in r.rejected if x.reason == "malformed")
    assert (len(records), well_formed + malformed, well_formed, malformed) == (
        1890,
        17419,
        17234,
        185,
    )
    assert sum(1 for r in records if not r.graph.relationships) == 2


def test_real_records_are_labelled_openie_with_the_model_from_the_file_name(
    records: list[OpenIERecord],
) -> None:
    assert {(r.extractor, r.model) for r in records} == {("openie", "openai:gpt-3.5-turbo-1106")}
    assert [r.position for r in records] == list(range(1890))


def test_real_triple_becomes_a_relationship_described_by_the_triple(
    records: list[OpenIERecord],
) -> None:
    first = records[0]
    assert first.title == "Journal of Mathematical Physics"
    assert first.passage == f"{first.title}\n{first.text}"
    assert first.graph.relationships[0] == ExtractedRelation(
        source="Journal of Mathematical Physics",
        target="American Institute of Physics",
        relation="published by",
        description="Journal of Mathematical Physics published by American Institute of Physics",
    )


def test_every_relationship_end_is_an_entity(records: list[OpenIERecord]) -> None:
    for record in records:
        names = {e.name for e in record.graph.entities}
        assert all({r.source, r.target} <= names for r in record.graph.relationships)
        assert {e.type for e in record.graph.entities} <= {"entity"}


def test_records_are_found_by_passage_text_with_or_without_title(
    records: list[OpenIERecord],
) -> None:
    index = index_by_text(records)
    corpus = json.loads((REAL.parent / "musique_train_corpus.json").read_text(encoding="utf-8"))
    assert all(index[text_key(p["text"])].text == p["text"] for p in corpus)
    assert index[text_key(records[5].passage + "\n")] is records[5]


def test_model_is_read_from_hipporag_file_names() -> None:
    assert [
        openie_model("openie_gpt-3.5-turbo-1106.json"),
        openie_model("x/openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json"),
        openie_model("triples.json"),
    ] == ["openai:gpt-3.5-turbo-1106", "openai:gpt-3.5-turbo-1106", ""]


def test_malformed_triples_are_rejected_as_records(tmp_path: Path) -> None:
    bad = [["Au Gres", "administered autonomously"], ["a", "b", "c", "d"], ["a", "", "b"], "abc"]
    (record,) = load_openie(
        write(tmp_path, {"docs": [doc(extracted_triples=[*bad, ["Ada", "founded", "Acme"]])]})
    )
    assert list(record.rejected) == [
        Rejection(kind="record", reason="malformed", item=json.dumps(t)) for t in bad
    ]
    assert [(r.source, r.relation, r.target) for r in record.graph.relationships] == [
        ("Ada", "founded", "Acme")
    ]


def test_triple_ends_join_listed_entities_case_insensitively(tmp_path: Path) -> None:
    data = {
        "docs": [doc(extracted_entities=["ACME"], extracted_triples=[["ada", "founded", "acme"]])]
    }
    (record,) = load_openie(write(tmp_path, data), model="test:model")
    assert record.model == "test:model"
    assert record.graph.entities == [ExtractedEntity(name="ACME"), ExtractedEntity(name="ada")]
    assert record.graph.relationships[0].target == "ACME"


def test_result_carries_the_record_for_a_chunk(tmp_path: Path) -> None:
    (record,) = load_openie(write(tmp_path, {"docs": [doc()]}))
    result = record.result("chunk-1")
    assert (result.chunk_id, result.extractor, result.model, result.graph) == (
        "chunk-1",
        "openie",
        "openai:gpt-4o-mini",
        record.graph,
    )


@pytest.mark.parametrize(
    ("data", "location", "reason"),
    [
        ([1, 2], "", '"docs" list'),
        ({"docs": {}}, "", '"docs" list'),
        ({"docs": [doc(), "passage"]}, ": docs[1]", "expected an object, got str"),
        ({"docs": [doc(), doc(), {"title": "t"}]}, ": docs[2]", 'missing "text"'),
        ({"docs": [doc(text=3)]}, ": docs[0]", "must be strings"),
        (
            {"docs": [doc(extracted_triples="a b c")]},
            ": docs[0]",
            '"extracted_triples" must be a list',
        ),
    ],
)
def test_file_of_another_format_names_the_position(
    tmp_path: Path, data: Any, location: str, reason: str
) -> None:
    path = write(tmp_path, data)
    with pytest.raises(ImportFailed) as excinfo:
        load_openie(path)
    (error,) = errors_of(excinfo)
    assert error["location"] == f"{path}{location}"
    assert reason in error["reason"]
    assert str(excinfo.value).startswith(f"{path}{location}: ")


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "openie.json"
    path.write_text('{"docs": [\n  {"text": }\n]}', encoding="utf-8")
    with pytest.raises(ImportFailed) as excinfo:
        load_openie(path)
    assert errors_of(excinfo)[0]["location"] == f"{path}:2:12"


def test_missing_file_is_an_import_error(tmp_path: Path) -> None:
    with pytest.raises(ImportFailed, match="file not found"):
        load_openie(tmp_path / "nope.json")


def test_parse_accepts_decoded_json_with_nan_metadata() -> None:
    data = json.loads('{"docs": [], "avg_ent_chars": NaN}')
    assert parse_openie(data) == []
