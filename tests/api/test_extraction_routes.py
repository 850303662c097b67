"""Text → graph over REST on a real server: documents posted as text become a
background ingest job whose extraction (the fake extractor) builds the graph; the
extraction status, records, retry and preview routes."""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import wait_for

from kgsearch import Engine, connect
from kgsearch.config import ExtractSettings
from kgsearch.errors import InvalidRequest
from kgsearch.extract.schema import ChunkText, ExtractionResult
from kgsearch.testing import FakeEmbedder, FakeExtractor

Http = Callable[..., httpx.Client]
NONE = {"pending": 0, "running": 0, "done": 0, "failed": 0, "dead": 0}
DOC = (
    "Ada Lovelace worked with Charles Babbage on the Analytical Engine in London.\n\n"
    "Charles Babbage designed the Difference Engine for the British Government."
)


class GatedExtractor(FakeExtractor):
    """The fake extractor, holding every batch until ``gate`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.waiting = threading.Event()

    def extract(self, chunks: Sequence[ChunkText]) -> list[ExtractionResult]:
        self.waiting.set()
        self.gate.wait(10)
        return super().extract(chunks)


@pytest.fixture
def fake() -> FakeExtractor:
    return FakeExtractor()


@pytest.fixture
def api_engine(tmp_path: Path, fake: FakeExtractor) -> Iterator[Engine]:
    """An engine whose extractors are ``fake`` (any name but ``bogus``); failed
    chunks are retried at once and are dead after two attempts."""

    def extractors(name: str, domain: str) -> FakeExtractor:
        if name == "bogus":
            raise InvalidRequest(f"unknown extractor {name!r}")
        return fake

    engine = Engine(
        connect(str(tmp_path / "api.db")),
        embedder=FakeEmbedder(32),
        extractors=extractors,
        extract_settings=ExtractSettings(backoff_seconds=0, max_attempts=2),
    )
    yield engine
    engine.close()


@pytest.fixture
def api(base_url: str, http: Http, api_engine: Engine) -> httpx.Client:
    """A read/write client of project alpha."""
    key, _ = api_engine.create_api_key("alpha", "read,write")
    return http(base_url, key)


def record_url(chunk_id: str) -> str:
    return "/api/extraction/chunks/" + urllib.parse.quote(chunk_id, safe="")


def finished(api: httpx.Client, job: dict[str, Any]) -> dict[str, Any]:
    """Poll a job until it is no longer running."""
    url = f"/api/jobs/{job['id']}"
    wait_for(lambda: api.get(url).json()["state"] != "running")
    body: dict[str, Any] = api.get(url).json()
    return body


def test_a_posted_document_is_ingested_and_extracted_in_the_background(
    api: httpx.Client,
) -> None:
    started = api.post("/api/documents", json={"text": DOC, "title": "ada", "chunk_chars": 100})

    assert started.status_code == 202
    job = started.json()
    assert started.headers["location"] == f"/api/jobs/{job['id']}"
    assert (job["kind"], job["project"], job["progress"]["documents_total"]) == (
        "ingest",
        "alpha",
        1,
    )
    done = finished(api, job)
    result = done["result"]
    assert (done["state"], done["error"]) == ("done", None)
    assert (result["documents"], result["chunks"], result["queued"]) == (1, 2, 2)
    assert (result["extraction"]["extracted"], result["extraction"]["dead"]) == (2, 0)
    assert done["progress"] == {
        "documents_total": 1,
        "documents": 1,
        "chunks": 2,
        "entities": result["extraction"]["entities"],
        "relationships": result["extraction"]["relationships"],
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
    }


def test_the_extracted_graph_is_visible_through_the_graph_routes(api: httpx.Client) -> None:
    finished(api, api.post("/api/documents", json={"text": DOC, "chunk_chars": 100}).json())

    babbage = api.get(
        "/api/graph/objects/lookup", params={"type": "thing", "key": "charles babbage"}
    )
    relationships = api.get("/api/graph/relationships", params={"type": "appears_with"}).json()

    assert (babbage.status_code, babbage.json()["properties"]["name"]) == (200, "Charles Babbage")
    assert babbage.json()["id"] in {r["source_id"] for r in relationships["items"]}


def test_each_chunk_has_an_extraction_record(api: httpx.Client) -> None:
    finished(api, api.post("/api/documents", json={"text": DOC, "chunk_chars": 100}).json())
    chunk = api.get("/api/chunks").json()["items"][0]

    record = api.get(record_url(chunk["id"])).json()

    assert (record["chunk_id"], record["status"], record["attempts"]) == (chunk["id"], "done", 0)
    assert record["result"]["extractor"] == "fake"
    assert "Ada Lovelace" in {e["name"] for e in record["result"]["graph"]["entities"]}


def test_a_record_is_found_by_a_chunk_id_with_slashes(
    api: httpx.Client, api_engine: Engine, tmp_path: Path
) -> None:
    path = tmp_path / "notes" / "ada.md"
    path.parent.mkdir()
    path.write_text(DOC, encoding="utf-8")
    api_engine.ingest([path], project="alpha")
    chunk_id = api.get("/api/chunks").json()["items"][0]["id"]

    response = api.get("/api/extraction/chunks/" + chunk_id.replace("#", "%23"))

    assert "/" in chunk_id
    assert (response.status_code, response.json()["chunk_id"]) == (200, chunk_id)


def test_a_chunk_never_queued_has_no_record(api: httpx.Client) -> None:
    response = api.get("/api/extraction/chunks/nope")

    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")


def test_documents_are_stored_with_their_own_titles(api: httpx.Client) -> None:
    body = {"documents": [{"text": "Ada met Grace.", "title": "one"}, {"text": "Bob met Eve."}]}

    done = finished(api, api.post("/api/documents", json=body).json())

    assert (done["state"], done["result"]["documents"]) == ("done", 2)
    assert sorted(s["title"] for s in api.get("/api/sources").json()["items"]) == ["one", "text"]


def test_extraction_status_counts_the_project(api: httpx.Client) -> None:
    finished(api, api.post("/api/documents", json={"text": DOC, "chunk_chars": 100}).json())

    status = api.get("/api/extraction/status").json()

    assert status["counts"]["done"] == 2
    assert status["entities"] > 0 and status["failures"] == {}
    assert status["extractors"] == {"fake fake:model": 2}


def test_a_job_of_another_project_is_not_found(
    api: httpx.Client, api_engine: Engine, base_url: str, http: Http
) -> None:
    job = api.post("/api/documents", json={"text": DOC}).json()
    other, _ = api_engine.create_api_key("beta", "read,write")

    for response in (
        http(base_url, other).get(f"/api/jobs/{job['id']}"),
        http(base_url, other).delete(f"/api/jobs/{job['id']}"),
    ):
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
    finished(api, job)
    assert http(base_url, other).get("/api/extraction/status").json()["counts"] == NONE


def test_an_unknown_job_is_not_found(api: httpx.Client) -> None:
    assert api.get("/api/jobs/0123456789abcdef").status_code == 404


def test_an_unparseable_reply_ends_in_a_dead_chunk_with_its_raw_reply(
    api: httpx.Client,
) -> None:
    done = finished(api, api.post("/api/documents", json={"text": "Ada said UNPARSEABLE."}).json())
    status = api.get("/api/extraction/status").json()
    (chunk_id, failure) = next(iter(status["failures"].items()))
    record = api.get(record_url(chunk_id)).json()

    assert (done["state"], done["result"]["extraction"]["dead"]) == ("done", 1)
    assert status["counts"] == {**NONE, "dead": 1}
    assert failure.startswith("reply could not be parsed")
    assert (record["status"], record["attempts"]) == ("dead", 2)
    assert f"raw reply:\ngarbage reply for {chunk_id}" in record["last_error"]


def test_retry_requeues_dead_chunks_and_a_run_extracts_them(api: httpx.Client) -> None:
    finished(api, api.post("/api/documents", json={"text": "Ada said UNPARSEABLE."}).json())

    assert api.post("/api/extraction/retry", json={}).json() == {"requeued": 0}
    assert api.post("/api/extraction/retry", json={"dead": True}).json() == {"requeued": 1}
    assert api.get("/api/extraction/status").json()["counts"] == {**NONE, "pending": 1}
    run = api.post("/api/extraction/run", json={"batch_size": 4})
    done = finished(api, run.json())

    assert (run.status_code, done["kind"], done["state"]) == (202, "extract", "done")
    assert (done["result"]["processed"], done["result"]["dead"]) == (2, 1)


def test_preview_returns_the_extraction_and_writes_nothing(api: httpx.Client) -> None:
    response = api.post("/api/extraction/preview", json={"text": "Ada Lovelace met Grace Hopper."})

    body = response.json()
    assert response.status_code == 200
    assert [e["name"] for e in body["graph"]["entities"]] == ["Ada Lovelace", "Grace Hopper"]
    assert (body["chunk_id"], body["extractor"]) == ("preview", "fake")
    assert api.get("/api/extraction/status").json()["counts"] == NONE
    assert api.get("/api/chunks").json()["items"] == []
    assert api.get("/api/graph/objects").json()["items"] == []


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/documents", {"text": "  \n\t"}),
        ("/api/documents", {"text": ""}),
        ("/api/documents", {"documents": [{"text": "Ada."}, {"text": " "}]}),
        ("/api/documents", {"documents": []}),
        ("/api/documents", {}),
        ("/api/documents", {"text": "Ada.", "documents": [{"text": "Bob."}]}),
        ("/api/documents", {"documents": [{"text": "Ada."}], "title": "t"}),
        ("/api/documents", {"text": "Ada.", "chunk_chars": 10}),
        ("/api/documents", {"text": "Ada.", "extractor": "bogus"}),
        ("/api/extraction/preview", {"text": "   "}),
        ("/api/extraction/preview", {"text": "Ada.", "extractor": "bogus"}),
        ("/api/extraction/preview", {"text": "Ada.", "schema": {"relation_types": []}}),
    ],
)
def test_bad_input_is_400_with_the_error_shape(
    api: httpx.Client, path: str, body: dict[str, Any]
) -> None:
    response = api.post(path, json=body)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
    assert set(response.json()["error"]) == {"code", "message", "details"}


@pytest.mark.parametrize(
    "body",
    [
        {"path": "/etc/passwd"},
        {"paths": ["/etc/passwd"]},
        {"documents": [{"path": "/etc/passwd"}]},
        {"documents": [{"text": "Ada.", "uri": "file:///etc/passwd"}]},
    ],
)
def test_server_side_paths_are_refused(api: httpx.Client, body: dict[str, Any]) -> None:
    response = api.post("/api/documents", json=body)

    assert response.status_code == 400
    assert api.get("/api/sources").json()["items"] == []


def test_a_ten_megabyte_text_is_refused_by_the_body_limit(api: httpx.Client) -> None:
    response = api.post("/api/documents", json={"text": "Ada wrote. " * 1_000_000})

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert api.get("/api/sources").json()["items"] == []


def test_writing_routes_need_the_write_scope(api_engine: Engine, base_url: str, http: Http) -> None:
    key, _ = api_engine.create_api_key("alpha", "read")
    reader = http(base_url, key)

    assert reader.post("/api/documents", json={"text": DOC}).status_code == 403
    assert reader.post("/api/extraction/retry", json={}).status_code == 403
    assert reader.post("/api/extraction/run", json={}).status_code == 403
    assert reader.post("/api/extraction/preview", json={"text": "Ada."}).status_code == 200


@pytest.mark.parametrize("fake", [GatedExtractor()], ids=["gated"])
def test_a_cancelled_job_stops_after_its_current_batch(
    api: httpx.Client, fake: GatedExtractor
) -> None:
    job = api.post("/api/documents", json={"text": DOC, "chunk_chars": 100}).json()
    assert fake.waiting.wait(10)

    cancelling = api.delete(f"/api/jobs/{job['id']}")
    fake.gate.set()
    done = finished(api, job)

    assert (cancelling.status_code, cancelling.json()["state"]) == (200, "running")
    assert (done["state"], done["result"], done["progress"]["documents"]) == ("cancelled", None, 1)
    assert api.get("/api/sources").json()["items"][0]["title"] == "text"


def test_openapi_lists_the_extraction_routes(api: httpx.Client) -> None:
    paths = api.get("/openapi.json").json()["paths"]

    assert {
        "/api/documents",
        "/api/jobs/{job_id}",
        "/api/extraction/status",
        "/api/extraction/chunks/{chunk_id}",
        "/api/extraction/retry",
        "/api/extraction/run",
        "/api/extraction/preview",
    } <= set(paths)


def test_deleting_a_document_takes_what_it_built_and_404s_after(
    api: httpx.Client, api_engine: Engine
) -> None:
    done = finished(api, api.post("/api/documents", json={"text": DOC, "chunk_chars": 100}).json())
    assert done["state"] == "done"
    (source,) = api_engine.list_rows("source", project="alpha").items
    objects = len(api_engine.list_rows("object", project="alpha").items)
    assert objects > 0

    url = "/api/documents/" + urllib.parse.quote(source.id, safe="")
    deleted = api.delete(url)

    assert deleted.status_code == 200, deleted.text
    body = deleted.json()
    assert (body["sources"], body["chunks"], body["objects_deleted"]) == (1, 2, objects)
    assert api_engine.list_rows("object", project="alpha").items == []
    assert api.get(f"/api/sources/{source.id}").status_code == 404
    again = api.delete(url)
    assert again.status_code == 404 and source.id in again.text
