"""Reading documents: text, Markdown, HTML, PDF and DOCX through the documents extra,
and a named reason for every file that cannot be used."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import docx
from pdf_files import minimal_pdf

from kgsearch.io.documents import document_from_text, read_documents


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


def test_a_docx_decompression_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    import resource
    import zipfile

    document = docx.Document()
    document.add_paragraph("Grace Hopper built the first compiler.")
    real = tmp_path / "real.docx"
    document.save(str(real))
    bomb = tmp_path / "bomb.docx"
    with zipfile.ZipFile(real) as source, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as out:
        for item in source.infolist():
            out.writestr(item, source.read(item.filename))
        # 300 MB of zeros compress to a few hundred KB: the 751 KB .docx of issue 32
        # (written a megabyte at a time, so this test's own memory stays small)
        with out.open("word/media/zeros.bin", "w", force_zip64=True) as zeros:
            for _ in range(300):
                zeros.write(bytes(1024 * 1024))
    assert bomb.stat().st_size < 1024 * 1024
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    docs, problems = read_documents([bomb, real])

    assert [d.title for d in docs] == ["real.docx"]
    (problem,) = problems
    assert "decompression bomb" in problem.reason and "bomb.docx" in problem.path
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 100  # nothing expanded (the zeros alone would be 300 MB)


def test_a_nul_byte_anywhere_in_a_text_file_marks_it_binary(tmp_path: Path) -> None:
    late = tmp_path / "late.txt"
    late.write_bytes(b"Ada Lovelace wrote notes.\n" * 1000 + b"\x00tail")
    docs, problems = read_documents([late])
    assert docs == [] and "binary file" in problems[0].reason


def test_a_non_pdf_named_pdf_leaves_no_pdf_library_noise_on_stderr(tmp_path: Path) -> None:
    # pypdf logs its repairs; with no logging set up Python printed them on stderr
    # after kgsearch's own message (issue 35 papercut #14). A child process, because
    # pytest installs logging handlers of its own.
    (tmp_path / "fake.pdf").write_text("hello, this is not a pdf", encoding="utf-8")
    code = (
        "from pathlib import Path; from kgsearch.io.documents import read_documents\n"
        f"docs, problems = read_documents([Path({str(tmp_path / 'fake.pdf')!r})])\n"
        "print(problems[0].reason)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "not a readable PDF" in done.stdout
    assert done.stderr == ""
