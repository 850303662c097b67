"""Import files a hostile or careless user writes: deep nesting, non-finite numbers, a
byte-order mark, a property named ``kind``, a chunk of a missing source. Every failure
is ``file:line: reason`` with nothing written; every valid file imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kgsearch import connect
from kgsearch.engine import Engine
from kgsearch.errors import ImportFailed

EMPTY = {"objects": 0, "relationships": 0, "sources": 0, "chunks": 0, "mentions": 0}


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def refused(engine: Engine, path: Path) -> list[dict[str, str]]:
    with pytest.raises(ImportFailed) as caught:
        engine.import_files([path])
    assert engine.store.counts("default") == EMPTY
    return list(caught.value.details["errors"])


def test_deep_properties_are_refused_with_their_line(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    lines = [
        {"kind": "object", "type": "T", "key": "ok"},
        {"kind": "object", "type": "T", "key": "deep", "properties": nested(100)},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")

    (error,) = refused(engine, path)
    assert error["location"] == f"{path}:2"
    assert "nests deeper than 32 levels" in error["reason"]


def test_an_id_longer_than_postgres_can_index_is_refused_with_its_line(
    engine: Engine, tmp_path: Path
) -> None:
    path = tmp_path / "long.jsonl"
    lines = [
        {"kind": "source", "id": "s" * 1024},
        {"kind": "chunk", "id": "c" * 3000, "text": "walrus", "source_id": "s" * 1024},
        {"kind": "object", "type": "T", "key": "k" * 1025},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")

    errors = sorted(refused(engine, path), key=lambda e: e["location"])
    assert [e["location"] for e in errors] == [f"{path}:2", f"{path}:3"]
    assert "is 3000 bytes long" in errors[0]["reason"]
    assert "is 1025 bytes long" in errors[1]["reason"]


def test_a_json_file_nested_past_the_parser_is_a_clear_error(
    engine: Engine, tmp_path: Path
) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 5000 + "]" * 5000, encoding="utf-8")

    (error,) = refused(engine, path)
    assert error["location"] == str(path) and "nested too deeply" in error["reason"]


def test_a_jsonl_line_nested_past_the_parser_is_a_clear_error(
    engine: Engine, tmp_path: Path
) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text('{"type": "T", "x": ' + "[" * 5000 + "]" * 5000 + "}\n", encoding="utf-8")

    (error,) = refused(engine, path)
    assert error["location"] == f"{path}:1" and "invalid JSON" in error["reason"]


@pytest.mark.parametrize("weight", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_weights_are_refused_with_their_line(
    engine: Engine, tmp_path: Path, weight: str
) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text(
        '{"kind": "object", "type": "T", "key": "a"}\n'
        '{"kind": "object", "type": "T", "key": "b"}\n'
        '{"kind": "relationship", "type": "r", "source": {"type": "T", "key": "a"}, '
        f'"target": {{"type": "T", "key": "b"}}, "weight": {weight}}}\n',
        encoding="utf-8",
    )

    (error,) = refused(engine, path)
    assert error["location"] == f"{path}:3" and "finite" in error["reason"]


def test_non_finite_numbers_in_properties_are_refused(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(
        '{"kind": "object", "type": "T", "key": "a", "properties": {"score": NaN}}\n',
        encoding="utf-8",
    )

    (error,) = refused(engine, path)
    assert error["location"] == f"{path}:1" and "finite" in error["reason"]


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv"])
def test_a_byte_order_mark_is_accepted(engine: Engine, tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"bom{suffix}"
    body = {
        ".jsonl": '{"kind": "object", "type": "T", "key": "a"}\n',
        ".json": '{"objects": [{"type": "T", "key": "a"}]}',
        ".csv": "type,key\nT,a\n",
    }[suffix]
    path.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))

    engine.import_files([path])

    assert engine.get_object_by_key("T", "a").key == "a"


def test_a_property_named_kind_is_not_the_records_kind(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "k.jsonl"
    path.write_text(
        '{"type": "Widget", "properties": {"kind": "gadget"}, "key": "w", "kind": "object"}\n',
        encoding="utf-8",
    )

    engine.import_files([path])

    assert engine.get_object_by_key("Widget", "w").properties == {"kind": "gadget"}


def test_a_chunk_of_a_missing_source_is_refused(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(
        '{"kind": "source", "id": "s1"}\n'
        '{"kind": "chunk", "id": "c1", "text": "fine", "source_id": "s1"}\n'
        '{"kind": "chunk", "id": "c2", "text": "orphan", "source_id": "nowhere"}\n',
        encoding="utf-8",
    )

    (error,) = refused(engine, path)
    assert error["location"] == f"{path}:3" and "source not found: 'nowhere'" in error["reason"]


def lines(path: Path, *records: dict[str, Any]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


P = {"kind": "object", "type": "P", "key": "a"}
REF = {"type": "P", "key": "a"}


@pytest.mark.parametrize(
    ("kind", "first", "second"),
    [
        ("relationship", {"type": "K", "source": REF, "target": REF}, {"type": "L"}),
        ("chunk", {"text": "one"}, {"text": "two"}),
        ("source", {"title": "one"}, {"title": "two"}),
        ("object", {"type": "P", "key": "x"}, {"type": "P", "key": "y"}),
    ],
)
def test_a_duplicate_explicit_id_is_refused_with_both_lines(
    engine: Engine, tmp_path: Path, kind: str, first: dict[str, Any], second: dict[str, Any]
) -> None:
    one = {"kind": kind, "id": "dup", **first}
    path = lines(tmp_path / "d.jsonl", P, one, {**one, **second})

    (error,) = refused(engine, path)
    assert error["location"] == f"{path}:3"
    assert error["reason"] == f"duplicate {kind} id 'dup' (first at {path}:2)"


def test_a_reimport_of_the_same_ids_is_still_idempotent(engine: Engine, tmp_path: Path) -> None:
    path = lines(
        tmp_path / "g.jsonl",
        P,
        {"kind": "source", "id": "s"},
        {"kind": "chunk", "id": "c", "text": "Ada.", "source_id": "s"},
        {"kind": "relationship", "id": "r", "type": "K", "source": REF, "target": REF},
    )
    first = engine.import_files([path])
    assert engine.import_files([path]) == first
    assert engine.store.counts("default")["chunks"] == 1


def test_mentions_of_a_missing_chunk_source_or_relationship_are_refused(
    engine: Engine, tmp_path: Path
) -> None:
    path = lines(
        tmp_path / "m.jsonl",
        P,
        {"kind": "mention", "chunk_id": "late", "object": REF},  # its chunk comes later: fine
        {"kind": "source", "id": "s"},
        {"kind": "chunk", "id": "late", "text": "Ada.", "source_id": "s"},
        {"kind": "mention", "chunk_id": "nochunk", "object": REF},
        {"kind": "mention", "chunk_id": "late", "relationship_id": "norel"},
        {"kind": "mention", "source_id": "nosource", "object": REF},
    )

    errors = refused(engine, path)
    assert errors == [
        {"location": f"{path}:5", "reason": "chunk not found: 'nochunk'"},
        {"location": f"{path}:6", "reason": "relationship not found: 'norel'"},
        {"location": f"{path}:7", "reason": "source not found: 'nosource'"},
    ]


def test_mentions_may_point_at_rows_already_stored(engine: Engine, tmp_path: Path) -> None:
    engine.import_files(
        [
            lines(
                tmp_path / "a.jsonl",
                P,
                {"kind": "source", "id": "s"},
                {"kind": "chunk", "id": "c", "text": "Ada.", "source_id": "s"},
                {"kind": "relationship", "id": "r", "type": "K", "source": REF, "target": REF},
            )
        ]
    )
    path = lines(tmp_path / "b.jsonl", {"kind": "mention", "chunk_id": "c", "relationship_id": "r"})
    assert engine.import_files([path])["mentions"] == 1


def test_the_cli_names_the_line_of_a_bad_record_and_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    path = lines(tmp_path / "x.jsonl", P, {"kind": "mention", "chunk_id": "gone", "object": REF})
    done = subprocess.run(
        [sys.executable, "-m", "kgsearch", "--db", str(db), "import", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"{path}:2: chunk not found: 'gone'" in done.stdout + done.stderr
    with Engine(connect(str(db))) as engine:
        assert engine.store.counts("default") == EMPTY
