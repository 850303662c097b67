"""Saved text vectors (search/saved_texts.py): what processes saved is merged; a file of
another model or dimensions, or damaged, is ignored; a store in memory saves none (the
anchored leg's use of them: tests/unit/test_search_anchor.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kgsearch import connect
from kgsearch.engine import Engine
from kgsearch.search import saved_texts
from kgsearch.search.saved_texts import SavedTexts
from kgsearch.testing import FakeEmbedder


def test_a_new_text_is_saved_with_those_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "texts.npz"
    one, two = SavedTexts(path, "m", 2), SavedTexts(path, "m", 2)  # two processes
    one.note({"films": np.array([1.0, 0.0], dtype=np.float32)})
    assert one.save()
    two.note({"act": np.array([0.0, 1.0], dtype=np.float32)})
    assert two.save()
    found = SavedTexts(path, "m", 2).load()
    assert {t: v.tolist() for t, v in found.items()} == {"films": [1.0, 0.0], "act": [0.0, 1.0]}


def test_a_file_of_another_model_or_dimensions_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "texts.npz"
    saved = SavedTexts(path, "model-a", 2)
    saved.note({"films": np.array([1.0, 0.0], dtype=np.float32)})
    assert saved.save()
    assert SavedTexts(path, "model-b", 2).load() == {}
    assert SavedTexts(path, "model-a", 3).load() == {}
    assert list(SavedTexts(path, "model-a", 2).load()) == ["films"]


def test_a_damaged_file_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "texts.npz"
    path.write_bytes(b"not a numpy file")
    assert SavedTexts(path, "m", 2).load() == {}


def test_a_store_in_memory_saves_nothing() -> None:
    with Engine(connect(":memory:"), embedder=FakeEmbedder(32)) as engine:
        assert saved_texts.saved_texts(engine.store) is None
