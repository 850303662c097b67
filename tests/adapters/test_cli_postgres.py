"""The command line on a PostgreSQL store: the everyday commands end to end, by URL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kgsearch.cli import cli

RECORDS: list[dict[str, Any]] = [
    {"kind": "object", "type": "Person", "key": "ada", "properties": {"name": "Ada Lovelace"}},
    {"kind": "object", "type": "Company", "key": "acme", "properties": {"name": "Acme"}},
    {
        "kind": "relationship",
        "type": "works_for",
        "source": {"type": "Person", "key": "ada"},
        "target": {"type": "Company", "key": "acme"},
    },
    {"kind": "source", "id": "s1", "title": "Memo"},
    {"kind": "chunk", "id": "c1", "source_id": "s1", "text": "Ada Lovelace leads Acme as CEO."},
]


def test_stats_does_not_print_the_store_password(pg_factory: Any) -> None:
    url = pg_factory.postgres_store_url()
    scheme, _, rest = url.partition("://")
    user_part, _, host = rest.partition("@")
    user = user_part.partition(":")[0]  # the test server's URL has an empty password
    with_password = f"{scheme}://{user}:pg-very-secret@{host}"  # trust auth ignores it
    for args in (["--json", "stats"], ["stats"]):
        result = CliRunner().invoke(cli, ["--db", with_password, *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert "pg-very-secret" not in result.output
        assert f"{user}:********@" in result.output.replace("\n", "")


def test_import_embed_search_export_on_postgres(
    tmp_path: Path, pg_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KGSEARCH_EMBED__MODEL", "fake:32")
    url = pg_factory.postgres_store_url()
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n", encoding="utf-8")

    def run(*args: str) -> Any:
        result = CliRunner().invoke(cli, ["--db", url, "--json", *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    run("init")
    run("import", str(source))
    assert run("embed", "generate")["embedded"] == 4
    status = run("embed", "status")
    assert status["embedded"] == 4 and status["pending"] == 0
    hits = run("search", "who works for Acme", "--limit", "5")
    assert {r["type"] for r in hits["results"]} >= {"relationship"}
    assert any(r.get("triplet_text") == "Ada Lovelace works for Acme" for r in hits["results"])
    context = run("context", "Ada", "--max-tokens", "200")
    assert "Ada Lovelace" in json.dumps(context)
    stats = run("stats")
    assert "objects" in json.dumps(stats)
    out = tmp_path / "out.jsonl"
    run("export", str(out))
    kinds = [json.loads(line)["kind"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(kinds) == sorted(r["kind"] for r in RECORDS)
