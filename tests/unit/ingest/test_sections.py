"""Documents read as sections: Markdown, reST, HTML, DOCX and PDF structure, chunks that
never span two sections, and code and tables kept as text but not mined."""

from __future__ import annotations

import io
from pathlib import Path

import docx
from pdf_files import minimal_pdf
from pypdf import PdfReader, PdfWriter

from kgsearch.document_values import Document, Section
from kgsearch.io.documents import document_from_text, read_documents
from kgsearch.io.formats import read_format
from kgsearch.text.chunking import mask_spans, split_spans, unmined_spans
from kgsearch.text.sections import markdown_sections, rst_sections
from kgsearch.writes.documents import chunk_document


def titles(sections: tuple[Section, ...]) -> list[str]:
    return [s.title for s in sections]


def unmined(section: Section) -> list[str]:
    return [section.text[a:b] for a, b in section.unmined]


def test_markdown_headings_nest_into_paths_and_a_bare_heading_folds_into_the_next() -> None:
    text = (
        "Intro before any heading.\n\n# Guide\n\n## Install\n\n### Linux\n\napt install.\n\n"
        "### macOS\n\nbrew install.\n\n## Use ##\n\nRun it.\n\n# Notes\n\nEnd.\n"
    )
    sections = markdown_sections(text)
    assert titles(sections) == [
        "",
        "Guide > Install > Linux",
        "Guide > Install > macOS",
        "Guide > Use",
        "Notes",
    ]
    assert sections[1].text == "# Guide\n\n## Install\n\n### Linux\n\napt install.\n\n"
    assert sections[1].path == ("Guide", "Install", "Linux")
    assert "".join(s.text for s in sections) == text


def test_setext_headings_and_a_thematic_break_that_is_not_one() -> None:
    text = "Title\n=====\n\nFirst.\n\n---\n\nStill first.\n\nPart two\n--------\n\nSecond.\n"
    sections = markdown_sections(text)
    assert titles(sections) == ["Title", "Title > Part two"]
    assert "Still first." in sections[0].text
    prose = "A paragraph of prose\nthat runs on\nfor three lines.\n---\n\nMore.\n"
    assert titles(markdown_sections(prose)) == [""]  # a rule under prose, not a title


def test_markdown_headings_code_tables_and_inline_code_are_unmined() -> None:
    text = (
        "# Setup\n\nCall `NULL` never.\n\n```bash\n# a comment, not a heading\nls\n```\n\n"
        "| Name | Type |\n|------|------|\n| x | Integer |\n\nAfter the table.\n\n"
        "    indented code\n\n- a list item\n\n    its continuation\n"
    )
    (section,) = markdown_sections(text)
    assert section.path == ("Setup",)
    assert unmined(section) == [
        "# Setup",
        "`NULL`",
        "```bash\n# a comment, not a heading\nls\n```",
        "| Name | Type |\n|------|------|\n| x | Integer |",
        "    indented code",
    ]


def test_an_unclosed_fence_runs_to_the_next_heading_only() -> None:
    sections = markdown_sections("# A\n\n```python\nx = 1\n\n# B\n\nText of B.\n")
    assert titles(sections) == ["A", "B"]
    assert unmined(sections[0]) == ["# A", "```python\nx = 1"]
    assert unmined(sections[1]) == ["# B"]


def test_front_matter_is_unmined_and_not_a_setext_heading() -> None:
    (section,) = markdown_sections("---\ntitle: Notes\ntags: [a]\n---\nBody text.\n")
    assert section.path == () and unmined(section) == ["---\ntitle: Notes\ntags: [a]\n---"]


def test_text_without_headings_is_one_section_with_an_empty_path() -> None:
    (section,) = markdown_sections("Just text.\n\nMore text, #not-a-heading.")
    assert section.path == () and section.title == ""
    assert markdown_sections("  \n\n ") == ()


def test_headings_with_no_body_fold_forward_and_the_last_one_stays() -> None:
    sections = markdown_sections("# A\n## B\n### C\n#### D\n")
    assert titles(sections) == ["A > B > C > D"]
    assert sections[0].text == "# A\n## B\n### C\n#### D\n"
    assert titles(markdown_sections("#\n\n# \n\ntext")) == [""]  # empty headings are text


def test_very_deep_and_skipped_levels_keep_only_open_headings() -> None:
    text = "".join(f"{'#' * n} L{n}\n\nbody {n}\n\n" for n in range(1, 7)) + "## Back\n\nx\n"
    sections = markdown_sections(text)
    assert titles(sections)[-2:] == ["L1 > L2 > L3 > L4 > L5 > L6", "L1 > Back"]
    assert titles(markdown_sections("# A\n\na\n\n#### Deep\n\nd\n")) == ["A", "A > Deep"]


def test_rst_titles_take_levels_in_order_of_first_use_and_literal_blocks_are_unmined() -> None:
    text = (
        "=====\nGuide\n=====\n\nIntro.\n\nInstall\n-------\n\nRun::\n\n    pip install x\n\n"
        "Then more.\n\nUse\n---\n\n.. code-block:: python\n\n    import x\n\nDone.\n"
    )
    sections = rst_sections(text)
    assert titles(sections) == ["Guide", "Guide > Install", "Guide > Use"]
    assert [s.text[a:b].strip() for s in sections for a, b in s.unmined] == [
        "=====\nGuide\n=====",
        "Install\n-------",
        "pip install x",
        "Use\n---",
        "import x",
    ]


def test_html_headings_pre_tables_and_inline_code(tmp_path: Path) -> None:
    html = (
        "<html><head><title>T</title><style>p {}</style></head><body>"
        "<h1>Guide</h1><p>Returns <code>None</code> when   empty.</p>"
        "<section><h2>Install</h2><pre>pip install\n  kgsearch</pre>"
        "<table><tr><th>Name</th><th>Type</th></tr><tr><td>x</td><td>Integer</td></tr></table>"
        "<p>Done.</p></section></body></html>"
    )
    text, sections = read_format(".html", html.encode())
    assert titles(sections) == ["Guide", "Guide > Install"]
    assert sections[0].text == "Guide\n\nReturns None when empty.\n\n"
    assert unmined(sections[0]) == ["Guide", "None"]
    assert unmined(sections[1]) == [
        "Install",
        "pip install\n  kgsearch",
        "Name | Type\nx | Integer",
    ]
    assert "p {}" not in text and "Done." in sections[1].text


def test_html_navigation_is_dropped_and_inline_elements_join_into_words() -> None:
    # a Sphinx page: a "related" bar and a sidebar by ARIA role, a <nav>, and inline
    # markup inside a word (issue 35 papercut #15)
    html = (
        '<body><div class="related" role="navigation"><ul><li>index</li><li>modules</li>'
        "</ul></div><nav><a>Home</a> <a>Library</a></nav>"
        "<h1>json</h1><p>Use <code><span>json</span><span>.</span><span>dumps</span></code>"
        "(<em>obj</em>) to write JSON.</p>"
        '<div class="sphinxsidebar" role="navigation"><h3>Table of Contents</h3>'
        "<p>Previous topic</p></div>"
        '<div role="contentinfo">© Copyright 2001 Python Software Foundation</div></body>'
    )
    text, sections = read_format(".html", html.encode())
    assert titles(sections) == ["json"]
    assert "Use json.dumps(obj) to write JSON." in text
    for noise in ("modules", "Library", "Table of Contents", "Previous topic", "Copyright"):
        assert noise not in text


def test_pdf_ligatures_read_as_letters(tmp_path: Path) -> None:
    # \256 is the "fi" ligature in a Type 1 font's standard encoding
    (tmp_path / "paper.pdf").write_bytes(minimal_pdf("A \\256le of Ada"))
    ((read,), _) = read_documents([tmp_path / "paper.pdf"])
    assert "A file of Ada" in read.text and "\ufb01" not in read.text


def test_broken_html_is_read_as_far_as_it_goes() -> None:
    text, sections = read_format(".html", b"<h2>Open <b>bold<p>Para one<div>Unclosed <pre>code")
    assert titles(sections) == ["Open bold"]
    assert "Para one" in text and unmined(sections[0]) == ["Open bold", "code"]


def test_docx_heading_styles_and_tables(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_heading("Guide", level=1)
    document.add_paragraph("Grace Hopper built a compiler.")
    document.add_heading("Tables", level=2)
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate([["Name", "Year"], ["COBOL", "1959"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_paragraph("After.")
    document.save(str(tmp_path / "notes.docx"))
    ((read,), problems) = read_documents([tmp_path / "notes.docx"])
    assert problems == [] and titles(read.sections) == ["Guide", "Guide > Tables"]
    assert unmined(read.sections[1]) == ["Tables", "Name | Year\nCOBOL | 1959"]


def test_pdf_pages_are_sections(tmp_path: Path) -> None:
    (tmp_path / "paper.pdf").write_bytes(minimal_pdf("Charles Babbage designed engines."))
    ((read,), _) = read_documents([tmp_path / "paper.pdf"])
    assert titles(read.sections) == ["Page 1"]
    assert "Charles Babbage" in read.sections[0].text


def test_text_from_stdin_is_read_as_markdown_and_txt_files_as_plain(tmp_path: Path) -> None:
    assert titles(document_from_text("# A\n\ntext").sections) == ["A"]
    (tmp_path / "a.txt").write_text("# A\n\ntext", encoding="utf-8")
    ((read,), _) = read_documents([tmp_path / "a.txt"])
    assert titles(read.sections) == [""]


def musique_like(articles: int) -> str:
    return "".join(
        f"## Article {n}\n\nArticle {n} is a thing. It is described here at length.\n\n"
        for n in range(articles)
    )


def test_chunks_never_span_sections_and_record_their_path() -> None:
    document = document_from_text(musique_like(5))
    chunks = chunk_document(document, 1000)
    assert [c.metadata["section"] for c in chunks] == [f"Article {n}" for n in range(5)]
    assert all(c.text.count("## ") == 1 for c in chunks)
    assert chunks[0].metadata["section_path"] == ["Article 0"]
    assert [c.position for c in chunks] == list(range(5))


def test_one_huge_section_is_split_within_itself() -> None:
    body = " ".join(f"Sentence number {n} is here." for n in range(400))
    chunks = chunk_document(document_from_text(f"# Big\n\n{body}\n\n# Small\n\nTiny."), 500)
    assert len(chunks) > 10 and all(len(c.text) <= 500 for c in chunks)
    assert {c.metadata["section"] for c in chunks[:-1]} == {"Big"}
    assert chunks[-1].metadata["section"] == "Small" and chunks[-1].text == "# Small\n\nTiny."


def test_a_document_without_sections_is_chunked_as_before() -> None:
    text = "First paragraph.\n\nSecond paragraph."
    chunks = chunk_document(Document(source_id="s", title="t", text=text), 1000)
    assert [(c.text, c.metadata) for c in chunks] == [(text, {})]


def test_unmined_ranges_follow_the_text_into_each_piece() -> None:
    text = "Prose before.\n\n```\nx = 1\ny = 2\n```\n\nProse after."
    start = text.index("```")
    end = text.rindex("```") + 3
    pieces = split_spans(text, 30, [(start, end)])
    assert [p.text for p in pieces] == ["Prose before.", "```\nx = 1\ny = 2\n```", "Prose after."]
    assert [p.unmined for p in pieces] == [[], [(0, 19)], []]
    whole = split_spans(text, 1000, [(start, end)])
    assert [(whole[0].text[a:b]) for a, b in whole[0].unmined] == ["```\nx = 1\ny = 2\n```"]


def test_masking_keeps_offsets_and_line_breaks() -> None:
    text = "Use `NULL` here.\n```\nFalse\n```"
    spans = unmined_spans(text, {"unmined": [[4, 10], [17, 31]]})
    masked = mask_spans(text, spans)
    assert masked == "Use        here.\n   \n     \n   "
    assert len(masked) == len(text)


def test_malformed_unmined_metadata_is_ignored_not_an_error() -> None:
    text = "Some text."
    metadata = {"unmined": [[0, 4], [8, 99], "x", [True, 3], [5, 2], [1, 2, 3], [-5, 1]]}
    assert unmined_spans(text, metadata) == [(0, 4), (8, 10), (0, 1)]
    assert unmined_spans(text, {"unmined": "0-4"}) == []


def test_only_code_only_tables_and_mixed_languages_read_without_error() -> None:
    code = markdown_sections("```\nprint('hi')\n```\n")
    assert unmined(code[0]) == ["```\nprint('hi')\n```"]
    table = markdown_sections("| a | b |\n|---|---|\n| 1 | 2 |\n")
    assert unmined(table[0]) == ["| a | b |\n|---|---|\n| 1 | 2 |"]
    mixed = markdown_sections("# Введение\n\nТекст.\n\n## 東京\n\n東京は日本の首都です。\n")
    assert titles(mixed) == ["Введение", "Введение > 東京"]
    chunks = chunk_document(document_from_text("```\nprint('hi')\n```\n"), 1000)
    assert [c.metadata for c in chunks] == [{"unmined": [[0, 19]]}]


def test_pdf_pages_sit_under_the_outline_titles_open_on_them(tmp_path: Path) -> None:
    writer = PdfWriter()
    for text in ("Charles Babbage designed engines.", "Ada Lovelace wrote notes."):
        writer.append(PdfReader(io.BytesIO(minimal_pdf(text))))
    chapter = writer.add_outline_item(title="1 Engines", page_number=0)
    writer.add_outline_item(title="1.1 Notes", page_number=1, parent=chapter)
    writer.write(str(tmp_path / "book.pdf"))
    ((read,), _) = read_documents([tmp_path / "book.pdf"])
    assert titles(read.sections) == ["1 Engines > Page 1", "1 Engines > 1.1 Notes > Page 2"]
