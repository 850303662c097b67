"""Read documents for ``kgsearch ingest``: files, directories and stdin into text
and sections.

Each format is read by :mod:`kgsearch.io.formats` (``.html``, ``.pdf`` and ``.docx``
through maintained libraries in the ``documents`` extra). Every file that cannot be
used gets a :class:`DocumentProblem` with its path and the reason (empty, binary, not
UTF-8, too large, unreadable, unsupported type, missing extra) instead of stopping
the others.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgsearch.document_values import Document
from kgsearch.errors import MissingDependency
from kgsearch.io.formats import read_format
from kgsearch.text.sections import markdown_sections

__all__ = [
    "DEFAULT_MAX_BYTES",
    "TEXT_SUFFIXES",
    "Document",
    "DocumentProblem",
    "document_from_bytes",
    "document_from_text",
    "read_documents",
    "supported_suffixes",
]

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".rst", ".text"})
_EXTRA_SUFFIXES = frozenset({".html", ".htm", ".pdf", ".docx"})


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
    """A document made from text given directly (stdin, the API); its sections are
    its Markdown headings."""
    digest = _digest(text)
    return Document(
        source_id="text-" + digest[:16],
        title=title or "text",
        text=text,
        sha256=digest,
        metadata={"format": "text", "bytes": len(text.encode("utf-8", "surrogatepass"))},
        sections=markdown_sections(text),
    )


def _source_id(path: Path) -> str:
    resolved = path.resolve()
    try:
        shown = resolved.relative_to(Path.cwd().resolve())
    except ValueError:
        shown = resolved
    return "doc:" + shown.as_posix()


def _too_large(size: int, max_bytes: int) -> ValueError:
    return ValueError(f"file is {size:,} bytes, larger than the limit of {max_bytes:,}")


def _read_one(path: Path, max_bytes: int) -> Document:
    size = path.stat().st_size
    if size > max_bytes:
        raise _too_large(size, max_bytes)
    data = path.read_bytes()
    text, sections = read_format(path.suffix.lower(), data)
    if not text.strip():
        raise ValueError("empty document (no text)")
    return Document(
        source_id=_source_id(path),
        title=path.name,
        text=text,
        uri=path.resolve().as_uri(),
        sha256=_digest(text),
        metadata={"path": str(path), "format": path.suffix.lower().lstrip("."), "bytes": size},
        sections=sections,
    )


def document_from_bytes(name: str, data: bytes, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """A document made from a file's bytes sent by a client (an upload), read by its
    suffix with the same readers as a file given to ``ingest``.

    Only the base name of ``name`` is kept (a browser may send a path); the source id
    is ``doc:<name>``, so uploading a file of the same name again replaces it.

    Raises:
        ValueError: The file cannot be used: unsupported type, too large, empty,
            binary, not UTF-8, or unreadable as its format (the message says which).
        MissingDependency: The format needs the ``documents`` extra.
    """
    base = name.replace("\\", "/").rsplit("/", 1)[-1].strip()
    if not base:
        raise ValueError("the file has no name; its name's suffix tells its format")
    suffix = Path(base).suffix.lower()
    supported = supported_suffixes()
    if suffix not in supported:
        shown = suffix or "(none)"
        raise ValueError(
            f"unsupported file type {shown}; the server reads " + ", ".join(sorted(supported))
        )
    if len(data) > max_bytes:
        raise _too_large(len(data), max_bytes)
    text, sections = read_format(suffix, data)
    if not text.strip():
        raise ValueError("empty document (no text)")
    return Document(
        source_id="doc:" + base,
        title=base,
        text=text,
        sha256=_digest(text),
        metadata={"upload": base, "format": suffix.lstrip("."), "bytes": len(data)},
        sections=sections,
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
