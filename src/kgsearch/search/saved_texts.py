"""Vectors of the short texts searches embed besides their questions, saved beside the
store so that a new process does not embed them again.

The anchored leg embeds the content words of a question's rest ("films", "act"), the
rest itself when its relation is in doubt ("what kind of film is") and relation texts
("has imdb rating"), each once per process
(:func:`~kgsearch.search.paths.relation_vectors`). A process that has not met them pays
a model call for each search that brings new ones: ~3-4 ms of CPU, as much as the
question's own (one text or three in a call cost alike), on 14 % of the first 300 MetaQA
questions a fresh process answered and 2 % of the next 700, as the questions' phrasings
repeat. What one process embedded is therefore kept in ``<db>.ann/texts.npz`` (float32
rows as the model returned them, the texts, the model's id), read by the next process on
its first search, and written again (merged with what is on disk, so serve's workers add
to each other's) a few seconds after a search embedded a new text, off the search's
thread, or when the process exits, if sooner. The vectors are the model's own, so
answers are those the process would give after embedding the texts itself. A file of
another model (or dimensions) is ignored and replaced; a damaged one is ignored. The
vectors do not depend on the store, only on the model, so a store's file is right for
any store it is copied beside. At most :data:`MAX_TEXTS` texts are kept.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from kgsearch.search.plan import Vector
from kgsearch.store import saved_files
from kgsearch.store.records import StoreInfo

__all__ = [
    "FILE_NAME",
    "MAX_TEXTS",
    "SavedTexts",
    "SavesFiles",
    "keep_saved",
    "note_saved",
    "saved_texts",
]

FILE_NAME = "texts.npz"
MAX_TEXTS = 10_000
"""The most texts saved (15 MB of 384-dimension vectors): what a text graph's multi-hop
walk embeds (its relation types) goes through the same cache."""
_SAVE_DELAY = 3.0
"""Seconds between a new text and the save that includes it (one write for the texts of
many searches close together)."""
_log = logging.getLogger(__name__)


@runtime_checkable
class SavesFiles(Protocol):
    """A store that keeps files beside itself (SQLite's ``<db>.ann`` folder)."""

    @property
    def saved_folder(self) -> Path | None:
        """The folder, or None (an in-memory store)."""
        ...

    def info(self) -> StoreInfo:
        """The store's metadata (the model its vectors come from)."""
        ...


class SavedTexts:
    """One store's saved text vectors for one model.

    Args:
        path: The file.
        model_id: The model whose vectors are kept (a file of another is ignored).
        dims: Their dimensions.
    """

    def __init__(self, path: Path, model_id: str, dims: int) -> None:
        self.path = path
        self.model_id = model_id
        self.dims = dims
        self._known: dict[str, Vector] = {}
        self._pending = False
        self._at_exit = False
        self._lock = threading.Lock()

    def load(self) -> dict[str, Vector]:
        """The saved vectors by text: empty when there is no file, or it is another
        model's or damaged."""
        try:
            with np.load(self.path, allow_pickle=False) as saved:
                model, texts, vectors = str(saved["model"]), saved["texts"], saved["vectors"]
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            _log.warning("saved texts %s not read: %s", self.path, exc)
            return {}
        if model != self.model_id or vectors.shape != (len(texts), self.dims):
            return {}
        found = {str(t): v for t, v in zip(texts.tolist(), vectors, strict=True)}
        with self._lock:
            for text, vector in found.items():
                self._known.setdefault(text, vector)
        return found

    def note(self, texts: Mapping[str, Vector]) -> None:
        """Keep these new vectors, saved with the others a little later (in a thread of
        its own)."""
        with self._lock:
            room = MAX_TEXTS - len(self._known)
            added = [t for t in texts if t not in self._known][: max(room, 0)]
            for text in added:
                self._known[text] = np.asarray(texts[text], dtype=np.float32)
            if not added or self._pending:
                return
            self._pending = True
            if not self._at_exit:  # a process that ends sooner (a CLI search) saves then
                self._at_exit = True
                atexit.register(self._flush)
        timer = threading.Timer(_SAVE_DELAY, self._flush)
        timer.daemon = True
        timer.name = "kgsearch-saved-texts"
        timer.start()

    def _flush(self) -> None:
        """Save, when a new text waits (the timer and the exit hook both call it)."""
        if self._pending:
            self.save()

    def save(self) -> bool:
        """Write every vector known (the file's own, another process's since included)
        now; whether it was saved."""
        started = time.time()
        self.load()  # what other processes saved meanwhile
        with self._lock:
            self._pending = False
            texts = list(self._known)[:MAX_TEXTS]
            matrix = np.stack([self._known[t] for t in texts]) if texts else None
        if matrix is None:
            return False

        def write(tmp: Path) -> None:
            with tmp.open("wb") as out:
                np.savez(out, model=np.array(self.model_id), texts=np.array(texts), vectors=matrix)

        return saved_files.keep(self.path, write, started, "the texts' vectors")


_LOADED: dict[tuple[str, str], SavedTexts] = {}
_loaded_lock = threading.Lock()


def saved_texts(store: object) -> SavedTexts | None:
    """The saved texts beside ``store`` (one object per file and model in a process),
    or None for a store that saves no files or holds no vectors."""
    if not isinstance(store, SavesFiles):
        return None
    folder = store.saved_folder
    if folder is None:
        return None
    info = store.info()
    if info.embedding_model is None or info.dims is None:
        return None
    key = (str(folder), info.embedding_model)
    with _loaded_lock:
        found = _LOADED.get(key)
        if found is None:
            found = _LOADED[key] = SavedTexts(folder / FILE_NAME, info.embedding_model, info.dims)
    return found


# per embedder, where what it embeds is saved (None: nowhere), see keep_saved
_SINKS: dict[Callable[[str], Vector], SavedTexts | None] = {}
_sinks_lock = threading.Lock()


def keep_saved(
    embed: Callable[[str], Vector],
    saved: Callable[[], SavedTexts | None],
    remember: Callable[[Callable[[str], Vector], Sequence[str], Sequence[Vector]], None],
) -> None:
    """Once per embedder: ``remember`` the vectors saved beside the store (``saved()``,
    None when it saves none) as ``embed``'s, as if it had embedded them
    (:func:`~kgsearch.search.paths.remember_vectors`), and save there what it embeds
    from now on (:func:`note_saved`)."""
    if embed in _SINKS:
        return
    with _sinks_lock:
        if embed in _SINKS:
            return
        found = saved()
        texts = found.load() if found is not None else {}
        remember(embed, list(texts), list(texts.values()))
        _SINKS[embed] = found


def note_saved(embed: Callable[[str], Vector], vectors: Mapping[str, Vector]) -> None:
    """Save these vectors ``embed`` made (as it returned them) where it saves, if
    anywhere (:func:`keep_saved`)."""
    if (saved := _SINKS.get(embed)) is not None:
        saved.note(vectors)
