"""`kgsearch entities candidates|merge|split` end to end on a real store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kgsearch import Engine, connect
from kgsearch.cli import cli
from kgsearch.model import ObjectIn, RelationshipIn
from kgsearch.testing import FakeEmbedder


def test_candidates_merge_and_split(tmp_path: Path) -> None:
    db = tmp_path / "kg.db"
    with Engine(connect(str(db)), embedder=FakeEmbedder(8)) as engine:
        ada, lovelace, acme = engine.add_objects(
            [
                ObjectIn(type="person", key="Ada Lovelace"),
                ObjectIn(type="person", key="ADA LOVELACE."),
                ObjectIn(type="org", key="Acme"),
            ]
        )
        engine.add_relationships(
            [RelationshipIn(type="works_at", source=lovelace.id, target=acme.id)]
        )
    runner = CliRunner()

    def run(*args: str) -> Any:
        result = runner.invoke(cli, ["--db", str(db), "--json", *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    proposed = run("entities", "candidates", "--no-vectors")
    assert proposed["total"] == 1
    (row,) = proposed["proposals"]
    assert {row["keep"], row["merge"]} == {ada.id, lovelace.id} and row["reason"] == "exact"

    merged = run("entities", "merge", ada.id, lovelace.id)
    assert merged["objects"] == [lovelace.id] and merged["relationships"] == 1
    assert run("entities", "candidates", "--no-vectors")["total"] == 0

    refused = runner.invoke(cli, ["--db", str(db), "entities", "merge", ada.id, acme.id])
    assert refused.exit_code == 1 and "incompatible types" in refused.output
    assert "Traceback" not in refused.output

    run("entities", "split", ada.id, lovelace.id)
    with Engine(connect(str(db)), embedder=FakeEmbedder(8)) as engine:
        (edge,) = engine.list_rows("relationship").items
        assert edge.source_id == lovelace.id
        assert {o.id for o in engine.list_rows("object").items} == {ada.id, lovelace.id, acme.id}
