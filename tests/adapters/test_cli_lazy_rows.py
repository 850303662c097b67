"""``kgsearch objects get/list`` and ``kgsearch relationships get/list`` on a SQLite
store of the current schema read it read-only without the engine
(kgsearch.cli.rows, kgsearch.store.sqlite.readonly_rows), and print what the engine
prints, byte for byte: every case runs the CLI twice in a subprocess, once as it is
and once with the read-only path switched off, and compares exit code and output."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cli_store import older_store, run_cli

LIGHT = {"kgsearch.engine", "kgsearch.config", "numpy", "onnxruntime", "pydantic"}


def _both(db: Path, *args: str) -> tuple[int, str, list[str]]:
    """The light run's exit code, output and heavy modules, checked equal to the
    engine's (exit code, output and error output)."""
    code, light, heavy, err = run_cli("light", "--db", str(db), *args)
    engine_code, engine, engine_heavy, engine_err = run_cli("engine", "--db", str(db), *args)
    assert {"kgsearch.engine", "pydantic"} <= set(engine_heavy)  # the comparison is real
    assert (code, light, err) == (engine_code, engine, engine_err), args
    return code, light, heavy


@pytest.fixture(scope="module")
def graph_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two projects; objects with tags, labels, nested properties and unicode; some
    embedded (fake model), one deleted; relationships with a label, a description,
    source chunks, a weight, one valid in the past only."""
    from kgsearch.embed.fake import FakeEmbedder
    from kgsearch.engine import Engine
    from kgsearch.model import ObjectIn, ObjectRef, RelationshipIn
    from kgsearch.store import connect

    db = tmp_path_factory.mktemp("graph") / "graph.db"
    with Engine(connect(str(db)), embedder=FakeEmbedder(16)) as engine:
        people = [
            ObjectIn(
                type="Person",
                key=k,
                tags=["t1", "é"],
                labels=["actor"] if k in "ab" else ["director"],
                properties={"name": k.upper(), "score": 1.5, "n": 3, "ok": True, "x": None},
            )
            for k in "abcde"
        ]
        engine.add_objects(people)
        engine.add_objects(
            [ObjectIn(type="Movie", key="Jesse James", properties={"nested": {"l": [1, 2.25]}})]
        )
        engine.add_objects(people[:2], project="other")
        engine.embed_pending()
        engine.add_objects([ObjectIn(type="Person", key="a", properties={"name": "Ä 2"})])
        engine.delete("object", [engine.get_object_by_key("Person", "e").id])
        engine.add_relationships(
            [
                RelationshipIn(
                    type="directed_by",
                    source=ObjectRef(type="Movie", key="Jesse James"),
                    target=ObjectRef(type="Person", key=k),
                    label="directed by",
                    weight=w,
                    description="a film",
                    source_chunks=["c1"],
                    properties={"year": 1939},
                )
                for k, w in (("a", 0.5), ("b", 2))
            ]
            + [
                RelationshipIn(
                    type="starred_in",
                    source=ObjectRef(type="Person", key="c"),
                    target=ObjectRef(type="Movie", key="Jesse James"),
                    valid_from=datetime(1939, 1, 1, tzinfo=UTC),
                    valid_to=datetime(1940, 1, 1, tzinfo=UTC),
                ),
            ]
        )
        engine.embed_pending()
    return db


def _ids(db: Path, table: str) -> list[str]:
    with sqlite3.connect(db) as connection:
        return [r[0] for r in connection.execute(f"SELECT id FROM {table} ORDER BY rowid")]


OBJECT_CASES = [
    ["objects", "get", "Person/a"],
    ["--json", "objects", "get", "Movie/Jesse James"],
    ["-p", "other", "objects", "get", "Person/b"],
    ["objects", "get", "Person/nobody"],  # missing: NotFound, exit 1
    ["--json", "objects", "get", "Person/nobody"],
    ["objects", "get", "no-such-id"],
    ["objects", "get", "Person/e"],  # deleted
    ["objects", "list"],
    ["--json", "objects", "list"],
    ["objects", "list", "--type", "Person", "-n", "2"],
    ["--json", "objects", "list", "--type", "Movie", "--type", "Person", "--label", "actor"],
    ["objects", "list", "--label", "director", "--label", "actor", "-n", "1"],
    ["-p", "other", "objects", "list"],
    ["-p", "nope", "--json", "objects", "list"],
    ["objects", "list", "-n", "0"],  # InvalidRequest, exit 1
    ["objects", "list", "--cursor", "nope"],
    ["--json", "objects", "list", "--cursor", "-1"],
]
RELATIONSHIP_CASES = [
    ["relationships", "list"],
    ["--json", "relationships", "list"],
    ["relationships", "list", "--type", "starred_in"],  # valid in the past: listed
    ["--json", "relationships", "list", "--type", "directed_by", "-n", "1"],
    ["relationships", "list", "-n", "10001"],
    ["-p", "other", "relationships", "list"],
    ["relationships", "get", "no-such-id"],
    ["--json", "relationships", "get", "no-such-id"],
]


@pytest.mark.parametrize("args", OBJECT_CASES + RELATIONSHIP_CASES)
def test_rows_read_without_the_engine_as_the_engine_prints_them(
    graph_store: Path, args: list[str]
) -> None:
    code, output, heavy = _both(graph_store, *args)

    assert not LIGHT & set(heavy), args
    assert ("rich" in heavy) == ("--json" not in args and code == 0 and "get" not in args)
    if code == 0 and "--json" in args:
        json.loads(output)


def test_found_rows_are_shown_in_full_and_pages_follow_their_cursor(graph_store: Path) -> None:
    relationships = _ids(graph_store, "relationships")
    for id_ in relationships:
        for args in (["relationships", "get", id_], ["--json", "relationships", "get", id_]):
            code, output, heavy = _both(graph_store, *args)
            assert code == 0 and not LIGHT & set(heavy)
            assert json.loads(output)["id"] == id_
    first = _both(graph_store, "--json", "objects", "list", "-n", "2")[1]
    cursor = json.loads(first)["next_cursor"]
    assert cursor is not None
    code, second, heavy = _both(
        graph_store, "--json", "objects", "list", "-n", "2", "--cursor", cursor
    )
    assert code == 0 and not LIGHT & set(heavy)
    assert [o["key"] for o in json.loads(second)["items"]] == ["c", "d"]  # e is deleted
    found = json.loads(_both(graph_store, "--json", "objects", "get", "Person/a")[1])
    assert found["properties"]["name"] == "Ä 2" and found["embedding"]["status"] == "embedded"
    assert found["created_at"].endswith("Z")
    edges = json.loads(_both(graph_store, "--json", "relationships", "list")[1])["items"]
    assert [e["weight"] for e in edges] == [0.5, 2.0, 1.0]
    assert edges[2]["valid_to"] == "1940-01-01T00:00:00Z"


def test_an_object_is_found_by_id_and_by_type_and_key_alike(graph_store: Path) -> None:
    by_key = _both(graph_store, "--json", "objects", "get", "Person/b")[1]
    id_ = json.loads(by_key)["id"]
    code, by_id, heavy = _both(graph_store, "--json", "objects", "get", id_)

    assert code == 0 and not LIGHT & set(heavy)
    assert by_id == by_key


@pytest.mark.parametrize("ref", ["Person/", "/a", "/"])
def test_an_empty_type_or_key_is_taken_as_an_id(graph_store: Path, ref: str) -> None:
    # the engine's path raised pydantic's ValidationError (a traceback) on these
    for args in (["objects", "get", ref], ["--json", "objects", "get", ref]):
        code, output, heavy = _both(graph_store, *args)
        assert code == 1 and not LIGHT & set(heavy)
    assert f"object {ref!r} not found" in json.loads(output)["error"]["message"]


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("created_at", "2026-01-01T00:00:00"),  # naive: the model's own rules
        ("created_at", "2026-01-01T00:00:00+02:00"),
        ("properties", '{"x": Infinity}'),  # the model dumps it as null
    ],
)
def test_a_row_the_model_would_convert_or_refuse_goes_to_the_engine(
    graph_store: Path, tmp_path: Path, column: str, value: str
) -> None:
    db = tmp_path / "odd.db"
    with sqlite3.connect(graph_store) as source, sqlite3.connect(db) as target:
        source.backup(target)
    with sqlite3.connect(db) as connection:
        connection.execute(
            f"UPDATE objects SET {column} = ? WHERE type = 'Person' AND key = 'b'", (value,)
        )
    for args in (["objects", "get", "Person/b"], ["--json", "objects", "list"]):
        _, _, heavy = _both(db, *args)
        assert "kgsearch.engine" in heavy, (column, value, args)
    _, _, heavy = _both(db, "objects", "get", "Person/c")  # the other rows stay light
    assert not LIGHT & set(heavy)


def test_a_missing_store_is_the_same_error_and_nothing_is_created(tmp_path: Path) -> None:
    db = tmp_path / "missing.db"
    for args in (["objects", "get", "Person/a"], ["--json", "relationships", "list"]):
        code, output, heavy = _both(db, *args)
        assert (
            code == 1
            and f"no store at {db}" in output + run_cli("light", "--db", str(db), *args)[3]
        )
        assert not LIGHT & set(heavy)
    assert list(tmp_path.iterdir()) == []


def test_a_store_at_an_older_schema_is_migrated_by_the_engine(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    older_store(db, drop=1)

    code, output, heavy, err = run_cli("light", "--db", str(db), "--json", "objects", "list")

    assert code == 0, err
    assert "kgsearch.engine" in heavy
    assert json.loads(output) == {"items": [], "next_cursor": None}
