"""``Engine.from_settings(model_threads=N)``: the bundled model gets N onnxruntime
threads (what ``serve --workers`` gives each process); other providers ignore it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgsearch import Engine
from kgsearch.config import Settings
from kgsearch.embed.bundled import BundledEmbedder
from kgsearch.embed.fake import FakeEmbedder
from kgsearch.errors import ConfigError
from kgsearch.query_embedding import DOCUMENT_MODEL_FAST


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


def test_fast_queries_in_the_settings_reach_the_bundled_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _engine(tmp_path, "bundled", None) as engine:  # on by default
        assert engine.embedder._fast_queries  # type: ignore[attr-defined]
    monkeypatch.setenv("KGSEARCH_EMBED__FAST_QUERIES", "false")
    settings = Settings()
    assert settings.embed.fast_queries is False
    with Engine.from_settings(settings, store_url=str(tmp_path / "kg.db")) as engine:
        embedder = engine.embedder
        assert isinstance(embedder, BundledEmbedder)
        assert not embedder._fast_queries
        assert embedder.queries == "document model (fast_queries is off)"


def test_the_fast_model_keeps_its_own_queries_by_default(tmp_path: Path) -> None:
    with _engine(tmp_path, "bundled:fast", None) as engine:
        assert engine.embedder.queries == DOCUMENT_MODEL_FAST  # type: ignore[attr-defined]


def test_fast_queries_with_the_fast_model_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KGSEARCH_EMBED__FAST_QUERIES", "true")
    monkeypatch.setenv("KGSEARCH_EMBED__MODEL", "bundled:fast")
    engine = Engine.from_settings(Settings(), store_url=str(tmp_path / "kg.db"))
    with engine, pytest.raises(ConfigError, match="fast_queries is for the default model"):
        engine.embedder  # noqa: B018
