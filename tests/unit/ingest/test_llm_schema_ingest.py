"""``kgsearch ingest --schema``: the LLM extractor over the real OpenAI-compatible client
and a local HTTP server that answers with the recorded real Vicuna-13B replies of
Text2KGBench (Mihindukulasooriya et al., ISWC 2023; CC BY-SA 4.0; eval-data
text2kgbench) for their test sentences, held to the benchmark's sports ontology."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer, chat_reply, start_chat_server
from click.testing import CliRunner
from eval_data import EVAL_DATA

from kgsearch.cli import cli

TEKGEN = EVAL_DATA / "text2kgbench" / "wikidata_tekgen"
ONTOLOGY = TEKGEN / "ontologies" / "3_sport_ontology.json"
SENTENCES = [
    json.loads(line)
    for line in (TEKGEN / "ground_truth" / "ont_3_sport_ground_truth.jsonl")
    .read_text("utf-8")
    .splitlines()[:3]
]
REPLIES = {
    json.loads(line)["id"]: json.loads(line)["response"]
    for line in (TEKGEN / "baselines" / "Vicuna-13B" / "llm_responses")
    .joinpath("ont_3_sport_llm_responses.jsonl")
    .read_text("utf-8")
    .splitlines()[:3]
}


def answer(number: int, body: dict[str, Any]) -> tuple[Any, ...]:
    prompt = body["messages"][-1]["content"]
    for sentence in SENTENCES:
        if sentence["sent"] in prompt:
            return 200, chat_reply(REPLIES[sentence["id"]])
    return 200, chat_reply('{"entities": [], "relationships": []}')


@pytest.fixture
def server() -> Iterator[ChatServer]:
    stopping = threading.Event()
    chat, httpd = start_chat_server(answer, stopping)
    yield chat
    stopping.set()
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def env(server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KGSEARCH_LLM__BASE_URL", server.url)
    monkeypatch.setenv("KGSEARCH_LLM__API_KEY", "test-key")
    monkeypatch.setenv("KGSEARCH_LLM__MODEL", "openai:gpt-4o")
    monkeypatch.setenv("KGSEARCH_EMBED__MODEL", "fake:16")
    monkeypatch.setenv("KGSEARCH_CONFIG", str(tmp_path / "kgsearch.toml"))
    docs = tmp_path / "docs"
    docs.mkdir()
    for sentence in SENTENCES:
        (docs / f"{sentence['id']}.txt").write_text(sentence["sent"], encoding="utf-8")
    return docs


def kg(tmp_path: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "kg.db"), "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.output) if result.output.strip() else None


def test_ingest_with_a_schema_keeps_only_its_relations(
    server: ChatServer, env: Path, tmp_path: Path
) -> None:
    report = kg(tmp_path, "ingest", str(env), "--extractor", "llm", "--schema", str(ONTOLOGY))
    assert report["extraction"]["extracted"] == 3 and len(server.requests) == 3
    request = server.bodies[0]
    system = request["messages"][0]["content"]
    assert "# Graph schema" in system
    assert "- member of sports team (human → sports club)" in system
    enum = request["response_format"]["json_schema"]["schema"]["$defs"]["ExtractedRelation"]
    assert "occupation" in enum["properties"]["relation"]["enum"]

    allowed = {
        r["label"].strip().replace(" ", "_") for r in json.loads(ONTOLOGY.read_text())["relations"]
    }
    rels = kg(tmp_path, "relationships", "list", "--limit", "100")["items"]
    assert len(rels) == 8 and {r["type"] for r in rels} <= allowed
    assert all(r["properties"]["prompt"].endswith("+schema.2c0a5459") for r in rels)
    status = kg(tmp_path, "extract", "status")
    assert status["rejected"] == {"off_schema": 4}

    # the chunk whose reply used labels outside the ontology shows what became of each
    (rutherford,) = {c for r in rels for c in r["source_chunks"] if "test_2" in c}
    shown = kg(tmp_path, "extract", "show", rutherford)
    result = shown["result"]
    off = sorted(r["item"]["relation"] for r in result["rejected"] if r["reason"] == "off_schema")
    assert off == ["membership", "physical_activity", "sports_club", "sports_team_season"]
    mapped = [s["item"] for s in result["signals"] if s["reason"] == "mapped_to_schema"]
    assert {"from": "home_venue", "to": "home venue"} in mapped

    # without the schema the same text is another prompt: the cache is not reused
    kg(tmp_path, "--project", "open", "ingest", str(env), "--extractor", "llm")
    assert len(server.requests) == 6
    assert "# Graph schema" not in server.bodies[-1]["messages"][0]["content"]


def test_schema_show_prints_the_file_or_the_setting(env: Path, tmp_path: Path) -> None:
    shown = kg(tmp_path, "schema", "show", "--schema", str(ONTOLOGY))
    assert shown["name"] == "Sports Ontology" and len(shown["relation_types"]) == 10
    assert kg(tmp_path, "schema", "show") is None
    (tmp_path / "kgsearch.toml").write_text(f'[extract]\nschema = "{ONTOLOGY}"\n', encoding="utf-8")
    assert kg(tmp_path, "schema", "show") == shown
    # a relative path is read beside kgsearch.toml, wherever the command runs
    (tmp_path / "sport.json").write_text(ONTOLOGY.read_text("utf-8"), encoding="utf-8")
    (tmp_path / "kgsearch.toml").write_text('[extract]\nschema = "sport.json"\n', encoding="utf-8")
    assert kg(tmp_path, "schema", "show") == shown
    text = CliRunner().invoke(cli, ["schema", "show"])
    assert text.exit_code == 0 and "league (human → any)" in text.output


def test_a_bad_schema_file_is_a_clear_error(env: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[[relation_types]]\nname = \n", encoding="utf-8")
    result = CliRunner().invoke(
        cli,
        [
            "--db",
            str(tmp_path / "kg.db"),
            "ingest",
            str(env),
            "--extractor",
            "llm",
            "--schema",
            str(bad),
        ],
    )
    assert result.exit_code == 1
    assert "bad.toml: not valid TOML" in result.output and "line 2" in result.output
    assert "Traceback" not in result.output


def test_preview_with_a_schema_writes_nothing(
    server: ChatServer, env: Path, tmp_path: Path
) -> None:
    sentence = SENTENCES[1]["sent"]
    kg(tmp_path, "init")
    held = kg(
        tmp_path, "extract", "preview", sentence, "--extractor", "llm", "--schema", str(ONTOLOGY)
    )
    assert "+schema." in held["prompt_version"]
    assert "membership" in {r["item"]["relation"] for r in held["rejected"]}
    assert (
        not (tmp_path / "kg.db").exists() or kg(tmp_path, "stats")["counts"].get("chunks", 0) == 0
    )
