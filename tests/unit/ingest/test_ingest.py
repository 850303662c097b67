"""Ingest end to end on a real SQLite store with the fake extractor and embedder:
documents → sources and chunks → extraction tasks → graph rows, and the lifecycle."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgsearch import Engine
from kgsearch.errors import ImportFailed, InvalidRequest, NotFound
from kgsearch.store import connect
from kgsearch.testing import FakeEmbedder, FakeExtractor

DOC = (
    "Ada Lovelace worked with Charles Babbage on the Analytical Engine in London.\n\n"
    "Charles Babbage designed the Difference Engine for the British Government."
)


def make_engine(tmp_path: Path, extractor: FakeExtractor) -> Engine:
    return Engine(
        connect(f"sqlite:///{tmp_path / 'kg.db'}"),
        embedder=FakeEmbedder(16),
        extractors=lambda name, domain: extractor,
    )


@pytest.fixture
def fake() -> FakeExtractor:
    return FakeExtractor()


@pytest.fixture
def engine(tmp_path: Path, fake: FakeExtractor) -> Engine:
    return make_engine(tmp_path, fake)


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_a_document_becomes_source_chunks_objects_relationships_and_mentions(
    engine: Engine, tmp_path: Path
) -> None:
    doc = write(tmp_path / "docs" / "ada.md", DOC)
    report = engine.ingest([doc], chunk_chars=100)
    assert report.problems == [] and report.documents == 1 and report.chunks == 2
    assert report.extraction is not None and report.extraction.extracted == 2
    babbage = engine.get_object_by_key("thing", "charles babbage")
    assert babbage.name == "Charles Babbage"
    sources = engine.sources_mentioning(object_ids=[babbage.id])
    assert [s.source.title for s in sources] == ["ada.md"] and sources[0].mentions == 2
    (rel,) = [
        r
        for r in engine.list_rows("relationship").items
        if "Difference Engine" in (r.description or "")
        and r.type == "appears_with"
        and r.source_id == babbage.id
    ]
    assert rel.properties["extractor"] == "fake" and rel.properties["model"] == "fake:model"
    assert len(rel.source_chunks) == 1
    status = engine.extraction_status()
    assert status.counts["done"] == 2 and status.entities == report.extraction.entities


def test_reingesting_an_unchanged_document_does_nothing(
    engine: Engine, fake: FakeExtractor, tmp_path: Path
) -> None:
    doc = write(tmp_path / "a.txt", DOC)
    engine.ingest([doc], chunk_chars=100)
    before = engine.stats()
    fake.calls.clear()
    again = engine.ingest([doc], chunk_chars=100)
    assert again.unchanged == 1 and again.queued == 0 and fake.calls == []
    assert engine.stats() == before


def test_a_changed_document_re_extracts_only_its_changed_chunks(
    engine: Engine, fake: FakeExtractor, tmp_path: Path
) -> None:
    doc = write(tmp_path / "a.txt", DOC)
    first = engine.ingest([doc], chunk_chars=100)
    old_chunks = {c.id for c in engine.list_rows("chunk").items}
    fake.calls.clear()
    write(doc, DOC.replace("British Government", "Royal Society"))
    second = engine.ingest([doc], chunk_chars=100)
    assert first.chunks == second.chunks == 2
    assert second.queued == 1 and second.removed == 1 and len(fake.calls) == 1
    new_chunks = {c.id for c in engine.list_rows("chunk").items}
    assert len(old_chunks & new_chunks) == 1  # the untouched chunk kept its id
    with pytest.raises(NotFound):
        engine.extraction_record((old_chunks - new_chunks).pop())


def test_a_directory_with_good_and_bad_files_ingests_the_good_and_names_the_bad(
    engine: Engine, tmp_path: Path
) -> None:
    root = tmp_path / "mixed"
    write(root / "good.md", DOC)
    write(root / "empty.txt", "")
    write(root / "blank.txt", "  \n\n ")
    write(root / "binary.txt", b"\x00\x01\x02PNG")
    write(root / "latin1.txt", "caf\xe9 cr\xe8me".encode("latin-1"))
    write(root / "image.png", b"\x89PNG")
    write(root / "sub" / "also-good.txt", "Grace Hopper wrote the A-0 compiler at Remington Rand.")
    report = engine.ingest([root, tmp_path / "missing.txt"], chunk_chars=100)
    assert report.documents == 2
    reasons = {Path(p.path).name: p.reason for p in report.problems}
    assert set(reasons) == {"empty.txt", "blank.txt", "binary.txt", "latin1.txt", "missing.txt"}
    assert [Path(p.path).name for p in report.skipped] == ["image.png"]
    reasons["image.png"] = report.skipped[0].reason
    assert "empty" in reasons["empty.txt"] and "empty" in reasons["blank.txt"]
    assert "binary" in reasons["binary.txt"]
    assert "not UTF-8" in reasons["latin1.txt"] and "offset 3" in reasons["latin1.txt"]
    assert "unsupported file type .png" in reasons["image.png"]
    assert "no such file" in reasons["missing.txt"]
    assert not report.ok


def test_a_file_over_the_size_limit_is_refused_and_nothing_is_written(
    engine: Engine, tmp_path: Path
) -> None:
    big = write(tmp_path / "big.txt", "word " * 5000)
    report = engine.ingest([big], max_bytes=10_000)
    assert report.documents == 0 and "larger than the limit" in report.problems[0].reason
    assert engine.stats().counts["chunks"] == 0


def test_an_unparseable_reply_fails_the_chunk_with_the_raw_reply_then_dead(
    tmp_path: Path,
) -> None:
    fake = FakeExtractor()
    engine = make_engine(tmp_path, fake)
    engine.extract_settings = engine.extract_settings.model_copy(
        update={"max_attempts": 2, "backoff_seconds": 0.0}
    )
    report = engine.ingest(texts=["Ada Lovelace said UNPARSEABLE things."], title="t")
    assert report.extraction is not None and report.extraction.dead == 1
    (chunk,) = engine.list_rows("chunk").items
    record = engine.extraction_record(chunk.id)
    assert record.status == "dead" and record.attempts == 2
    assert record.last_error is not None and "garbage reply for" in record.last_error
    assert engine.extraction_status().failures[chunk.id].startswith("reply could not be parsed")
    assert engine.retry_extraction(dead=True) == 1
    assert engine.extraction_record(chunk.id).status == "pending"


def test_a_provider_outage_never_fails_the_write_and_the_chunks_wait(tmp_path: Path) -> None:
    fake = FakeExtractor()
    engine = make_engine(tmp_path, fake)
    report = engine.ingest(texts=["Ada Lovelace met OUTAGE Babbage."], title="t", extract=False)
    assert report.chunks == 1 and report.queued == 1 and report.extraction is None
    run = engine.extract(wait_for_retries=False)
    assert run.failed == 1 and "fake provider is down" in run.errors[0]
    assert engine.stats().counts["chunks"] == 1  # the text is stored and searchable meanwhile


def test_dry_run_writes_nothing_and_forecasts_chunks(engine: Engine, tmp_path: Path) -> None:
    doc = write(tmp_path / "a.txt", DOC)
    report = engine.ingest([doc], chunk_chars=100, dry_run=True)
    assert report.dry_run and report.estimate is not None
    assert report.estimate["chunks"] == 2 and report.estimate["documents"] == 1
    assert engine.stats().counts["chunks"] == 0 and engine.stats().counts["sources"] == 0


def test_preview_runs_the_extractor_and_writes_nothing(engine: Engine) -> None:
    result = engine.preview_extraction("Ada Lovelace met Charles Babbage.")
    assert [e.name for e in result.graph.entities] == ["Ada Lovelace", "Charles Babbage"]
    assert engine.stats().counts["objects"] == 0


def test_nothing_to_ingest_is_a_clear_error(engine: Engine) -> None:
    with pytest.raises(InvalidRequest, match="nothing to ingest"):
        engine.ingest()


def test_extraction_records_keep_what_the_extractor_returned(engine: Engine) -> None:
    engine.ingest(texts=["Ada Lovelace met Charles Babbage."], title="t")
    (chunk,) = engine.list_rows("chunk").items
    record = engine.extraction_record(chunk.id)
    assert record.status == "done" and record.result is not None
    assert record.result["extractor"] == "fake"
    assert [e["name"] for e in record.result["graph"]["entities"]] == [
        "Ada Lovelace",
        "Charles Babbage",
    ]
    assert record.result["built"] == {"objects": 2, "relationships": 1, "mentions": 3}


def test_an_imported_openie_file_becomes_records_labelled_with_its_model(
    engine: Engine, tmp_path: Path
) -> None:
    path = tmp_path / "openie_gpt-3.5-turbo-1106.json"
    path.write_text(
        '{"docs": [{"idx": 0, "title": "Ada Lovelace", "passage": "", '
        '"text": "Ada Lovelace worked with Charles Babbage.", '
        '"extracted_entities": ["Ada Lovelace", "Charles Babbage"], '
        '"extracted_triples": [["Ada Lovelace", "worked with", "Charles Babbage"], ["bad"]]}]}',
        encoding="utf-8",
    )
    report = engine.import_extractions(path)
    assert report.documents == 1 and report.extraction is not None
    assert report.extraction.relationships == 1 and report.extraction.rejected == {"malformed": 1}
    (rel,) = engine.list_rows("relationship").items
    assert rel.type == "worked_with" and rel.properties["model"] == "openai:gpt-3.5-turbo-1106"
    assert rel.properties["extractor"] == "openie"
    again = engine.import_extractions(path)
    assert again.unchanged == 1 and again.queued == 0


def test_a_file_that_is_not_openie_is_a_clear_error_and_writes_nothing(
    engine: Engine, tmp_path: Path
) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"passages": []}', encoding="utf-8")
    with pytest.raises(ImportFailed, match="docs"):
        engine.import_extractions(path)
    assert engine.stats().counts["sources"] == 0


def test_imported_chunks_left_queued_say_how_to_build_them(tmp_path: Path) -> None:
    engine = Engine(connect(f"sqlite:///{tmp_path / 'kg.db'}"), embedder=FakeEmbedder(16))
    path = tmp_path / "openie_gpt-3.5-turbo-1106.json"
    path.write_text(
        '{"docs": [{"title": "Ada", "text": "Ada Lovelace met Charles Babbage.", '
        '"extracted_entities": [], "extracted_triples": []}]}',
        encoding="utf-8",
    )
    engine.import_extractions(path, extract=False)
    later = Engine(connect(f"sqlite:///{tmp_path / 'kg.db'}"), embedder=FakeEmbedder(16))
    report = later.extract(wait_for_retries=False)
    assert report.failed == 1 and "kgsearch ingest --extractions FILE" in report.errors[0]
    assert later.import_extractions(path).extraction is not None
    assert later.extraction_status().counts["done"] == 1


def test_extracting_some_chunks_leaves_the_other_queued_chunks_alone(engine: Engine) -> None:
    engine.ingest(texts=["Ada Lovelace met Charles Babbage."], title="a", extract=False)
    added = engine.add_text("Grace Hopper met Alan Turing.", title="b")
    engine.extract_chunks([c.id for c in added.chunks])
    report = engine.extract(chunk_ids=[c.id for c in added.chunks])
    assert report.extracted == 1
    assert engine.extraction_status().counts == {
        "pending": 1,
        "running": 0,
        "done": 1,
        "failed": 0,
        "dead": 0,
    }
    assert {o.key for o in engine.list_rows("object").items} == {"grace hopper", "alan turing"}
