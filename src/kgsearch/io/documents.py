"""Read documents for ``kgsearch ingest``: files, directories and stdin into text.

Plain text and Markdown are read here; ``.html``, ``.pdf`` and ``.docx`` go through
maintained libraries in the ``documents`` extra (beautifulsoup4, pypdf, python-docx).
Every file that cannot be used gets a :class:`DocumentProblem` with its path and the
reason (empty, binary, not UTF-8, too large, unreadable, unsupported type, missing
extra) instead of stopping the others.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgsearch.document_values import Document
from kgsearch.errors import MissingDependency

__all__ = [
    "DEFAULT_MAX_BYTES",
    "TEXT_SUFFIXES",
    "Document",
    "DocumentProblem",
    "document_from_text",
    "read_documents",
    "supported_suffixes",
]

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".rst", ".text"})
_EXTRA_SUFFIXES = frozenset({".html", ".htm", ".pdf", ".docx"})
_SNIFF = 8192


@dataclass(frozen=True)
class DocumentProblem:
    """A file that was not read, and why; ``skipped`` marks a file of another type
    met while walking a directory (not a failure)."""

    path: str
    reason: str
    skipped: bool = False


def supported_suffixes() -> frozenset[str]:
    """File suffixes ``ingest`` reads (some need the ``documents`` extra)."""
    return TEXT_SUFFIXES | _EXTRA_SUFFIXES


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def document_from_text(text: str, *, title: str | None = None) -> Document:
    """A document made from text given directly (stdin, the API)."""
    digest = _digest(text)
    return Document(
        source_id="text-" + digest[:16],
        title=title or "text",
        text=text,
        sha256=digest,
        metadata={"format": "text", "bytes": len(text.encode("utf-8", "surrogatepass"))},
    )


def _decode(data: bytes) -> str:
    if b"\x00" in data[:_SNIFF]:
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


def _html(data: bytes) -> str:
    try:
        from bs4 import BeautifulSoup
    except ImportError as exc:
        raise _missing("beautifulsoup4", ".html") from exc
    soup = BeautifulSoup(_decode(data), "html.parser")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    return str(soup.get_text("\n"))


def _pdf(data: bytes) -> str:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError as exc:
        raise _missing("pypdf", ".pdf") from exc
    try:
        reader = PdfReader(io.BytesIO(data))
        return "\n\n".join(page.extract_text() or "" for page in reader.pages)
    except (PdfReadError, ValueError, KeyError) as exc:
        raise ValueError(f"not a readable PDF ({exc})") from None


def _docx(data: bytes) -> str:
    try:
        import docx
    except ImportError as exc:
        raise _missing("python-docx", ".docx") from exc
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # python-docx raises zipfile/KeyError/ValueError variants
        raise ValueError(f"not a readable .docx file ({type(exc).__name__}: {exc})") from None
    return "\n\n".join(p.text for p in document.paragraphs)


def _text_of(path: Path, data: bytes) -> str:
    suffix = path.suffix.lower()
    if suffix in {".html", ".htm"}:
        return _html(data)
    if suffix == ".pdf":
        return _pdf(data)
    if suffix == ".docx":
        return _docx(data)
    return _decode(data)


def _source_id(path: Path) -> str:
    resolved = path.resolve()
    try:
        shown = resolved.relative_to(Path.cwd().resolve())
    except ValueError:
        shown = resolved
    return "doc:" + shown.as_posix()


def _read_one(path: Path, max_bytes: int) -> Document:
    size = path.stat().st_size
    if size > max_bytes:
        raise ValueError(f"file is {size:,} bytes, larger than the limit of {max_bytes:,}")
    data = path.read_bytes()
    text = _text_of(path, data)
    if not text.strip():
        raise ValueError("empty document (no text)")
    return Document(
        source_id=_source_id(path),
        title=path.name,
        text=text,
        uri=path.resolve().as_uri(),
        sha256=_digest(text),
        metadata={"path": str(path), "format": path.suffix.lower().lstrip("."), "bytes": size},
    )


def _walk(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(folder) / name


def read_documents(
    paths: Sequence[Path], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[list[Document], list[DocumentProblem]]:
    """Read files and directories (recursively, hidden entries skipped).

    A file named directly must have a supported suffix; inside a directory, files
    with other suffixes are reported as skipped (not failed). Nothing raises for one
    bad file.

    Returns:
        The documents read, in path order, and one problem per file not read.
    """
    documents: list[Document] = []
    problems: list[DocumentProblem] = []
    suffixes = supported_suffixes()
    for given in paths:
        walked = given.is_dir()
        if walked:
            files = list(_walk(given))
            if not files:
                problems.append(DocumentProblem(str(given), "directory has no files"))
        elif given.exists():
            files = [given]
        else:
            problems.append(DocumentProblem(str(given), "no such file or directory"))
            continue
        for path in files:
            if path.suffix.lower() not in suffixes:
                shown = path.suffix or "(none)"
                problems.append(
                    DocumentProblem(
                        str(path),
                        f"unsupported file type {shown}; ingest reads "
                        + ", ".join(sorted(suffixes)),
                        skipped=walked,
                    )
                )
                continue
            try:
                documents.append(_read_one(path, max_bytes))
            except (OSError, ValueError, MissingDependency) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                problems.append(DocumentProblem(str(path), reason))
    return documents, problems
