"""scripts/metaqa_to_jsonl.py: MetaQA kb.txt → kgsearch JSONL, on a hand-written snippet."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kgsearch.model import ObjectIn, RelationshipIn

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "metaqa_to_jsonl.py"


def _load_script() -> ModuleType:
    name = "metaqa_to_jsonl_under_test"
    spec = importlib.util.spec_from_file_location(name, SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


conv = _load_script()

# "Jesse James" is a Movie and a Person; "Western" is a Movie and a Genre.
# The directed_by line of "Jesse James" appears twice (exact duplicate → one relationship).
KB = """\
Jesse James|directed_by|Henry King
Jesse James|release_year|1939
Jesse James|starred_actors|Tyrone Power
Jesse James|starred_actors|Henry Fonda
Jesse James|starred_actors|Nancy Kelly
Jesse James|starred_actors|Randolph Scott
Jesse James|directed_by|Henry King
The Last Ride|starred_actors|Jesse James
The Last Ride|release_year|1994
The Last Ride|release_year|1991
The Last Ride|in_language|English
The Last Ride|in_language|Spanish
The Last Ride|has_genre|Western
The Last Ride|has_genre|Drama

Western|in_language|German
Western|written_by|Gert Fröbe
Western|has_tags|wild west
Western|has_imdb_votes|famous
Western|has_imdb_rating|good
"""


def _obj(obj_type: str, key: str, **props: Any) -> dict[str, Any]:
    return {
        "kind": "object",
        "type": obj_type,
        "key": key,
        "properties": {"name": key, **props},
        "tags": [],
        "labels": [],
    }


def _rel(rel_type: str, head: str, tail_type: str, tail: str) -> dict[str, Any]:
    return {
        "kind": "relationship",
        "type": rel_type,
        "source": {"type": "Movie", "key": head},
        "target": {"type": tail_type, "key": tail},
    }


EXPECTED: list[dict[str, Any]] = [
    _obj(
        "Movie",
        "Jesse James",
        release_year="1939",
        directed_by=["Henry King"],
        starred_actors=["Tyrone Power", "Henry Fonda", "Nancy Kelly"],
    ),
    _obj(
        "Movie",
        "The Last Ride",
        release_year="1994",
        language=["English", "Spanish"],
        genre=["Western", "Drama"],
        starred_actors=["Jesse James"],
    ),
    _obj("Movie", "Western", language="German"),
    _obj("Person", "Gert Fröbe"),
    _obj("Person", "Henry Fonda"),
    _obj("Person", "Henry King"),
    _obj("Person", "Jesse James"),
    _obj("Person", "Nancy Kelly"),
    _obj("Person", "Randolph Scott"),
    _obj("Person", "Tyrone Power"),
    _obj("Genre", "Drama"),
    _obj("Genre", "Western"),
    _obj("Language", "English"),
    _obj("Language", "German"),
    _obj("Language", "Spanish"),
    _obj("Year", "1939"),
    _obj("Year", "1991"),
    _obj("Year", "1994"),
    _obj("Rating", "good"),
    _obj("Votes", "famous"),
    _obj("Tag", "wild west"),
    _rel("directed_by", "Jesse James", "Person", "Henry King"),
    _rel("release_year", "Jesse James", "Year", "1939"),
    _rel("starred_actors", "Jesse James", "Person", "Tyrone Power"),
    _rel("starred_actors", "Jesse James", "Person", "Henry Fonda"),
    _rel("starred_actors", "Jesse James", "Person", "Nancy Kelly"),
    _rel("starred_actors", "Jesse James", "Person", "Randolph Scott"),
    _rel("starred_actors", "The Last Ride", "Person", "Jesse James"),
    _rel("release_year", "The Last Ride", "Year", "1994"),
    _rel("release_year", "The Last Ride", "Year", "1991"),
    _rel("in_language", "The Last Ride", "Language", "English"),
    _rel("in_language", "The Last Ride", "Language", "Spanish"),
    _rel("has_genre", "The Last Ride", "Genre", "Western"),
    _rel("has_genre", "The Last Ride", "Genre", "Drama"),
    _rel("in_language", "Western", "Language", "German"),
    _rel("written_by", "Western", "Person", "Gert Fröbe"),
    _rel("has_tags", "Western", "Tag", "wild west"),
    _rel("has_imdb_votes", "Western", "Votes", "famous"),
    _rel("has_imdb_rating", "Western", "Rating", "good"),
]


@pytest.fixture
def kb_path(tmp_path: Path) -> Path:
    path = tmp_path / "kb.txt"
    path.write_text(KB, encoding="utf-8")
    return path


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_full_mode_writes_exact_records(kb_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    assert conv.main(["--kb", str(kb_path), "--full", str(out)]) == 0
    assert _read_jsonl(out) == EXPECTED


def test_property_key_order_and_raw_line(kb_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    conv.main(["--kb", str(kb_path), "--full", str(out)])
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[1] == (
        '{"kind": "object", "type": "Movie", "key": "The Last Ride", "properties": '
        '{"name": "The Last Ride", "release_year": "1994", "language": ["English", "Spanish"], '
        '"genre": ["Western", "Drama"], "starred_actors": ["Jesse James"]}, '
        '"tags": [], "labels": []}'
    )
    assert lines[3] == (
        '{"kind": "object", "type": "Person", "key": "Gert Fröbe", '
        '"properties": {"name": "Gert Fröbe"}, "tags": [], "labels": []}'
    )


def test_same_name_two_types_are_two_objects(kb_path: Path) -> None:
    records = list(conv.convert(conv.load_kb(kb_path)))
    keyed = {(r["type"], r["key"]) for r in records if r["kind"] == "object"}
    assert {("Movie", "Jesse James"), ("Person", "Jesse James")} <= keyed
    assert {("Movie", "Western"), ("Genre", "Western")} <= keyed
    assert conv.entity_types(conv.load_kb(kb_path))["Western"] == {"Movie", "Genre"}


def test_exact_duplicates_are_dropped() -> None:
    triples = conv.read_triples(["A|directed_by|B\n", "A|directed_by|B\r\n", "A|written_by|B\n"])
    assert triples == [("A", "directed_by", "B"), ("A", "written_by", "B")]
    records = list(conv.convert([*triples, ("A", "directed_by", "B")]))
    assert records == [
        _obj("Movie", "A", directed_by=["B"]),
        _obj("Person", "B"),
        _rel("directed_by", "A", "Person", "B"),
        _rel("written_by", "A", "Person", "B"),
    ]


@pytest.mark.parametrize(
    "line", ["A|directed_by\n", "A|directed_by|B|C\n", "A||B\n", "A|produced_by|B\n"]
)
def test_malformed_lines_raise_with_line_number(line: str) -> None:
    with pytest.raises(ValueError, match="line 2"):
        conv.read_triples(["X|has_genre|Drama\n", line])


def test_records_validate_against_kgsearch_models(kb_path: Path) -> None:
    for record in conv.convert(conv.load_kb(kb_path)):
        body = {k: v for k, v in record.items() if k != "kind"}
        if record["kind"] == "object":
            ObjectIn.model_validate(body)
        else:
            RelationshipIn.model_validate(body)


def test_sample_forces_same_name_movies_and_their_partners(kb_path: Path, tmp_path: Path) -> None:
    extra = "".join(f"Filler {i}|has_genre|Comedy\n" for i in range(20))
    kb_path.write_text(KB + extra, encoding="utf-8")
    out = tmp_path / "sample.jsonl"
    argv = ["--kb", str(kb_path), "--sample", str(out), "--movies", "5", "--seed", "7"]
    assert conv.main(argv) == 0
    records = _read_jsonl(out)
    movies = [r["key"] for r in records if r["kind"] == "object" and r["type"] == "Movie"]
    # "Jesse James" and "Western" are forced; "The Last Ride" is their partner (it stars
    # the Person "Jesse James" and has the Genre "Western"); two fillers fill up to 5.
    assert len(movies) == 5
    assert {"Jesse James", "The Last Ride", "Western"} <= set(movies)
    fillers = sorted(m for m in movies if m.startswith("Filler "))
    expected_fillers = sorted(random.Random(7).sample(sorted(f"Filler {i}" for i in range(20)), 2))
    assert fillers == expected_fillers
    # All triples of chosen movies, nothing else; every reference resolves.
    rels = [r for r in records if r["kind"] == "relationship"]
    assert {r["source"]["key"] for r in rels} == set(movies)
    assert len(rels) == 18 + 2  # 18 unique snippet triples + one per filler
    objects = {(r["type"], r["key"]) for r in records if r["kind"] == "object"}
    for rel in rels:
        assert (rel["target"]["type"], rel["target"]["key"]) in objects
    # Deterministic: the same arguments give the same bytes.
    again = tmp_path / "again.jsonl"
    conv.main(["--kb", str(kb_path), "--sample", str(again), "--movies", "5", "--seed", "7"])
    assert again.read_bytes() == out.read_bytes()


def test_sample_keeps_forced_movies_when_n_is_smaller(kb_path: Path) -> None:
    triples = conv.load_kb(kb_path)
    assert conv.select_movies(triples, movies=0, seed=7, same_name_limit=50) == [
        "Jesse James",
        "The Last Ride",
        "Western",
    ]
