"""``Engine.from_settings(model_threads=N)``: the bundled model gets N onnxruntime
threads (what ``serve --workers`` gives each process); other providers ignore it."""

from __future__ import annotations

from pathlib import Path

from kgsearch import Engine
from kgsearch.config import Settings
from kgsearch.embed.bundled import BundledEmbedder
from kgsearch.embed.fake import FakeEmbedder


def _engine(tmp_path: Path, model: str, threads: int | None) -> Engine:
    settings = Settings().model_copy(
        update={"embed": Settings().embed.model_copy(update={"model": model})}
    )
    return Engine.from_settings(settings, store_url=str(tmp_path / "kg.db"), model_threads=threads)


def test_the_bundled_model_runs_on_the_threads_asked_for(tmp_path: Path) -> None:
    with _engine(tmp_path, "bundled", 1) as engine:
        embedder = engine.embedder
        assert isinstance(embedder, BundledEmbedder)
        assert embedder._threads == 1  # the session is opened with these (lazily)


def test_without_a_count_the_bundled_model_keeps_its_default(tmp_path: Path) -> None:
    with _engine(tmp_path, "bundled", None) as engine:
        embedder = engine.embedder
        assert isinstance(embedder, BundledEmbedder)
        assert embedder._threads == BundledEmbedder()._threads


def test_other_providers_ignore_the_thread_count(tmp_path: Path) -> None:
    with _engine(tmp_path, "fake:8", 1) as engine:
        assert isinstance(engine.embedder, FakeEmbedder)
        assert engine.embedder.dims == 8
