"""Documents over REST on a real server: multipart upload read by the ingest readers
(PDF, HTML, DOCX), refusals with their reasons, the upload limit, the document list,
one document with its chunks and their extraction, and extracting a document again.
The extractor is the fake one (capitalised words), so the tests are about the routes.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docx
import httpx
import pytest
from live_server import wait_for
from pdf_files import minimal_pdf

from kgsearch import Engine, connect
from kgsearch.config import ExtractSettings
from kgsearch.errors import InvalidRequest
from kgsearch.testing import FakeEmbedder, FakeExtractor

Http = Callable[..., httpx.Client]
APP_OPTIONS = {"max_upload_bytes": 200_000}
HTML = (
    b"<html><head><script>var x = 1;</script></head><body><h1>Compilers</h1>"
    b"<p>Grace Hopper wrote the <code>A-0</code> compiler.</p></body></html>"
)


@pytest.fixture
def fake() -> FakeExtractor:
    return FakeExtractor()


@pytest.fixture
def api_engine(tmp_path: Path, fake: FakeExtractor) -> Iterator[Engine]:
    """An engine whose extractors are ``fake`` (any name but ``bogus``); failed
    chunks are dead after one attempt."""

    def extractors(name: str, domain: str) -> FakeExtractor:
        if name == "bogus":
            raise InvalidRequest(f"unknown extractor {name!r}")
        return fake

    engine = Engine(
        connect(str(tmp_path / "api.db")),
        embedder=FakeEmbedder(32),
        extractors=extractors,
        extract_settings=ExtractSettings(backoff_seconds=0, max_attempts=1),
    )
    yield engine
    engine.close()


@pytest.fixture
def api(base_url: str, http: Http, api_engine: Engine) -> httpx.Client:
    key, _ = api_engine.create_api_key("alpha", "read,write")
    return http(base_url, key)


def finished(api: httpx.Client, job: dict[str, Any]) -> dict[str, Any]:
    url = f"/api/jobs/{job['id']}"
    wait_for(lambda: api.get(url).json()["state"] != "running")
    body: dict[str, Any] = api.get(url).json()
    return body


def docx_bytes(*paragraphs: str) -> bytes:
    document = docx.Document()
    document.add_heading("People", 1)
    for p in paragraphs:
        document.add_paragraph(p)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def upload(api: httpx.Client, *files: tuple[str, bytes], **data: str) -> httpx.Response:
    return api.post("/api/documents/upload", files=[("files", (n, b)) for n, b in files], data=data)


def test_pdf_html_and_docx_uploads_are_read_as_ingest_reads_them(api: httpx.Client) -> None:
    started = upload(
        api,
        ("ada.pdf", minimal_pdf("Ada Lovelace wrote the first program.")),
        ("hopper.html", HTML),
        ("people.docx", docx_bytes("Alan Turing worked at Bletchley Park.")),
    )

    assert started.status_code == 202
    done = finished(api, started.json())
    assert (done["state"], done["result"]["documents"], done["result"]["problems"]) == (
        "done",
        3,
        [],
    )
    texts = {c["source_id"]: c["text"] for c in api.get("/api/chunks").json()["items"]}
    assert texts == {
        "doc:ada.pdf": "Ada Lovelace wrote the first program.",
        "doc:hopper.html": "Compilers\n\nGrace Hopper wrote the A-0 compiler.",
        "doc:people.docx": "People\n\nAlan Turing worked at Bletchley Park.",
    }


def test_files_that_cannot_be_read_are_refused_with_their_reasons(api: httpx.Client) -> None:
    response = upload(api, ("scan.pdf", b"not a pdf"), ("sheet.xlsx", b"PK\x03\x04"))

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    reasons = {p["path"]: p["reason"] for p in error["details"]["problems"]}
    assert reasons["scan.pdf"].startswith("not a readable PDF")
    assert reasons["sheet.xlsx"].startswith("unsupported file type .xlsx; the server reads")
    assert api.get("/api/sources").json()["items"] == []


def test_a_mixed_upload_ingests_what_it_can_and_reports_the_rest(api: httpx.Client) -> None:
    started = upload(
        api, ("people.docx", docx_bytes("Ada met Grace.")), ("broken.docx", b"PK not a zip")
    )

    done = finished(api, started.json())
    assert done["result"]["documents"] == 1
    [problem] = done["result"]["problems"]
    assert problem["path"] == "broken.docx"
    assert problem["reason"].startswith("not a readable .docx file")


def test_an_upload_over_the_limit_gets_413(api: httpx.Client) -> None:
    response = upload(api, ("big.txt", b"word " * 50_000))

    assert response.status_code == 413
    assert "upload fewer or smaller files" in response.json()["error"]["message"]


def test_the_upload_limit_does_not_raise_the_json_body_limit(api: httpx.Client) -> None:
    response = api.post("/api/documents", json={"text": "word " * 250_000})

    assert response.status_code == 413


def test_pasted_text_goes_with_the_files(api: httpx.Client) -> None:
    started = upload(api, ("a.md", b"# A\n\nAda met Grace."), text="Bob met Eve.", title="pasted")

    done = finished(api, started.json())
    assert done["result"]["documents"] == 2
    titles = sorted(s["title"] for s in api.get("/api/sources").json()["items"])
    assert titles == ["a.md", "pasted"]


def test_an_empty_upload_is_refused(api: httpx.Client) -> None:
    response = api.post("/api/documents/upload", data={"extractor": "none"})

    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("nothing to ingest")


def test_an_unknown_extractor_is_refused_before_reading(api: httpx.Client) -> None:
    response = upload(api, ("a.md", b"Ada"), extractor="bogus")

    assert (response.status_code, response.json()["error"]["message"]) == (
        400,
        "unknown extractor 'bogus'",
    )


def test_a_path_in_the_file_name_is_dropped(api: httpx.Client) -> None:
    finished(api, upload(api, ("../../etc/notes.md", b"Ada met Grace.")).json())

    assert [s["id"] for s in api.get("/api/sources").json()["items"]] == ["doc:notes.md"]


def test_the_document_list_counts_chunks_per_extraction_status(api: httpx.Client) -> None:
    text = b"# One\n\nAda met Grace.\n\n# Two\n\nUNPARSEABLE Bob met Eve."
    finished(api, upload(api, ("notes.md", text), chunk_chars="100").json())

    [doc] = api.get("/api/documents").json()["items"]

    assert (doc["id"], doc["title"], doc["format"], doc["chunks"]) == (
        "doc:notes.md",
        "notes.md",
        "md",
        2,
    )
    assert doc["extraction"] == {"dead": 1, "done": 1}


def test_a_document_shows_its_sections_and_each_chunks_extraction(api: httpx.Client) -> None:
    text = b"# One\n\nAda met Grace.\n\n# Two\n\nUNPARSEABLE Bob met Eve."
    finished(api, upload(api, ("notes.md", text), chunk_chars="100").json())

    view = api.get("/api/documents/doc:notes.md").json()

    assert view["sections"] == ["One", "Two"]
    assert "chunk_ids" not in view["source"]["metadata"]
    one, two = view["chunks"]
    assert (one["section"], one["extraction"]["status"], one["extraction"]["extractor"]) == (
        "One",
        "done",
        "fake",
    )
    assert one["extraction"]["entities"] >= 2
    assert two["extraction"]["status"] == "dead"
    assert two["extraction"]["last_error"] == (
        f"reply could not be parsed\nraw reply:\ngarbage reply for {two['id']}"
    )


def test_an_unknown_document_is_not_found(api: httpx.Client) -> None:
    response = api.get("/api/documents/doc:nope.md")

    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")
    assert api.post("/api/documents/doc:nope.md/extract").status_code == 404


def test_extracting_a_document_again_retries_its_dead_chunks(
    api: httpx.Client, fake: FakeExtractor
) -> None:
    text = b"# One\n\nAda met Grace.\n\n# Two\n\nUNPARSEABLE Bob met Eve."
    finished(api, upload(api, ("notes.md", text), chunk_chars="100").json())
    fake.fail_marker = "NEVER"
    calls = len(fake.calls)

    started = api.post("/api/documents/doc:notes.md/extract", json={})

    assert started.status_code == 202
    done = finished(api, started.json())
    assert (done["kind"], done["state"], done["result"]["extracted"]) == ("extract", "done", 1)
    assert len(fake.calls) == calls + 1  # the done chunk is not extracted twice
    doc = api.get("/api/documents").json()["items"][0]
    assert doc["extraction"] == {"done": 2}


def test_reading_documents_needs_a_key_of_the_project(
    api: httpx.Client, api_engine: Engine, base_url: str, http: Http
) -> None:
    finished(api, upload(api, ("notes.md", b"Ada met Grace.")).json())
    other, _ = api_engine.create_api_key("beta", "read")
    beta = http(base_url, other)

    assert beta.get("/api/documents").json()["items"] == []
    assert beta.get("/api/documents/doc:notes.md").status_code == 404
    assert upload(beta, ("x.md", b"Eve")).status_code == 403


def test_a_document_stored_without_extraction_says_so(api: httpx.Client) -> None:
    finished(api, upload(api, ("notes.md", b"Ada met Grace."), extractor="none").json())

    [doc] = api.get("/api/documents").json()["items"]
    [chunk] = api.get("/api/documents/doc:notes.md").json()["chunks"]

    assert doc["extraction"] == {}
    assert chunk["extraction"] == {
        "status": "none",
        "attempts": 0,
        "last_error": None,
        "extractor": "",
        "entities": 0,
        "relationships": 0,
        "rejected": {},
    }


def test_a_long_document_pages_its_chunks(api: httpx.Client) -> None:
    text = "\n\n".join(f"# Part {i}\n\nPerson{i} met Person{i + 1}." for i in range(5))
    finished(api, upload(api, ("long.md", text.encode()), extractor="none").json())

    view = api.get("/api/documents/doc:long.md", params={"limit": 2, "offset": 2}).json()

    assert view["document"]["chunks"] == 5
    assert view["sections"] == [f"Part {i}" for i in range(5)]
    assert ([c["position"] for c in view["chunks"]], view["offset"]) == ([2, 3], 2)
