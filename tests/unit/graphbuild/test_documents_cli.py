"""`kgsearch documents list|delete` over a real ingest (spaCy, offline)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kgsearch.cli import cli


def test_documents_list_and_delete(tmp_path: Path) -> None:
    db = tmp_path / "kg.db"
    notes = tmp_path / "notes.md"
    notes.write_text("Ada Lovelace worked with Charles Babbage in London.\n", encoding="utf-8")
    other = tmp_path / "other.md"
    other.write_text("Charles Babbage designed the Analytical Engine.\n", encoding="utf-8")
    runner = CliRunner()

    def run(*args: str) -> dict:  # type: ignore[type-arg]
        result = runner.invoke(cli, ["--db", str(db), "--json", *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return json.loads(result.output)  # type: ignore[no-any-return]

    run("ingest", str(notes), str(other), "--no-embed")
    listed = run("documents", "list")["items"]
    assert len(listed) == 2
    notes_id = next(d["id"] for d in listed if d["id"].endswith("notes.md"))

    report = run("documents", "delete", notes_id, "doc:missing")

    assert (report["sources"], report["chunks"]) == (1, 1)
    assert report["objects_deleted"] >= 1  # Ada Lovelace, London: only notes.md named them
    assert [d["id"] for d in run("documents", "list")["items"]] != [notes_id]
    assert len(run("documents", "list")["items"]) == 1
    shown = runner.invoke(cli, ["--db", str(db), "documents", "delete", "doc:missing"])
    assert shown.exit_code == 0 and "Deleted 0 document(s)" in shown.output
