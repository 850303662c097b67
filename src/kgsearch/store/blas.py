"""numpy's OpenBLAS held to one thread around a background build's LAPACK calls.

OpenBLAS splits each call over every core, and its threads spin while they wait for
each other: on a loaded machine (2 cores, load 12) the one ``eigh`` of a 384 × 384
matrix in the scan kernel's build (``nbits.py``) cost 1.7-2.1 s of CPU, against 15 ms
on one thread, CPU taken from the searches the build runs beside. OpenBLAS has no
per-call setting, only a process-wide thread count, which :func:`one_thread` sets to 1
for the span of a block and restores after the last such block running ends. numpy
offers no API for it, so the count is set through the library numpy's wheel ships
(``numpy.libs``; the symbol names of the wheels since numpy 1.26); with any other BLAS
(MKL, Accelerate, a system OpenBLAS) this does nothing.

Other threads' BLAS calls in that span (a search's products of a query with 150 rows,
below OpenBLAS's own threshold for a second thread) run on one thread too.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

__all__ = ["one_thread"]

_SYMBOLS = (
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
    ("openblas_get_num_threads", "openblas_set_num_threads"),
)
_lock = threading.Lock()
_holders = 0
_saved = 0


@functools.cache
def _controls() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    """(get, set) of the thread count of the OpenBLAS numpy's wheel ships, or None."""
    folder = Path(np.__file__).resolve().parent.parent / "numpy.libs"
    for library in sorted(folder.glob("*openblas*.so*")) if folder.is_dir() else []:
        try:
            handle = ctypes.CDLL(str(library))
        except OSError:
            continue
        for get_name, set_name in _SYMBOLS:
            if hasattr(handle, get_name) and hasattr(handle, set_name):
                get, put = getattr(handle, get_name), getattr(handle, set_name)
                get.restype, put.argtypes = ctypes.c_int, [ctypes.c_int]
                return get, put
    return None


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """OpenBLAS on one thread within the block (blocks in several threads nest: the
    count is restored when the last one ends)."""
    global _holders, _saved
    controls = _controls()
    if controls is None:
        yield
        return
    get, put = controls
    with _lock:
        if _holders == 0:
            _saved = get()
            put(1)
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                put(_saved)
