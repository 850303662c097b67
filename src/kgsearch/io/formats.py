"""File formats into text and sections, for :mod:`kgsearch.io.documents`.

Markdown and reStructuredText split at their headings and plain text is one section
(:mod:`kgsearch.text.sections`). HTML splits at ``h1``–``h6``, ``<pre>`` blocks and
tables are unmined, and so is inline ``<code>``; navigation (``<nav>``, and the site's
navigation, search, menu, banner and footer landmarks by ARIA role) is dropped, and a
page with a ``<main>`` (or ``role="main"``) is read from there. DOCX splits at its
``Heading N`` (and ``Title``) paragraph styles, with tables and code-styled paragraphs
unmined; a PDF is one section per page, ``Page N``, under the outline (bookmark) titles
open on that page when the PDF has an outline, its text NFKC-normalised (ligatures such
as ``ﬁ`` become letters). These three go through maintained libraries in the
``documents`` extra (beautifulsoup4, python-docx, pypdf).
"""

from __future__ import annotations

import io
import logging
import re
import unicodedata
import zipfile
from collections.abc import Iterator
from typing import Any

from kgsearch.document_values import Section
from kgsearch.errors import MissingDependency
from kgsearch.text.sections import (
    Block,
    markdown_sections,
    plain_sections,
    rst_sections,
    sections_from_blocks,
)

__all__ = ["MARKDOWN_SUFFIXES", "decode", "read_format"]

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
MAX_EXPANDED_BYTES = 100 * 1024 * 1024
"""A .docx (a zip) may expand to this much at most, all its parts together."""
MAX_ZIP_ENTRIES = 10_000
"""Parts a .docx may hold."""
MAX_PDF_PAGES = 5_000
"""Pages a PDF may have."""
MAX_TEXT_CHARS = 50 * 1024 * 1024
"""Characters of text one document may give (a small PDF can expand to much more)."""
_HEADING = re.compile(r"^h([1-6])$")
_SKIPPED = frozenset({"script", "style", "noscript", "template", "head", "nav"})
# ARIA landmarks around the content: site navigation, search box, site header and
# footer (a Sphinx page's sidebar and "related" bars say role="navigation")
_SKIPPED_ROLES = frozenset({"navigation", "search", "menubar", "menu", "banner", "contentinfo"})
_INLINE_CODE = frozenset({"code", "kbd", "samp", "tt"})
# Elements after which text starts a new paragraph (everything else runs inline).
_BLOCKS = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "br",
        "dd",
        "details",
        "dialog",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "header",
        "hr",
        "html",
        "li",
        "main",
        "ol",
        "p",
        "section",
        "summary",
        "ul",
    ]
)
_DOCX_HEADING = re.compile(r"^heading (\d)$")


def decode(data: bytes) -> str:
    """UTF-8 text (a byte order mark dropped).

    Raises:
        ValueError: Binary data, or not UTF-8 (the message names the byte).
    """
    if b"\x00" in data:  # anywhere in the file, not only its start
        raise ValueError("binary file, not text (it contains NUL bytes)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "convert it to UTF-8 first"
        ) from None


def _missing(library: str, suffix: str) -> MissingDependency:
    return MissingDependency(
        f"reading {suffix} files needs {library} from the documents extra:\n"
        "pip install 'kgsearch[documents]'",
        details={"extra": "documents"},
    )


class _Flow:
    """The blocks of an HTML page, in reading order: inline text gathers into a
    paragraph (whitespace collapsed, inline code recorded) until a block ends it."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self._words: list[str] = []
        self._code: list[tuple[int, int]] = []
        self._length = 0
        self._space = False
        self.heading = 0  # the level of the heading being read, 0 in text

    def inline(self, text: str, *, code: bool) -> None:
        for token in re.split(r"(\s+)", text):
            if not token:
                continue
            if token.isspace():
                self._space = True
                continue
            if self._space and self._words:
                self._words.append(" ")
                self._length += 1
            self._space = False
            if code and self._code and self._code[-1][1] >= self._length - 1:
                self._code[-1] = (self._code[-1][0], self._length + len(token))
            elif code:
                self._code.append((self._length, self._length + len(token)))
            self._words.append(token)
            self._length += len(token)

    def end_paragraph(self) -> None:
        if self._words and self.heading:
            self.blocks.append(Block("heading", "".join(self._words), level=self.heading))
        elif self._words:
            self.blocks.append(Block("text", "".join(self._words), unmined=tuple(self._code)))
        self.heading = 0
        self._words, self._code, self._length, self._space = [], [], 0, False

    def block(self, block: Block) -> None:
        self.end_paragraph()
        self.blocks.append(block)


def _walk_html(node: object, flow: _Flow, *, code: bool = False) -> None:
    from bs4.element import NavigableString, PreformattedString, Tag

    if isinstance(node, NavigableString):
        if not isinstance(node, PreformattedString):  # comments, CDATA, doctype
            flow.inline(str(node), code=code)
        return
    if not isinstance(node, Tag) or node.name in _SKIPPED:
        return
    if str(node.get("role") or "").lower() in _SKIPPED_ROLES:
        return  # menus, sidebars, site header and footer: not the page's text
    name = node.name.lower()
    heading = _HEADING.match(name)
    if heading:
        # the heading is the inline text up to its end or its first block: an
        # unclosed heading (the parser nests the rest of the page in it) ends there
        flow.end_paragraph()
        flow.heading = int(heading.group(1))
        for child in node.children:
            _walk_html(child, flow, code=code)
        flow.end_paragraph()
    elif name == "pre":
        flow.block(Block("code", node.get_text()))
    elif name == "table":
        rows = (
            " | ".join(" ".join(c.get_text(" ").split()) for c in row.find_all(["td", "th"]))
            for row in node.find_all("tr")
        )
        flow.block(Block("table", "\n".join(r for r in rows if r.strip(" |"))))
    else:
        block = name in _BLOCKS
        if block:
            flow.end_paragraph()
        for child in node.children:
            _walk_html(child, flow, code=code or name in _INLINE_CODE)
        if block:
            flow.end_paragraph()


def _html(data: bytes) -> tuple[str, tuple[Section, ...]]:
    try:
        from bs4 import BeautifulSoup
    except ImportError as exc:
        raise _missing("beautifulsoup4", ".html") from exc
    soup = BeautifulSoup(decode(data), "html.parser")
    # a page that marks its main content is read from there: site navigation, headers
    # and footers around it are the same on every page and would be mined as entities
    main = soup.find("main") or soup.find(role="main")
    flow = _Flow()
    for child in [main] if main is not None else soup.children:
        _walk_html(child, flow)
    flow.end_paragraph()
    return sections_from_blocks(flow.blocks)


_QUIET = logging.NullHandler()


def _pdf(data: bytes) -> tuple[str, tuple[Section, ...]]:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError as exc:
        raise _missing("pypdf", ".pdf") from exc
    # pypdf logs what it repairs ("invalid pdf header", "EOF marker not found"); with no
    # handler, Python's last resort printed those on stderr after kgsearch's own message
    # for the file. A null handler keeps them out of the terminal; an application that
    # configures logging still receives them.
    logging.getLogger("pypdf").addHandler(_QUIET)
    try:
        reader = PdfReader(io.BytesIO(data))
        if len(reader.pages) > MAX_PDF_PAGES:
            raise _TooLarge(f"a PDF of {len(reader.pages):,} pages; at most {MAX_PDF_PAGES:,}")
        pages: list[str] = []
        chars = 0
        for page in reader.pages:
            # NFKC: a PDF's ligature glyphs (ﬁ, ﬂ) and compatibility forms become the
            # letters a search types
            pages.append(unicodedata.normalize("NFKC", page.extract_text() or ""))
            chars += len(pages[-1])
            if chars > MAX_TEXT_CHARS:
                raise _TooLarge(f"a PDF whose text is over {MAX_TEXT_CHARS:,} characters")
    except _TooLarge:
        raise
    except (PdfReadError, ValueError, KeyError) as exc:
        raise ValueError(f"not a readable PDF ({exc})") from None
    outline = _outline(reader)
    sections = tuple(
        Section((*outline.get(n, ()), f"Page {n}"), text)
        for n, text in enumerate(pages, 1)
        if text.strip()
    )
    return "\n\n".join(pages), sections


def _outline(reader: Any) -> dict[int, tuple[str, ...]]:
    """Each page's place in the PDF's outline (bookmarks): the titles open at its end,
    by page number; empty when there is no outline or it cannot be read."""
    entries: list[tuple[int, int, str]] = []  # (page, depth, title) in outline order

    def walk(items: list[Any], depth: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
            else:
                page = reader.get_destination_page_number(item)
                title = " ".join(str(item.title or "").split())
                if page is not None and page >= 0 and title:
                    entries.append((page + 1, depth, title))

    try:
        walk(reader.outline, 0)
    except Exception:  # a broken outline costs the titles, never the document
        return {}
    places: dict[int, tuple[str, ...]] = {}
    stack: list[tuple[int, str]] = []
    entries.sort(key=lambda e: e[0])  # stable: outline order within a page
    at = 0
    for page in range(1, len(reader.pages) + 1):
        while at < len(entries) and entries[at][0] <= page:
            _, depth, title = entries[at]
            while stack and stack[-1][0] >= depth:
                stack.pop()
            stack.append((depth, title))
            at += 1
        if stack:
            places[page] = tuple(t for _, t in stack)
    return places


def _docx_blocks(document: object) -> Iterator[Block]:
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    for item in document.iter_inner_content():  # type: ignore[attr-defined]
        if isinstance(item, Table):
            rows = (" | ".join(cell.text.strip() for cell in row.cells) for row in item.rows)
            yield Block("table", "\n".join(rows))
        elif isinstance(item, Paragraph):
            style = (item.style.name if item.style is not None else "") or ""
            level = _DOCX_HEADING.match(style.lower())
            if level or style.lower() == "title":
                yield Block("heading", item.text, level=int(level.group(1)) if level else 1)
            elif "code" in style.lower() or "preformatted" in style.lower():
                yield Block("code", item.text)
            else:
                yield Block("text", item.text)


def _docx(data: bytes) -> tuple[str, tuple[Section, ...]]:
    try:
        import docx
    except ImportError as exc:
        raise _missing("python-docx", ".docx") from exc
    _check_zip(data)
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # python-docx raises zipfile/KeyError/ValueError variants
        raise ValueError(f"not a readable .docx file ({type(exc).__name__}: {exc})") from None
    return sections_from_blocks(_docx_blocks(document))


class _TooLarge(ValueError):
    """A document over one of the limits above (its message says which)."""


def _check_zip(data: bytes) -> None:
    """Refuse a zip that would expand past :data:`MAX_EXPANDED_BYTES` or hold more than
    :data:`MAX_ZIP_ENTRIES` parts (a decompression bomb), before anything is expanded;
    a part is never read past the size its directory gives."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ValueError(f"not a readable .docx file (not a zip: {exc})") from None
    if len(entries) > MAX_ZIP_ENTRIES:
        raise ValueError(f"a .docx of {len(entries):,} parts; at most {MAX_ZIP_ENTRIES:,}")
    expanded = sum(e.file_size for e in entries)
    if expanded > MAX_EXPANDED_BYTES:
        raise ValueError(
            f"a .docx that expands to {expanded:,} bytes (from {len(data):,}); at most "
            f"{MAX_EXPANDED_BYTES:,}: a decompression bomb, or a document too large to read"
        )


def read_format(suffix: str, data: bytes) -> tuple[str, tuple[Section, ...]]:
    """A file's text and sections, by its suffix (lower case, with the dot).

    Raises:
        ValueError: The file cannot be read as that format (the message says why).
        MissingDependency: The format needs the ``documents`` extra.
    """
    if suffix in {".html", ".htm"}:
        return _html(data)
    if suffix == ".pdf":
        return _pdf(data)
    if suffix == ".docx":
        return _docx(data)
    text = decode(data)
    if suffix in MARKDOWN_SUFFIXES:
        return text, markdown_sections(text)
    if suffix == ".rst":
        return text, rst_sections(text)
    return text, plain_sections(text)
