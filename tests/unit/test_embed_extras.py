"""The sentence-transformers and FastEmbed adapters: missing extras, and the SDK calls they make.

Neither SDK is a dev dependency, so the adapters run against small stand-in modules
put into ``sys.modules``; the stand-ins record how they were called.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from kgsearch.embed.fastembed import FastEmbedEmbedder
from kgsearch.embed.sentence_transformers import SentenceTransformersEmbedder
from kgsearch.errors import MissingDependency


class StubSentenceTransformer:
    """Records ``encode`` calls; vectors are ``[len(text), 0, 0]`` (not unit length)."""

    def __init__(self, name: str, device: str | None = None) -> None:
        self.init = (name, device)
        self.prompts = {"query": "query: ", "passage": "passage: "}
        self.max_seq_length = 128
        self.encode_calls: list[tuple[list[str], str | None]] = []

    def get_sentence_embedding_dimension(self) -> int:
        return 3

    def tokenizer(self, text: str) -> dict[str, list[int]]:
        return {"input_ids": [101, *range(len(text.split())), 102]}

    def encode(self, texts: list[str], *, prompt_name: str | None, **kwargs: Any) -> np.ndarray:
        self.encode_calls.append((texts, prompt_name))
        return np.array([[len(text), 0.0, 0.0] for text in texts])


class StubTextEmbedding:
    """Records calls; passages embed to ``[0, 2, 0]`` and queries to ``[0, 0, 5]``."""

    def __init__(self, model_name: str, cache_dir: str | None, threads: int | None) -> None:
        self.init = (model_name, cache_dir, threads)
        self.calls: list[tuple[str, Any]] = []

    def passage_embed(self, texts: list[str], batch_size: int) -> Iterator[np.ndarray]:
        self.calls.append(("passage", texts))
        return iter([np.array([0.0, 2.0, 0.0]) for _ in texts])

    def query_embed(self, query: str) -> Iterator[np.ndarray]:
        self.calls.append(("query", query))
        return iter([np.array([0.0, 0.0, 5.0])])


@pytest.fixture
def stub_sentence_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("sentence_transformers")
    module.SentenceTransformer = StubSentenceTransformer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)


@pytest.fixture
def stub_fastembed(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("fastembed")
    module.TextEmbedding = StubTextEmbedding  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fastembed", module)


def test_sentence_transformers_missing_gives_the_pip_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(MissingDependency) as caught:
        SentenceTransformersEmbedder("all-MiniLM-L6-v2")
    assert caught.value.message.splitlines()[-1] == "pip install 'kgsearch[sentence-transformers]'"


def test_sentence_transformers_missing_is_an_import_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ImportError):
        SentenceTransformersEmbedder("all-MiniLM-L6-v2")


def test_fastembed_missing_gives_the_pip_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fastembed", None)
    with pytest.raises(MissingDependency) as caught:
        FastEmbedEmbedder("BAAI/bge-small-en-v1.5")
    assert caught.value.message.splitlines()[-1] == "pip install 'kgsearch[fastembed]'"


@pytest.mark.usefixtures("stub_sentence_transformers")
def test_sentence_transformers_identity() -> None:
    embedder = SentenceTransformersEmbedder("/models/minilm", device="cpu")
    assert (
        embedder.model_id,
        embedder.dims,
        embedder.max_tokens,
        embedder.count_tokens("a b c"),
        embedder._model.init,
    ) == ("sentence-transformers:/models/minilm", 3, 128, 5, ("/models/minilm", "cpu"))


@pytest.mark.usefixtures("stub_sentence_transformers")
def test_sentence_transformers_applies_document_and_query_prompts() -> None:
    embedder = SentenceTransformersEmbedder("e5")
    embedder.embed_documents(["doc one", "doc two"])
    embedder.embed_query("question")
    assert embedder._model.encode_calls == [
        (["doc one", "doc two"], "passage"),
        (["question"], "query"),
    ]


@pytest.mark.usefixtures("stub_sentence_transformers")
def test_sentence_transformers_returns_unit_float32_vectors() -> None:
    vectors = SentenceTransformersEmbedder("m").embed_documents(["abc", ""])
    assert [v.tolist() for v in vectors] == [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]


@pytest.mark.usefixtures("stub_sentence_transformers")
def test_sentence_transformers_empty_list_skips_the_model() -> None:
    embedder = SentenceTransformersEmbedder("m")
    assert (embedder.embed_documents([]), embedder._model.encode_calls) == ([], [])


@pytest.mark.usefixtures("stub_fastembed")
def test_fastembed_identity() -> None:
    embedder = FastEmbedEmbedder("BAAI/bge-small-en-v1.5", cache_dir="/cache", threads=2)
    assert (
        embedder.model_id,
        embedder.dims,
        embedder.max_tokens,
        embedder.count_tokens("x" * 8),
        embedder._model.init,
    ) == ("fastembed:BAAI/bge-small-en-v1.5", 3, 512, 3, ("BAAI/bge-small-en-v1.5", "/cache", 2))


@pytest.mark.usefixtures("stub_fastembed")
def test_fastembed_routes_documents_and_queries() -> None:
    embedder = FastEmbedEmbedder("m")
    documents = embedder.embed_documents(["a", "b"])
    query = embedder.embed_query("q")
    assert ([v.tolist() for v in documents], query.tolist(), embedder._model.calls[1:]) == (
        [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]],
        [0.0, 0.0, 1.0],
        [("passage", ["a", "b"]), ("query", "q")],
    )


@pytest.mark.usefixtures("stub_fastembed")
def test_fastembed_empty_list_skips_the_model() -> None:
    embedder = FastEmbedEmbedder("m")
    assert (embedder.embed_documents([]), embedder._model.calls) == (
        [],
        [("query", "dimension probe")],
    )
