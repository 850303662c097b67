"""Sections through ingest on a real SQLite store with the fake extractor and embedder:
re-ingesting an edited document, code and tables kept from the extractor, and the
section path on text results."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgsearch import Engine
from kgsearch.io import documents as reader
from kgsearch.store import connect
from kgsearch.testing import FakeEmbedder, FakeExtractor
from kgsearch.writes import documents

NOTES = (
    "## Two Dollar Radio\n\nTwo Dollar Radio is a publisher based in Columbus.\n\n"
    "## Formula One Arcade\n\nFormula One Arcade is a racing game by Studio Liverpool.\n\n"
    "## PlayStation\n\nPlayStation is a console made by Sony.\n"
)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def fake() -> FakeExtractor:
    return FakeExtractor()


@pytest.fixture
def engine(tmp_path: Path, fake: FakeExtractor) -> Engine:
    return Engine(
        connect(f"sqlite:///{tmp_path / 'kg.db'}"),
        embedder=FakeEmbedder(16),
        extractors=lambda name, domain: fake,
    )


def chunks_by_section(engine: Engine) -> dict[str, str]:
    return {c.metadata["section"]: c.text for c in engine.list_rows("chunk").items}


def test_sections_become_chunks_and_nothing_links_across_them(
    engine: Engine, tmp_path: Path
) -> None:
    report = engine.ingest([write(tmp_path / "notes.md", NOTES)], chunk_chars=1000)
    assert report.chunks == 3
    assert sorted(chunks_by_section(engine)) == [
        "Formula One Arcade",
        "PlayStation",
        "Two Dollar Radio",
    ]
    ends = {
        (r.source_id, r.target_id)
        for r in engine.list_rows("relationship").items
        if r.type == "appears_with"
    }
    names = {o.id: o.name for o in engine.list_rows("object").items}
    pairs = {frozenset((names[a], names[b])) for a, b in ends}
    assert frozenset(("Columbus", "Formula One Arcade")) not in pairs
    assert frozenset(("Two Dollar Radio", "Columbus")) in pairs


def test_reingesting_an_edited_document_updates_its_sections_and_drops_removed_chunks(
    engine: Engine, fake: FakeExtractor, tmp_path: Path
) -> None:
    doc = write(tmp_path / "notes.md", NOTES)
    engine.ingest([doc], chunk_chars=1000)
    before = {c.id: c.metadata["section"] for c in engine.list_rows("chunk").items}
    fake.calls.clear()
    edited = NOTES.replace("## PlayStation\n\nPlayStation is a console made by Sony.\n", "")
    edited = edited.replace("## Two Dollar Radio", "## Two Dollar Radio (publisher)")
    write(doc, edited + "## Sega\n\nSega made the Dreamcast.\n")
    report = engine.ingest([doc], chunk_chars=1000)
    after = {c.id: c.metadata["section"] for c in engine.list_rows("chunk").items}
    assert sorted(after.values()) == ["Formula One Arcade", "Sega", "Two Dollar Radio (publisher)"]
    assert report.removed == 2 and report.queued == 2 and len(fake.calls) == 2
    assert [i for i in before if i in after] == [  # the untouched section kept its chunk
        i for i, s in before.items() if s == "Formula One Arcade"
    ]
    names = {o.name for o in engine.list_rows("object").items}
    assert "Sony" not in names and "Dreamcast" in names


def test_code_and_tables_are_kept_as_text_but_never_reach_the_extractor(
    engine: Engine, fake: FakeExtractor, tmp_path: Path
) -> None:
    text = (
        "# Setup\n\nAda Lovelace wrote `Integer` here.\n\n```\nNULL = False\n```\n\n"
        "| Name | Type |\n|---|---|\n| Zeta | Boolean |\n\n# Code only\n\n```\nTrue None\n```\n"
    )
    report = engine.ingest([write(tmp_path / "setup.md", text)], chunk_chars=1000)
    assert report.chunks == 2 and len(fake.calls) == 1  # the code-only chunk is not mined
    names = {o.name for o in engine.list_rows("object").items}
    assert "Ada Lovelace" in names
    assert not names & {"Integer", "NULL", "False", "Zeta", "Boolean", "True", "None"}
    stored = chunks_by_section(engine)
    assert "NULL = False" in stored["Setup"] and "True None" in stored["Code only"]
    statuses = engine.extraction_status()
    assert statuses.counts["done"] == 2


def test_text_results_carry_the_section_path(engine: Engine, tmp_path: Path) -> None:
    text = "# Guide\n\n## Install\n\n### Linux\n\nInstall the zebra package with apt.\n"
    engine.ingest([write(tmp_path / "guide.md", text)], chunk_chars=1000)
    response = engine.search("zebra package", result_types="text")
    (hit,) = [r for r in response.results if r.type == "text"]
    assert hit.section == "Guide > Install > Linux"
    assert response.model_dump(mode="json")["results"][0]["section"] == hit.section


def test_a_document_stored_by_the_older_chunking_is_chunked_again(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = write(tmp_path / "notes.md", NOTES)
    with monkeypatch.context() as patched:  # as an older version stored it: one flat chunk
        patched.setattr(documents, "CHUNKING", "flat")
        patched.setattr(reader, "read_format", lambda suffix, data: (data.decode(), ()))
        engine.ingest([doc], chunk_chars=1000)
    assert len(engine.list_rows("chunk").items) == 1
    report = engine.ingest([doc], chunk_chars=1000)
    assert report.unchanged == 0 and report.chunks == 3 and report.removed == 1
    assert len(engine.list_rows("chunk").items) == 3
    (source,) = engine.list_rows("source").items
    assert source.metadata["chunking"] == documents.CHUNKING
    assert engine.ingest([doc], chunk_chars=1000).unchanged == 1


def test_free_text_added_directly_is_chunked_by_its_markdown_headings(engine: Engine) -> None:
    added = engine.add_text(NOTES + "\n```\nTrue None\n```\n", max_chars=1000)
    assert [c.metadata.get("section") for c in added.chunks] == [
        "Two Dollar Radio",
        "Formula One Arcade",
        "PlayStation",
    ]
    last = added.chunks[2]
    assert [last.text[a:b] for a, b in last.metadata["unmined"]] == [
        "## PlayStation",
        "```\nTrue None\n```",
    ]


def test_preview_reads_text_as_ingest_does(engine: Engine) -> None:
    result = engine.preview_extraction("# Notes\n\nAda Lovelace met Charles Babbage.\n\n`NULL`")
    assert [e.name for e in result.graph.entities] == ["Ada Lovelace", "Charles Babbage"]
