"""``search --as-of``: who held an office at a date, from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgsearch import Engine, ObjectIn, RelationshipIn
from kgsearch.cli import cli
from kgsearch.cli.query import as_of_date
from kgsearch.store import connect
from kgsearch.testing import FakeEmbedder


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KGSEARCH_EMBED__MODEL", "fake:32")
    path = tmp_path / "kg.db"
    with Engine(connect(str(path)), embedder=FakeEmbedder(32)) as engine:
        acme, ada, bob = engine.add_objects(
            [
                ObjectIn(type="Company", key="acme", properties={"name": "Acme"}),
                ObjectIn(type="Person", key="ada", properties={"name": "Ada"}),
                ObjectIn(type="Person", key="bob", properties={"name": "Bob"}),
            ]
        )
        engine.add_relationships(
            [
                RelationshipIn(
                    type="CEO_OF",
                    source=ada.id,
                    target=acme.id,
                    valid_from="2010-01-01T00:00:00Z",
                    valid_to="2018-07-01T00:00:00Z",
                ),
                RelationshipIn(
                    type="CEO_OF", source=bob.id, target=acme.id, valid_from="2018-07-01T00:00:00Z"
                ),
            ]
        )
        engine.embed_pending()
    return path


def ceos(db: Path, *args: str) -> list[str]:
    done = CliRunner().invoke(
        cli,
        ["--db", str(db), "--json", "search", "CEO of Acme", "--result-types", "graph", *args],
        catch_exceptions=False,
    )
    assert done.exit_code == 0, done.output
    return [
        r["triplet_text"] for r in json.loads(done.stdout)["results"] if r["type"] == "relationship"
    ]


def test_as_of_picks_the_holder_of_the_day(db: Path) -> None:
    assert [t for t in ceos(db, "--as-of", "2015") if "Ada" in t]
    assert not [t for t in ceos(db, "--as-of", "2015") if "Bob" in t]
    assert not [t for t in ceos(db, "--as-of", "2019-03") if "Ada" in t]
    assert [t for t in ceos(db, "--as-of", "2019-03-04T10:00:00Z") if "Bob" in t]
    assert not [t for t in ceos(db) if "Ada" in t]  # valid now: Bob only


def test_a_bad_date_is_a_clear_error(db: Path) -> None:
    done = CliRunner().invoke(cli, ["--db", str(db), "search", "CEO", "--as-of", "last year"])
    assert done.exit_code == 1
    assert "--as-of 'last year' is not a date" in done.output
    done = CliRunner().invoke(cli, ["--db", str(db), "search", "CEO", "--as-of", "2019-13-45"])
    assert done.exit_code == 1
    assert "as_of" in done.output and "Traceback" not in done.output


def test_a_year_or_month_is_its_first_day() -> None:
    assert as_of_date("2019") == "2019-01-01"
    assert as_of_date(" 2019-06 ") == "2019-06-01"
    assert as_of_date("2019-06-30") == "2019-06-30"
