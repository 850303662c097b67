"""Reading documents: text, Markdown, HTML, PDF and DOCX through the documents extra,
and a named reason for every file that cannot be used."""

from __future__ import annotations

from pathlib import Path

import docx

from kgsearch.io.documents import document_from_text, read_documents


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF with ``text`` in Helvetica (hand-built: pypdf reads, not writes, text)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def test_html_pdf_and_docx_are_read_as_text(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text(
        "<html><head><style>p {color: red}</style><script>var x = 1;</script></head>"
        "<body><h1>Ada</h1><p>Ada Lovelace wrote the first program.</p></body></html>",
        encoding="utf-8",
    )
    (tmp_path / "paper.pdf").write_bytes(minimal_pdf("Charles Babbage designed engines."))
    document = docx.Document()
    document.add_paragraph("Grace Hopper built the first compiler.")
    document.save(str(tmp_path / "notes.docx"))
    docs, problems = read_documents([tmp_path])
    assert problems == []
    texts = {d.title: d.text for d in docs}
    assert "Ada Lovelace wrote the first program." in texts["page.html"]
    assert "var x" not in texts["page.html"] and "color" not in texts["page.html"]
    assert "Charles Babbage designed engines." in texts["paper.pdf"]
    assert texts["notes.docx"].strip() == "Grace Hopper built the first compiler."
    assert {d.metadata["format"] for d in docs} == {"html", "pdf", "docx"}


def test_broken_pdf_and_docx_are_named_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (tmp_path / "broken.docx").write_bytes(b"PK\x03\x04 not a zip")
    docs, problems = read_documents([tmp_path])
    assert docs == []
    reasons = {Path(p.path).name: p.reason for p in problems}
    assert "PDF" in reasons["broken.pdf"] or "empty" in reasons["broken.pdf"]
    assert "not a readable .docx" in reasons["broken.docx"]


def test_an_unreadable_file_is_named_with_the_reason(tmp_path: Path) -> None:
    # /proc/self/mem exists but cannot be read from offset 0 (EIO), even by root,
    # so this fails on any Linux machine whatever the user
    path = tmp_path / "memory.txt"
    path.symlink_to("/proc/self/mem")
    docs, problems = read_documents([path])
    assert docs == [] and problems[0].path == str(path)
    assert problems[0].reason == "Input/output error"


def test_a_byte_order_mark_is_dropped_and_ids_follow_the_path(tmp_path: Path) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes("\ufeffAda Lovelace".encode())
    ((doc,), _) = read_documents([path])
    assert doc.text == "Ada Lovelace" and doc.source_id.startswith("doc:")
    assert doc.source_id.endswith("bom.txt") and doc.uri == path.resolve().as_uri()


def test_text_documents_are_named_by_their_content() -> None:
    a, b = document_from_text("same text"), document_from_text("same text")
    assert a.source_id == b.source_id and a.sha256 == b.sha256
    assert document_from_text("other").source_id != a.source_id
