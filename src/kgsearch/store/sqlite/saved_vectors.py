"""A (project, kind)'s vectors saved beside the store and mapped, so that processes
share them (issue 34: ``serve --workers N``) and a fresh process reads no vector blob.

A fresh process used to read every embedded row's vector from SQLite into a matrix of
its own and quantize it to int8 before its first vector search: 2.6-3.5 s of CPU for
MetaQA's 129k relationships, and each ``serve`` worker held its own 198 MB of float32
and 50 MB of int8 codes. The process that reads them now writes the matrix (with its
spare rows), the int8 codes, the rowids and the ids to one file in the store's
``<db>.ann`` folder, and every process, itself included, maps that file copy-on-write:
pages no process writes stay the page cache's, shared by all (only the rows appended
or zeroed since touch private pages).

**Which rows a file holds.** It is named after the last ``vector_changes`` position of
the snapshot it was read at (``<name>-<kind>-<seq>.vectors``). Every write that changes
a row's vector or liveness logs the row there, from any process, in its transaction
(migration ``m008``), so a file of position ``seq`` plus the logged changes after it
is the current state: a process maps the newest file not ahead of the log and applies
the changes by key, as a cache entry follows writes (``vectors.py``). A file is not
used when the log was pruned past it, when the changes are many (a re-embedding, a
new model: more than a fifth of the rows, or vectors of other dimensions), or when a
sample of its rows does not match SQLite's (:data:`SPOT_ROWS`: a store replaced by
another, a damaged file): the rows are read from SQLite then and saved anew. So no
digest of the vectors is needed, which would read them all.
"""

from __future__ import annotations

import contextlib
import json
import logging
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from kgsearch.store import saved_files

__all__ = ["SPOT_ROWS", "Saved", "find", "loading", "path", "read", "write"]

_log = logging.getLogger(__name__)

_MAGIC = b"KGSVEC\x00\x01"
# Version of the layout; a file of another version is never read.
_FORMAT = 1
# Sections start on page boundaries, so each maps on its own.
_ALIGN = 4096
_HEAD = struct.Struct("<8sQ")
SPOT_ROWS = 64
"""Rows of a mapped file compared with SQLite's before it is used (evenly spread)."""


@dataclass(frozen=True)
class Saved:
    """A saved file's contents, mapped.

    Attributes:
        seq: The last ``vector_changes`` position the rows include.
        rowids: Rowid of each row.
        ids: Row id of each row.
        buffer: The vectors, one per row, then spare rows (zeros).
        codes: The int8 codes of ``buffer`` (all its rows).
        scale: The codes' scale (``Int8Scan``).
        has_validity: Whether a relationship had validity bounds.
        kernel_key: The scan kernel's key of the rows (``nbits.key``; None: not known).
    """

    seq: int
    rowids: npt.NDArray[np.int64]
    ids: list[str]
    buffer: npt.NDArray[np.float32]
    codes: npt.NDArray[np.int8]
    scale: float
    has_validity: bool
    kernel_key: str | None = None


def path(base: Path, seq: int) -> Path:
    """The file of ``base``'s rows as of log position ``seq``."""
    return base.with_name(f"{base.stem}-{seq}{base.suffix}")


def find(base: Path, last_seq: int) -> Path | None:
    """The newest file saved for ``base`` that is not ahead of the log (``last_seq``)."""
    best: tuple[int, Path] | None = None
    for found in base.parent.glob(f"{base.stem}-*{base.suffix}"):
        tag = found.name[len(base.stem) + 1 : len(found.name) - len(base.suffix)]
        if tag.isdigit() and int(tag) <= last_seq and (best is None or int(tag) > best[0]):
            best = (int(tag), found)
    return best[1] if best is not None else None


def write(base: Path, saved: Saved, rows: int) -> Path | None:
    """Save the first ``rows`` rows of ``saved`` (and its spare rows) atomically; the
    file's path, or None when it could not be written (logged)."""
    if any("\0" in i for i in saved.ids[:rows]):
        return None  # the separator: such ids are not saved
    ids = "\0".join(saved.ids[:rows]).encode("utf-8", "surrogatepass")
    sections: dict[str, npt.NDArray[Any]] = {
        "buffer": saved.buffer,
        "codes": saved.codes,
        "rowids": np.ascontiguousarray(saved.rowids[:rows]),
    }
    layout: dict[str, Any] = {}
    offset = _ALIGN
    for name, array in sections.items():
        layout[name] = [offset, list(array.shape), array.dtype.str]
        offset += _aligned(array.nbytes)
    layout["ids"] = [offset, [len(ids)], "|u1"]
    header = {
        "format": _FORMAT,
        "seq": saved.seq,
        "rows": rows,
        "scale": saved.scale,
        "has_validity": saved.has_validity,
        "kernel_key": saved.kernel_key,
        "sections": layout,
        "size": offset + len(ids),
    }
    head = json.dumps(header).encode()
    if _HEAD.size + len(head) > _ALIGN:
        return None

    def fill(tmp: Path) -> None:
        with tmp.open("wb") as out:
            out.write(_HEAD.pack(_MAGIC, len(head)) + head)
            for name, array in sections.items():
                out.seek(layout[name][0])
                out.write(np.ascontiguousarray(array).data)
            out.seek(layout["ids"][0])
            out.write(ids)

    target = path(base, saved.seq)
    return target if saved_files.keep(target, fill, time.time(), "the vectors") else None


def read(file: Path) -> Saved | None:
    """The mapped contents of a saved file (copy-on-write: writes stay in this process);
    None when it is not one of this layout or is cut short."""
    try:
        with file.open("rb") as f:
            magic, length = _HEAD.unpack(f.read(_HEAD.size))
            if magic != _MAGIC or length > _ALIGN:
                return None
            header = json.loads(f.read(length))
        if header.get("format") != _FORMAT or file.stat().st_size != header["size"]:
            return None
        sections = header["sections"]
        buffer, codes, rowids = (_map(file, sections[n]) for n in ("buffer", "codes", "rowids"))
        ids = bytes(_map(file, sections["ids"])).decode("utf-8", "surrogatepass")
    except (OSError, ValueError, KeyError, TypeError, struct.error) as exc:
        _log.info("saved vectors %s not used: %s", file, exc)
        return None
    rows = int(header["rows"])
    names = ids.split("\0") if rows else []
    if len(names) != rows or rowids.shape != (rows,) or buffer.shape != codes.shape:
        return None
    if buffer.dtype != np.float32 or codes.dtype != np.int8 or buffer.shape[0] < rows:
        return None
    return Saved(
        seq=int(header["seq"]),
        rowids=rowids,
        ids=names,
        buffer=buffer,
        codes=codes,
        scale=float(header["scale"]),
        has_validity=bool(header["has_validity"]),
        kernel_key=header.get("kernel_key"),
    )


def _map(file: Path, section: list[Any]) -> npt.NDArray[Any]:
    offset, shape, dtype = section
    if not all(shape):
        return np.zeros(shape, dtype=np.dtype(dtype))
    mapped = np.memmap(file, dtype=np.dtype(dtype), mode="c", offset=offset, shape=tuple(shape))
    return mapped.view(np.ndarray)  # plain arrays: no memmap wrapping on every slice


def _aligned(size: int) -> int:
    return -(-size // _ALIGN) * _ALIGN


@contextlib.contextmanager
def loading(base: Path | None) -> Iterator[None]:
    """Hold ``base``'s lock file (``<base stem>.lock``) while the rows are mapped or read
    and saved: processes starting together (``serve --workers N``) then read SQLite
    once, and the others map the file the first saved instead of each reading the rows
    and saving a file of its own (which left them mapping different copies). Nothing is
    held without ``fcntl``, when the lock cannot be made, or before the folder exists:
    a small store, which saves nothing, gets no folder of lock files (a store's first
    processes ever may then each read the rows once)."""
    if base is None or not base.parent.is_dir():
        yield
        return
    try:
        import fcntl

        lock = base.with_suffix(".lock").open("a")
    except (ImportError, OSError):
        yield
        return
    with lock:
        with contextlib.suppress(OSError):
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield
