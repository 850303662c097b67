"""Files saved beside a store so the next process need not build them again (the HNSW
index, ``ann.py``; the scan's 4-bit kernel, ``nbits.py``): each named by a digest of
the vectors it was built from, written atomically, the files of older vectors removed."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["digest", "keep"]

_log = logging.getLogger(__name__)


def keep(path: Path, write: Callable[[Path], None], started: float, what: str) -> bool:
    """Save a file atomically (``write`` fills a temporary file, renamed to ``path``),
    then delete the files of other vectors (``<stem>-<digest><suffix>`` beside it) saved
    before this build ``started``: never one saved by a newer build meanwhile. A failure
    only logs: what could not be saved is built again next time. Whether it was saved."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as exc:
        _log.warning("could not save %s to %s: %s", what, path, exc)
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        return False
    stem = path.stem.rsplit("-", 1)[0]
    for old in path.parent.glob(f"{stem}-*{path.suffix}"):
        with contextlib.suppress(OSError):
            if old != path and old.stat().st_mtime < started:
                old.unlink()
    return True


def digest(matrix: npt.NDArray[Any], recipe: str) -> str:
    """What a file built from ``matrix`` is filed under: a digest of its bytes, shape and
    type and of the ``recipe`` it was built by, so a file is only ever read for the very
    vectors it was built from. SHA-256: 2.5x faster than BLAKE2b here (0.17 against
    0.42 s over MetaQA's 198 MB of relationship vectors; the CPU has SHA extensions)."""
    rows = np.ascontiguousarray(matrix)
    h = hashlib.sha256()
    h.update(f"{recipe}:{rows.shape}:{rows.dtype}:".encode())
    h.update(rows.data)
    return h.hexdigest()[:32]
