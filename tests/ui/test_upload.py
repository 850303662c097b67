"""Uploading documents in Chromium: PDF, HTML and DOCX sent as files, read by the
server with the readers of ``kgsearch ingest``, extracted by the real spaCy
extractor, then found by search; a file the server cannot read is refused with its
reason.

The PDF is printed by Chromium itself (``page.pdf``: compressed streams and embedded
fonts, the kind that the old text upload stored as ``%PDF-1.5 … /FlateDecode``); the
DOCX is written by python-docx with heading styles; the HTML page has a head, a
script and inline code, as real pages do.
"""

from __future__ import annotations

from pathlib import Path

import docx
import pytest
from playwright.sync_api import Browser, Page, expect
from ui_browser import Site, Watched, sign_in

PAGE_HTML = """<!doctype html><html lang="en"><head><title>Compilers</title>
<style>body { font-family: serif }</style><script>var tracking = 1;</script></head>
<body><h1>Compilers</h1>
<p>Grace Hopper wrote the <code>A-0</code> compiler at Remington Rand in 1952.</p>
<h2>Languages</h2><p>John Backus led the FORTRAN team at IBM.</p></body></html>"""


@pytest.fixture(scope="module")
def pdf_file(browser: Browser, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PDF printed by Chromium from an HTML page."""
    path = tmp_path_factory.mktemp("pdf") / "lovelace.pdf"
    page = browser.new_page()
    try:
        page.set_content(
            "<h1>Analytical Engine</h1><p>Ada Lovelace wrote the first program for the "
            "Analytical Engine of Charles Babbage in London.</p>"
        )
        page.pdf(path=str(path))
    finally:
        page.close()
    assert path.read_bytes().startswith(b"%PDF-")
    return path


@pytest.fixture
def docx_file(tmp_path: Path) -> Path:
    document = docx.Document()
    document.add_heading("Cryptography", 1)
    document.add_paragraph("Alan Turing worked at Bletchley Park during the war.")
    path = tmp_path / "turing.docx"
    document.save(str(path))
    return path


@pytest.fixture
def html_file(tmp_path: Path) -> Path:
    path = tmp_path / "compilers.html"
    path.write_text(PAGE_HTML, encoding="utf-8")
    return path


def upload(page: Page, *files: Path, extractor: str = "spacy") -> None:
    page.set_input_files("#ingest-files", [str(f) for f in files])
    page.select_option("#extractor", extractor)
    page.click("#ingest-form button[type=submit]")


def text_cards(page: Page, query: str) -> str:
    page.goto(page.url.split("#")[0] + "#/search")
    page.wait_for_selector("#q")
    page.fill("#q", query)
    page.select_option("#result-types", "text")
    page.press("#q", "Enter")
    expect(page.locator("#results .card").first).to_be_visible()
    return page.locator("#results").inner_text()


def test_pdf_html_and_docx_uploads_are_read_extracted_and_searchable(
    tab: Watched, site: Site, pdf_file: Path, docx_file: Path, html_file: Path
) -> None:
    page = sign_in(tab, site, hash="#/ingest")
    expect(page.locator("#job")).to_be_hidden()  # no empty panel before a job
    upload(page, pdf_file, docx_file, html_file)
    expect(page.locator("#job-state")).to_have_text("done", timeout=90_000)
    expect(page.locator("#job")).to_contain_text("3 document(s)")
    expect(page.locator("#extracted")).to_contain_text("Extracted")
    expect(page.locator("[data-counter='entities']")).not_to_have_text("0")
    page.locator("#job h3").first.scroll_into_view_if_needed()
    tab.shot("upload", doc=True)
    found = text_cards(page, "Ada Lovelace Analytical Engine")
    assert "doc:lovelace.pdf" in found
    assert "Ada Lovelace wrote the first program" in found
    assert "/FlateDecode" not in found and "%PDF" not in found
    found = text_cards(page, "Grace Hopper compiler")
    assert "doc:compilers.html" in found
    assert "<code>" not in found and "tracking" not in found and "font-family" not in found
    found = text_cards(page, "Alan Turing Bletchley Park")
    assert "doc:turing.docx" in found and "Cryptography" in found
    # the graph holds what spaCy found in them
    named = site.engine.store.objects_named_many("alpha", ["Alan Turing", "Grace Hopper"], limit=5)
    assert set(named) == {"Alan Turing", "Grace Hopper"}
    assert [e for e in tab.errors if "401" not in e] == []


def test_a_file_the_server_cannot_read_is_refused_with_its_reason(
    tab: Watched, site: Site, tmp_path: Path
) -> None:
    fake = tmp_path / "scan.pdf"
    fake.write_bytes(b"this is not a PDF at all")
    other = tmp_path / "sheet.xlsx"
    other.write_bytes(b"PK\x03\x04")
    page = sign_in(tab, site, hash="#/ingest")
    upload(page, fake, other, extractor="none")
    refused = page.locator("#refused li")
    expect(refused).to_have_count(2)
    expect(page.locator("#job .error")).to_contain_text("no file could be read (400)")
    expect(refused.filter(has_text="scan.pdf")).to_contain_text("not a readable PDF")
    expect(refused.filter(has_text="sheet.xlsx")).to_contain_text("unsupported file type .xlsx")
    tab.shot("upload-refused", doc=True)


def test_a_mixed_upload_ingests_the_readable_files_and_names_the_others(
    tab: Watched, site: Site, docx_file: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.docx"
    broken.write_bytes(b"PK\x03\x04 not a zip")
    page = sign_in(tab, site, hash="#/ingest")
    upload(page, docx_file, broken, extractor="none")
    expect(page.locator("#job-state")).to_have_text("done", timeout=30_000)
    problems = page.locator("#job .problems li")
    expect(problems).to_have_count(1)
    expect(problems).to_contain_text("broken.docx")
    expect(problems).to_contain_text("not a readable .docx")
