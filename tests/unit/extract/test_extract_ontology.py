"""Graph schemas: the loaders (TOML, JSON, YAML, Text2KGBench, Pydantic classes) and the
errors a malformed schema gets (file line for syntax, field path for content)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_data import EVAL_DATA
from pydantic import BaseModel, Field

from kgsearch.errors import InvalidRequest
from kgsearch.extract.ontology import (
    GraphSchema,
    load_schema,
    schema_from_models,
    schema_from_setting,
)

ONTOLOGIES = EVAL_DATA / "text2kgbench" / "wikidata_tekgen" / "ontologies"

TOML = """
name = "companies"
description = "Who runs and owns which company."

[[entity_types]]
name = "person"
description = "A human being."
properties = { birth_date = "as written" }

[[entity_types]]
name = "company"
description = "A business."
aliases = ["firm", "corporation"]

[[relation_types]]
name = "chief executive"
description = "The person who runs the company."
source = ["company"]
target = ["person"]
single_valued = true
aliases = ["ceo"]

[[relation_types]]
name = "founded by"
source = ["company"]
target = ["person"]
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_toml_schema_loads_every_field(tmp_path: Path) -> None:
    schema = load_schema(write(tmp_path, "s.toml", TOML))
    assert [t.name for t in schema.entity_types] == ["person", "company"]
    assert schema.entity_type("PERSON") is not None
    assert schema.entity_types[0].properties == {"birth_date": "as written"}
    ceo = schema.relation_type("chief executive")
    assert ceo is not None and ceo.single_valued and ceo.source == ("company",)
    assert ceo.aliases == ("ceo",)
    assert schema.single_valued() == {"chief executive"}


def test_json_and_yaml_give_the_same_schema_and_digest(tmp_path: Path) -> None:
    from_toml = load_schema(write(tmp_path, "s.toml", TOML))
    data = from_toml.model_dump(mode="json")
    from_json = load_schema(write(tmp_path, "s.json", json.dumps(data)))
    yaml = pytest.importorskip("yaml")
    from_yaml = load_schema(write(tmp_path, "s.yaml", yaml.safe_dump(data)))
    assert from_toml == from_json == from_yaml
    assert from_toml.digest == from_json.digest == from_yaml.digest
    other = data | {"description": "something else"}
    assert GraphSchema.model_validate(other).digest != from_toml.digest


def test_text2kgbench_ontology_becomes_a_schema() -> None:
    schema = load_schema(ONTOLOGIES / "3_sport_ontology.json")
    assert schema.name == "Sports Ontology"
    # "sports club" is listed twice upstream: one type
    assert [t.name for t in schema.entity_types].count("sports club") == 1
    # "league" is listed twice (two ranges, one not a concept: any); a label's
    # trailing space ("country of origin ") is dropped
    assert len(schema.entity_types) == 19 and len(schema.relation_types) == 10
    league = schema.relation_type("league")
    assert league is not None and league.source == ("human",) and league.target == ()
    assert schema.relation_type("country of origin") is not None
    team = schema.relation_type("member of sports team")
    assert team is not None and team.id == "P54"
    assert team.source == ("human",) and team.target == ("sports club",)
    occupation = schema.relation_type("occupation")
    assert occupation is not None and occupation.target == ("athlete",)


@pytest.mark.parametrize("name", ["2_music", "3_sport", "5_military", "8_politics", "9_nature"])
def test_every_ontology_in_eval_data_loads(name: str) -> None:
    raw = json.loads((ONTOLOGIES / f"{name}_ontology.json").read_text(encoding="utf-8"))
    schema = load_schema(ONTOLOGIES / f"{name}_ontology.json")
    assert {r.name for r in schema.relation_types} == {r["label"].strip() for r in raw["relations"]}


def test_pydantic_classes_become_a_schema() -> None:
    class Person(BaseModel):
        """A human being,
        living or dead."""

        birth_date: str | None = Field(None, description="as written")

    class Company(BaseModel):
        """A business."""

    class WorksFor(BaseModel):
        """Employment of a person by a company."""

    class ChiefExecutive(BaseModel):
        """Runs the company."""

    schema = schema_from_models(
        [Person, Company],
        {WorksFor: ([Person], [Company]), ChiefExecutive: ([Company], [Person])},
        single_valued=[ChiefExecutive],
    )
    person = schema.entity_type("Person")
    assert person is not None and person.description == "A human being, living or dead."
    assert person.properties == {"birth_date": "as written"}
    works = schema.relation_type("WorksFor")
    assert works is not None and works.source == ("Person",) and works.target == ("Company",)
    assert schema.single_valued() == {"ChiefExecutive"}


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.toml", '[[entity_types]]\nname = "person"\ndescription = \n')
    with pytest.raises(InvalidRequest, match=r"bad\.toml: not valid TOML: .*line 3"):
        load_schema(path)


def test_json_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.json", '{\n  "entity_types": [\n    {"name": "x",}\n  ]\n}')
    with pytest.raises(InvalidRequest, match=r"not valid JSON at line 3") as caught:
        load_schema(path)
    assert caught.value.details["line"] == 3


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    path = write(tmp_path, "bad.yaml", "entity_types:\n  - name: person\n   bad: [\n")
    with pytest.raises(InvalidRequest, match=r"not valid YAML at line \d"):
        load_schema(path)


def test_a_wrong_field_is_named_by_its_path(tmp_path: Path) -> None:
    text = TOML.replace("single_valued = true", 'single_valued = "sometimes"')
    with pytest.raises(InvalidRequest, match=r"relation_types\[0\]\.single_valued") as caught:
        load_schema(write(tmp_path, "s.toml", text))
    assert caught.value.details["fields"] == ["relation_types[0].single_valued"]


def test_an_unknown_key_is_named(tmp_path: Path) -> None:
    text = TOML.replace('name = "founded by"', 'name = "founded by"\nsorce = ["person"]')
    with pytest.raises(InvalidRequest, match=r"relation_types\[1\]\.sorce: Extra inputs"):
        load_schema(write(tmp_path, "s.toml", text))


def test_a_pattern_naming_an_unknown_type_is_refused(tmp_path: Path) -> None:
    text = TOML.replace('target = ["person"]\nsingle', 'target = ["human"]\nsingle')
    with pytest.raises(InvalidRequest, match=r"relation_types\[0\]\.target\[0\]: 'human'"):
        load_schema(write(tmp_path, "s.toml", text))


def test_a_type_listed_twice_is_refused(tmp_path: Path) -> None:
    text = TOML + '\n[[entity_types]]\nname = "Person"\n'
    with pytest.raises(InvalidRequest, match="'Person' is listed twice"):
        load_schema(write(tmp_path, "s.toml", text))


def test_bad_files_are_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match=r"\.toml, \.json or \.yaml"):
        load_schema(write(tmp_path, "s.txt", TOML))
    with pytest.raises(InvalidRequest, match="cannot read graph schema"):
        load_schema(tmp_path / "missing.toml")
    with pytest.raises(InvalidRequest, match="not list"):
        load_schema(write(tmp_path, "s.json", "[1, 2]"))
    with pytest.raises(InvalidRequest, match=r"relations\[0\]\.label is missing"):
        load_schema(write(tmp_path, "o.json", '{"concepts": [], "relations": [{"pid": "P1"}]}'))


def test_setting_is_a_path_an_inline_table_or_nothing(tmp_path: Path) -> None:
    assert schema_from_setting(None) is None
    path = write(tmp_path, "s.toml", TOML)
    assert schema_from_setting(str(path)) == load_schema(path)
    inline = schema_from_setting({"relation_types": [{"name": "founded by"}]})
    assert inline is not None and inline.relation_types[0].name == "founded by"
    with pytest.raises(InvalidRequest, match=r"\[extract\] schema: .*relation_types\[0\]\.name"):
        schema_from_setting({"relation_types": [{"description": "no name"}]})
