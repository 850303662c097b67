"""What a reader keeps of a real-world page (issue 35, #15): an HTML page's navigation
and the chrome around its main content are dropped, and a PDF's ligature glyphs read
as letters, so neither is mined as entities nor missed by a search."""

from __future__ import annotations

from pdf_files import minimal_pdf

from kgsearch.io.formats import read_format

SPHINX_PAGE = (
    b"<!doctype html><html><head><title>json</title></head><body>"
    b'<div class="related" role="navigation"><ul><li><a href="index.html">index</a></li>'
    b'<li><a href="modindex.html">modules</a></li></ul></div>'
    b'<div class="document"><div class="body" role="main"><h1>json: JSON encoder</h1>'
    b'<p>Use <code class="xref"><span class="pre">json</span></code>.'
    b'<code><span class="pre">dumps</span></code>(<em>obj</em>) to write.</p></div></div>'
    b'<div class="sphinxsidebar" role="navigation"><h3>Navigation</h3><p>Previous</p></div>'
    b'<div class="footer">Copyright 2001 Python Software Foundation.</div></body></html>'
)


def test_a_page_with_a_main_part_is_read_from_there() -> None:
    text, sections = read_format(".html", SPHINX_PAGE)

    assert text == "json: JSON encoder\n\nUse json.dumps(obj) to write."
    assert [s.path for s in sections] == [("json: JSON encoder",)]


def test_navigation_is_dropped_from_a_page_without_a_main_part() -> None:
    page = (
        b"<body><nav><a>Home</a> <a>Docs</a></nav><h1>Ada</h1><p>Ada met Grace.</p>"
        b"<ul role='menubar'><li>File</li></ul><footer>About us</footer></body>"
    )

    text, _ = read_format(".html", page)

    assert text == "Ada\n\nAda met Grace.\n\nAbout us"


def test_pdf_ligatures_become_letters() -> None:
    # 0xAE and 0xAF are the fi and fl ligatures of Helvetica's standard encoding
    text, _ = read_format(".pdf", minimal_pdf("The \\256le is \\257at."))

    assert text == "The file is flat."
