"""The newcomer's path through the CLI (issue 20): each item found on that path, checked
where the user meets it: output, exit codes and the files written.

Runs ``kgsearch`` through click's CliRunner on a temporary SQLite file with the fake
embedder (``KGSEARCH_EMBED__MODEL=fake:32``), its output piped (no terminal).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kgsearch.cli import cli
from kgsearch.engine import Engine

LONG = "The Extraordinarily Long Title of a Film About Ada Lovelace " * 3
RECORDS: list[dict[str, Any]] = [
    {"kind": "object", "type": "Person", "key": "ada", "properties": {"name": "Ada Lovelace"}},
    {"kind": "object", "type": "Person", "key": "rob", "properties": {"name": "Rob Pike"}},
    {"kind": "object", "type": "Film", "key": "long", "properties": {"name": LONG.strip()}},
    {"kind": "object", "type": "Company", "key": "acme", "properties": {"name": "Acme"}},
    {
        "kind": "relationship",
        "type": "works_for",
        "source": {"type": "Person", "key": "ada"},
        "target": {"type": "Company", "key": "acme"},
    },
]


class Kg:
    """``kgsearch --db <tmp>/graph.db ...`` in a temporary working directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.db = directory / "graph.db"
        self.runner = CliRunner()

    def __call__(self, *args: str, db: bool = True) -> Result:
        argv = ["--db", str(self.db), *args] if db else list(args)
        return self.runner.invoke(cli, argv, catch_exceptions=False)

    def ok(self, *args: str, db: bool = True) -> Result:
        result = self(*args, db=db)
        assert result.exit_code == 0, result.output
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.ok("--json", *args).stdout)

    def imported(self, records: list[dict[str, Any]] = RECORDS) -> Kg:
        path = self.directory / "graph.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
        self.ok("import", str(path))
        return self

    def embedded(self) -> Kg:
        self.imported().ok("embed", "generate")
        return self


@pytest.fixture
def kg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Kg]:
    monkeypatch.setenv("KGSEARCH_EMBED__MODEL", "fake:32")
    monkeypatch.delenv("KGSEARCH_DB", raising=False)
    monkeypatch.delenv("KGSEARCH_STORE__URL", raising=False)
    monkeypatch.chdir(tmp_path)
    yield Kg(tmp_path)


# --- 1. which store: the demo's, ./kgsearch.db, KGSEARCH_DB ------------------------------


def test_a_search_with_no_store_here_says_where_the_demo_store_is(kg: Kg) -> None:
    result = kg("search", "Jesse James", db=False)

    assert result.exit_code == 1
    assert "no store at kgsearch.db" in result.output
    assert ".demo/kgsearch.db" in result.output
    assert not (kg.directory / "kgsearch.db").exists()


def test_kgsearch_db_names_the_store(kg: Kg, monkeypatch: pytest.MonkeyPatch) -> None:
    kg.imported()
    monkeypatch.setenv("KGSEARCH_DB", str(kg.db))

    assert kg.runner.invoke(cli, ["--json", "stats"]).exit_code == 0
    value = json.loads(kg.runner.invoke(cli, ["--json", "stats"]).stdout)
    assert value["counts"]["objects"] == 4


# --- 2. read-only commands create nothing; mistyped project; keyword only ----------------


@pytest.mark.parametrize(
    "args",
    [
        ["stats"],
        ["search", "x"],
        ["objects", "list"],
        ["embed", "status"],
        ["embed", "generate"],
        ["export", "out.jsonl"],
        ["context", "x"],
    ],
)
def test_read_only_commands_never_create_a_store(kg: Kg, args: list[str]) -> None:
    missing = kg.directory / "no" / "such" / "dir" / "x.db"

    result = kg("--db", str(missing), *args, db=False)

    assert result.exit_code == 1
    assert f"no store at {missing}" in result.output
    assert "Traceback" not in result.output
    assert not (kg.directory / "no").exists()
    assert not (kg.directory / "out.jsonl").exists()


def test_migrate_from_a_mistyped_store_creates_nothing(kg: Kg) -> None:
    result = kg("migrate", "--from", "nope.db", "--to", "copy.db", db=False)

    assert result.exit_code == 1
    assert "no store at nope.db" in result.output
    assert not (kg.directory / "nope.db").exists()


def test_a_mistyped_project_warns_and_lists_the_projects(kg: Kg) -> None:
    kg.embedded()

    result = kg.ok("--project", "defualt", "search", "Ada Lovelace")

    assert "project 'defualt' has no rows; projects in this store: default" in result.output


def test_a_search_of_a_store_with_nothing_embedded_says_keyword_only(kg: Kg) -> None:
    kg.imported()

    result = kg.ok("search", "Ada Lovelace")

    assert "Ada Lovelace" in result.output
    assert "searched by keyword only" in result.output
    assert "kgsearch embed generate" in result.output


# --- 3. one way to name a row ----------------------------------------------------------


def test_objects_delete_by_type_and_key_deletes_it(kg: Kg) -> None:
    kg.imported()

    result = kg.ok("objects", "delete", "Person/rob")

    assert "Deleted 1 object(s)" in result.output
    gone = kg("objects", "get", "Person/rob")
    assert gone.exit_code == 1
    assert kg.json("objects", "get", "Person/ada")["key"] == "ada"


def test_deleting_an_object_that_is_not_there_is_an_error(kg: Kg) -> None:
    kg.imported()

    result = kg("objects", "delete", "Person/ada", "Person/nobody")

    assert result.exit_code == 1
    assert "Person/nobody" in result.output
    assert kg.json("objects", "get", "Person/ada")["key"] == "ada"  # nothing deleted


def test_embed_preview_takes_type_and_key_as_well_as_an_id(kg: Kg) -> None:
    kg.imported()
    id_ = kg.json("objects", "get", "Person/ada")["id"]

    by_key = kg.ok("embed", "preview", "Person/ada").stdout
    by_id = kg.ok("embed", "preview", id_).stdout

    assert by_key == by_id
    assert "Ada Lovelace" in by_key


# --- 4. output --------------------------------------------------------------------------


def test_piped_search_tables_keep_every_word_and_the_id(kg: Kg) -> None:
    kg.embedded()
    film = kg.json("objects", "get", "Film/long")["id"]

    out = kg.ok("search", "Extraordinarily Long Title Film").stdout

    assert "…" not in out
    assert film in out  # the id column, whole, to act on a hit
    words = "".join(out.split())  # a folded cell continues on the next line
    assert "".join(LONG.split())[:60] in words.replace("│", "").replace("┃", "")


def test_search_shows_relevance_relative_to_the_top_hit(kg: Kg) -> None:
    kg.embedded()

    out = kg.ok("search", "Ada Lovelace").stdout

    assert "relevance" in out
    assert "1.00" in out
    assert "0.0328" not in out  # no raw RRF scores in the table
    raw = kg.json("search", "Ada Lovelace")["results"][0]["score"]
    # --json keeps the fused score as it was (RRF: the legs' weights over rank + 60; the
    # anchored leg, sure of this name's one relation, weighs 32 here), not the table's 1.00
    assert 0 < raw != pytest.approx(1.0)
    assert f"{raw:.3f}" not in out


def test_explain_names_rows_and_ids_on_request(kg: Kg) -> None:
    kg.embedded()
    ada = kg.json("objects", "get", "Person/ada")["id"]

    named = kg.ok("search", "Ada Lovelace", "--explain").stdout
    with_ids = kg.ok("search", "Ada Lovelace", "--explain", "--ids").stdout

    def table_rows(text: str) -> list[str]:
        return [line for line in text.splitlines() if "│" in line]

    assert any("Ada Lovelace (Person)" in line for line in table_rows(named))
    assert not any(ada in line for line in table_rows(named))
    assert any(ada in line for line in table_rows(with_ids))


def test_embed_status_before_any_embedding_prints_no_none(kg: Kg) -> None:
    kg.imported()

    out = kg.ok("embed", "status").stdout

    assert "None" not in out
    assert "no latency yet" in out


def test_export_to_csv_is_refused_and_writes_nothing(kg: Kg) -> None:
    kg.imported()

    result = kg("export", "x.csv")

    assert result.exit_code == 1
    assert "x.jsonl" in result.output
    assert not (kg.directory / "x.csv").exists()


def test_global_options_after_the_command(kg: Kg) -> None:
    kg.embedded()

    result = kg.ok("search", "Ada Lovelace", "--db", str(kg.db), "--project", "default", db=False)

    assert "Ada Lovelace" in result.stdout
    stats = json.loads(kg.ok("stats", "--db", str(kg.db), "--json", db=False).stdout)
    assert stats["counts"]["objects"] == 4


def test_a_relationships_csv_with_a_bad_header_is_described_as_relationships(kg: Kg) -> None:
    kg.ok("init")
    path = kg.directory / "edges.csv"
    path.write_text("type,source,target\nworks_for,ada,acme\n", encoding="utf-8")

    result = kg("import", str(path))

    assert result.exit_code == 1
    assert "relationships CSV needs columns type,source_id,target_id" in result.output
    assert "objects CSV" not in result.output


def test_an_empty_query_is_refused(kg: Kg) -> None:
    kg.embedded()

    for args in (["search", "  "], ["context", ""]):
        result = kg(*args)
        assert result.exit_code == 1
        assert "the query is empty" in result.output


# --- 5. time ----------------------------------------------------------------------------


def test_ctrl_c_during_embedding_says_the_work_is_saved(
    kg: Kg, monkeypatch: pytest.MonkeyPatch
) -> None:
    kg.imported()

    def interrupted(self: Engine, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(Engine, "embed_pending", interrupted)
    result = kg("embed", "generate")

    assert result.exit_code == 130
    assert "is saved" in result.output
    assert "kgsearch embed generate" in result.output
    assert "Traceback" not in result.output


def test_ctrl_c_during_ingest_says_the_work_is_saved(
    kg: Kg, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = kg.directory / "notes.md"
    doc.write_text("Ada Lovelace worked with Charles Babbage in London.\n", encoding="utf-8")

    def interrupted(self: Engine, *args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(Engine, "ingest", interrupted)
    result = kg("ingest", str(doc), "--extractor", "none")

    assert result.exit_code == 130
    assert "ingest finished so far is saved" in result.output


def test_embedding_progress_moves_in_small_batches(kg: Kg) -> None:
    out = kg.ok("embed", "generate", "--help").stdout

    assert "[default: 128;" in out


# --- 6. a relevance floor over tiny lists -------------------------------------------------


def test_the_only_chunk_does_not_rank_first_when_it_is_unrelated(kg: Kg) -> None:
    marley = "Marley was dead, to begin with. There is no doubt whatever about that."
    kg.imported(
        [
            *RECORDS,
            {"kind": "source", "id": "s1", "title": "Stave One"},
            {"kind": "chunk", "id": "c1", "source_id": "s1", "text": marley},
        ]
    )
    kg.ok("embed", "generate")

    results = kg.json("search", "Ada Lovelace works for")["results"]

    assert results[0]["type"] != "text"
    assert "c1" not in [r["id"] for r in results]
    assert kg.json("search", "Marley was dead")["results"][0]["id"] == "c1"


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [(["serch", "q"], "'search'"), (["embed", "statsu"], "'status'"), (["stat"], "'stats'")],
)
def test_a_mistyped_command_gets_a_suggestion_and_the_usage_exit_code(
    typed: list[str], suggested: str
) -> None:
    result = CliRunner().invoke(cli, typed)
    assert result.exit_code == 2  # a usage mistake, as for a mistyped option (README)
    assert "No such command" in result.output
    assert "Did you mean" in result.output and suggested in result.output


def test_names_and_reasons_in_square_brackets_are_printed_as_written(kg: Kg) -> None:
    docs = kg.directory / "docs"
    docs.mkdir()
    (docs / "notes[draft].md").write_text("Ada Lovelace met Charles Babbage in London.\n")
    (docs / "blob[raw].txt").write_bytes(b"binary\0stuff")
    result = kg("ingest", str(docs))
    # rich markup would eat "[draft]" and "[raw]" (as it ate the "[documents]" of an install hint)
    assert "blob[raw].txt: binary file" in result.output


def test_ingesting_only_missing_files_creates_no_store_and_says_why(kg: Kg) -> None:
    result = kg("ingest", "missing.md")
    assert result.exit_code == 1
    assert "no such file or directory: missing.md" in result.output
    assert "ingested" not in result.output
    assert not kg.db.exists()


def test_the_ingest_summary_counts_in_words_a_reader_expects(kg: Kg) -> None:
    doc = kg.directory / "one.md"
    doc.write_text("Ada Lovelace worked with Charles Babbage in London.\n", encoding="utf-8")
    result = kg.ok("ingest", str(doc), "--no-embed")
    assert "ingested 1 document (0 unchanged), 1 chunk;" in result.output
    assert "extracted 1 chunk:" in result.output
    assert "1 documents" not in result.output and "1 chunks" not in result.output
    # a document and a missing file: the document is stored, the missing one named
    partly = kg("ingest", str(doc), "gone.md", "--no-embed")
    assert partly.exit_code == 1 and "gone.md: no such file or directory" in partly.output


def test_merge_proposals_score_on_one_scale(kg: Kg) -> None:
    records = [
        {"kind": "object", "type": "Person", "key": "b1", "properties": {"name": "Beyoncé"}},
        {"kind": "object", "type": "Person", "key": "b2", "properties": {"name": "Beyonce"}},
        {"kind": "object", "type": "Place", "key": "m1", "properties": {"name": "Mississippi"}},
        {"kind": "object", "type": "Place", "key": "m2", "properties": {"name": "Mississipi"}},
        {"kind": "object", "type": "Person", "key": "j", "properties": {"name": "J. S. Bach"}},
        {"kind": "object", "type": "Person", "key": "c", "properties": {"name": "C. P. E. Bach"}},
    ]
    kg.imported(records)
    found = kg.json("entities", "candidates", "--no-vectors")
    by_reason = {p["reason"]: p for p in found["proposals"]}
    assert set(by_reason) == {"exact", "fuzzy"}  # the two Bachs are relatives, not one
    assert by_reason["exact"]["confidence"] == 1.0
    assert 0.9 < by_reason["fuzzy"]["confidence"] < 1.0
    assert "confidence" in kg.ok("entities", "candidates", "--no-vectors").output
