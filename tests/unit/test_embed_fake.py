"""The deterministic fakes in kgsearch.testing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kgsearch.embed import Embedder
from kgsearch.errors import ProviderError
from kgsearch.testing import FailingEmbedder, FakeEmbedder, FlakyEmbedder


def test_fakes_satisfy_the_embedder_protocol() -> None:
    fakes = [FakeEmbedder(), FlakyEmbedder(FakeEmbedder()), FailingEmbedder()]
    assert [isinstance(fake, Embedder) for fake in fakes] == [True, True, True]


def test_fake_identity() -> None:
    fake = FakeEmbedder(16)
    assert (fake.model_id, fake.dims, fake.max_tokens) == ("fake:16", 16, 256)


def test_fake_default_dims_are_64() -> None:
    assert FakeEmbedder().embed_query("hello").shape == (64,)


def test_fake_vectors_are_float32_unit_vectors() -> None:
    vectors = FakeEmbedder().embed_documents(["Ada works for Acme", "eggs", "a b c d e f g"])
    assert ([v.dtype for v in vectors], [round(float(np.linalg.norm(v)), 6) for v in vectors]) == (
        [np.dtype("float32")] * 3,
        [1.0] * 3,
    )


def test_fake_is_deterministic_across_instances() -> None:
    text = "Ada works for Acme"
    assert np.array_equal(FakeEmbedder().embed_query(text), FakeEmbedder().embed_query(text))


def test_fake_ignores_case_and_punctuation() -> None:
    fake = FakeEmbedder()
    assert np.array_equal(fake.embed_query("Ada, ACME!"), fake.embed_query("ada acme"))


def test_fake_scores_shared_words_higher_than_unrelated_text() -> None:
    anchor, similar, unrelated = FakeEmbedder().embed_documents(
        ["Ada works for Acme", "Ada is employed by Acme", "The recipe needs two eggs"]
    )
    scores = {"similar": float(anchor @ similar), "unrelated": float(anchor @ unrelated)}
    assert sorted(scores, key=scores.__getitem__, reverse=True) == ["similar", "unrelated"]


def test_fake_empty_text_is_the_fixed_unit_vector() -> None:
    fake = FakeEmbedder(4)
    assert fake.embed_query("").tolist() == [0.5, 0.5, 0.5, 0.5]


def test_fake_text_without_words_equals_empty_text() -> None:
    fake = FakeEmbedder(4)
    assert np.array_equal(fake.embed_query("  ...  "), fake.embed_query(""))


def test_fake_truncates_at_max_tokens() -> None:
    fake = FakeEmbedder(max_tokens=2)
    assert np.array_equal(fake.embed_query("ada acme eggs"), fake.embed_query("ada acme"))


def test_fake_count_tokens_counts_words() -> None:
    assert [FakeEmbedder().count_tokens(t) for t in ["", "Ada works for Acme.", "x-y"]] == [0, 4, 2]


def test_fake_counts_calls_and_records_texts() -> None:
    fake = FakeEmbedder()
    fake.embed_documents(["a", "b"])
    fake.embed_query("q")
    assert (fake.calls, fake.embedded_texts) == (2, ["a", "b", "q"])


def test_fake_with_fail_raises_provider_error_and_counts_the_call() -> None:
    fake = FakeEmbedder(fail=True)
    with pytest.raises(ProviderError, match=r"^fake:64 was built with fail=True$"):
        fake.embed_documents(["a"])
    assert (fake.calls, fake.embedded_texts) == (1, [])


def test_fake_rejects_non_positive_dims() -> None:
    with pytest.raises(ValueError, match="dims must be positive"):
        FakeEmbedder(0)


def test_flaky_fails_every_second_call_by_default() -> None:
    flaky = FlakyEmbedder(FakeEmbedder())
    outcomes = []
    for _ in range(5):
        try:
            flaky.embed_documents(["a"])
            outcomes.append("ok")
        except ProviderError:
            outcomes.append("failed")
    assert (outcomes, flaky.calls) == (["ok", "failed", "ok", "failed", "ok"], 5)


def test_flaky_query_counts_towards_failures() -> None:
    flaky = FlakyEmbedder(FakeEmbedder(), fail_every=1)
    with pytest.raises(ProviderError, match=r"^flaky embedder: call 1 fails \(fail_every=1\)$"):
        flaky.embed_query("q")


def test_flaky_returns_the_inner_vectors_when_it_succeeds() -> None:
    assert np.array_equal(
        FlakyEmbedder(FakeEmbedder(), fail_every=3).embed_query("Ada"),
        FakeEmbedder().embed_query("Ada"),
    )


def test_flaky_delegates_identity_to_inner() -> None:
    flaky = FlakyEmbedder(FakeEmbedder(8, max_tokens=5))
    assert (flaky.model_id, flaky.dims, flaky.max_tokens, flaky.count_tokens("a b")) == (
        "fake:8",
        8,
        5,
        2,
    )


def test_flaky_rejects_non_positive_period() -> None:
    with pytest.raises(ValueError, match="fail_every must be positive"):
        FlakyEmbedder(FakeEmbedder(), fail_every=0)


def test_failing_always_raises_and_counts() -> None:
    failing = FailingEmbedder()
    for call in (failing.embed_query, lambda text: failing.embed_documents([text])):
        with pytest.raises(ProviderError, match=r"^failing embedder: every call fails$"):
            call("q")
    assert failing.calls == 2


def test_failing_has_the_fake_identity() -> None:
    failing = FailingEmbedder(32)
    assert (failing.model_id, failing.dims, failing.max_tokens, failing.count_tokens("a b")) == (
        "fake:32",
        32,
        256,
        2,
    )


def test_fake_fixed_vector_has_unit_norm_for_odd_dims() -> None:
    assert math.isclose(float(np.linalg.norm(FakeEmbedder(7).embed_query(""))), 1.0, rel_tol=1e-6)
