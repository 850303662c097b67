"""The bundled model re-quantised per channel: built once from the bundled file, cached.

The bundled all-MiniLM-L6-v2 ships as an int8 ONNX graph whose weights are dequantised
to float32 at every call, and quantised per tensor. This module rebuilds it, torch-free:

1. onnxruntime constant-folds the graph (basic optimisations, written out with
   ``optimized_model_filepath``), so the int8 → float32 weights become plain float32
   constants;
2. ``onnxruntime.quantization.quantize_dynamic`` quantises the MatMul weights again,
   int8 **per channel** (per output column).

The result runs about twice as fast, and its vectors keep a cosine of about 0.99 to the
bundled model's. The quantiser needs the ``onnx`` package (a dependency; the ``fast``
extra pins the version of :data:`REFERENCE_SHA256`), for the build only; running the
built model needs onnxruntime alone.

The build is byte-reproducible for one onnxruntime/onnx pair; :data:`REFERENCE_SHA256`
is the sha256 it gives with the versions named there. Other versions may write other
bytes, so every build is also checked on :data:`PROBES` (each probe's cosine to the
bundled model must reach :data:`MIN_COSINE`, their mean :data:`MIN_MEAN_COSINE`), and
a manifest next to the model records the recipe, the source's sha256, the output's
sha256, the tool versions and the cosines. A cached model is used only while its
manifest matches the recipe, the source and the file's bytes; otherwise it is built
again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgsearch.errors import MissingDependency, ProviderError

__all__ = [
    "MIN_COSINE",
    "MIN_MEAN_COSINE",
    "PER_CHANNEL",
    "PROBES",
    "RECIPE",
    "REFERENCE_SHA256",
    "Manifest",
    "Recipe",
    "cache_dir",
    "ensure_model",
    "read_manifest",
]

RECIPE = "minilm-int8-per-channel/1"
"""Names the steps above; change it whenever they change, so cached models are rebuilt."""

REFERENCE_SHA256 = "aa42cbd88e66574987b221a7e1971f44006ba3a5914e5bbb7f2625ec790fe6dd"
"""The output's sha256 from the pinned source with onnxruntime 1.32.0 and onnx 1.23.2
(58,589,719 bytes; built twice, identical)."""

MIN_COSINE = 0.97
"""Every probe's cosine to the bundled model must reach this for a build to be kept (the
reference build's lowest is 0.982, on the empty string; the others are 0.993–0.997)."""
MIN_MEAN_COSINE = 0.99
"""And the probes' mean cosine this (the reference build: 0.994)."""

PROBES: tuple[str, ...] = (
    "Who directed the movie Jesse James?",
    "Jesse James was directed by Henry King.",
    "Henry Fonda starred in The Grapes of Wrath",
    "Ada Lovelace works for Acme Corporation as an engineer.",
    "The committee approved the new bridge over the harbour in 2004.",
    "Rivers flood after heavy rain in spring.",
    "The recipe needs two eggs, flour and a pinch of salt.",
    "Vitamin D deficiency is associated with an increased risk of fractures.",
    "Transcription factors bind to promoter regions to regulate gene expression.",
    "Radio City is India's first private FM radio station and was started on 3 July 2001.",
    "[Type: #person] [Role: CEO] Grace Hopper",
    "Scrooge's business partner Jacob Marley had been dead for seven years.",
    "What language are the films of Akira Kurosawa in?",
    "Mobile, Alabama",
    "graph databases",
    "",
)
"""Fixed texts every build is checked on: questions, facts, a typed object, a title,
abstract-like prose, a bare name, a short phrase and the empty string."""

_MANIFEST_SUFFIX = ".json"
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Recipe:
    """How a model is built from the bundled file, and how close it must stay to it.

    Attributes:
        name: Names the steps (the manifest's ``recipe``); change it whenever they
            change, so cached models are rebuilt.
        build: ``build(source, built)`` writes the model built from ``source``; it may
            put scratch files beside ``built`` (a temporary directory).
        reference_sha256: The output's sha256 with the pinned onnxruntime and onnx.
        min_cosine: Every probe's cosine to the bundled model must reach this.
        min_mean_cosine: And the probes' mean cosine this.
        label: What the model is called in error messages.
    """

    name: str
    build: Callable[[Path, Path], None]
    reference_sha256: str
    min_cosine: float
    min_mean_cosine: float
    label: str


@dataclass(frozen=True)
class Manifest:
    """What a cached model was built from, and what it was checked to be.

    Attributes:
        recipe: The recipe's name at build time (:data:`RECIPE` for ``bundled:fast``).
        source_sha256: The bundled model the build started from.
        sha256: The built file's sha256.
        reproduced: Whether ``sha256`` equals the recipe's reference sha256.
        onnxruntime: The onnxruntime version that built it.
        onnx: The onnx version that built it.
        min_cosine: The lowest probe cosine to the bundled model.
        mean_cosine: The probes' mean cosine to the bundled model.
    """

    recipe: str
    source_sha256: str
    sha256: str
    reproduced: bool
    onnxruntime: str
    onnx: str
    min_cosine: float
    mean_cosine: float


def cache_dir() -> Path:
    """Where built models are kept: ``$XDG_CACHE_HOME/kgsearch/models``, else
    ``~/.cache/kgsearch/models``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kgsearch" / "models"


def ensure_model(
    source: Path,
    source_sha256: str,
    name: str,
    *,
    cosines: Callable[[Path, Sequence[str]], Sequence[float]],
    directory: Path | None = None,
    recipe: Recipe | None = None,
) -> Path:
    """The cached model ``recipe`` builds from ``source``, built first if missing or stale.

    Args:
        source: The bundled int8 model file (already checked against its sha256).
        source_sha256: Its sha256; part of the cache key and of the manifest.
        name: The model's name, the stem of the cached file.
        cosines: ``cosines(candidate, PROBES)`` embeds the probes with the candidate
            file and with the bundled model and returns each probe's cosine.
        directory: The cache directory (default: :func:`cache_dir`).
        recipe: The build (default: :data:`PER_CHANNEL`, the ``bundled:fast`` model).

    Returns:
        The path of a model whose manifest matches this recipe, the source and the
        file's bytes.

    Raises:
        MissingDependency: A build is needed and ``onnx`` is not installed.
        ProviderError: The cache directory is not writable, or a build fails or
            misses the recipe's cosines on a probe.
    """
    recipe = recipe if recipe is not None else PER_CHANNEL
    folder = directory if directory is not None else cache_dir()
    target = folder / f"{name}-{source_sha256[:12]}.onnx"
    if _current(target, source_sha256, recipe):
        return target
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with _locked(folder / f"{target.name}.lock"):
            # Another process may have built it while this one waited for the lock.
            if not _current(target, source_sha256, recipe):
                _build(source, source_sha256, target, cosines, recipe)
    except OSError as exc:
        raise ProviderError(
            f"Could not build the {recipe.label} in {folder}: {exc}. Make the "
            "directory writable, or point XDG_CACHE_HOME at one that is.",
            details={"path": str(folder)},
        ) from exc
    return target


def read_manifest(model: Path) -> Manifest | None:
    """The manifest stored beside ``model``, or None when it is missing or unreadable."""
    try:
        data = json.loads(model.with_suffix(_MANIFEST_SUFFIX).read_text(encoding="utf-8"))
        return Manifest(**data)
    except (OSError, ValueError, TypeError):
        return None


def _current(target: Path, source_sha256: str, recipe: Recipe) -> bool:
    """Whether ``target`` exists and its manifest matches the recipe, source and bytes."""
    manifest = read_manifest(target)
    if manifest is None or (manifest.recipe, manifest.source_sha256) != (
        recipe.name,
        source_sha256,
    ):
        return False
    try:
        return _sha256(target) == manifest.sha256
    except OSError:
        return False


def _build(
    source: Path,
    source_sha256: str,
    target: Path,
    cosines: Callable[[Path, Sequence[str]], Sequence[float]],
    recipe: Recipe,
) -> None:
    """Build, check on the probes, then move model and manifest into place."""
    try:
        import onnx
    except ImportError as exc:
        raise MissingDependency(
            f"The {recipe.label} is built once with the onnx package:\n"
            "pip install 'kgsearch[fast]'",
            details={"extra": "fast"},
        ) from exc
    import onnxruntime

    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        built = Path(tmp) / "built.onnx"
        recipe.build(source, built)
        probe = list(cosines(built, PROBES))
        lowest, mean = min(probe), sum(probe) / len(probe)
        if lowest < recipe.min_cosine or mean < recipe.min_mean_cosine:
            raise ProviderError(
                f"The {recipe.label}'s vectors drifted from the bundled model's "
                f"(probe cosines: lowest {lowest:.4f}, mean {mean:.4f}; needed "
                f"{recipe.min_cosine} and {recipe.min_mean_cosine}) with onnxruntime "
                f"{onnxruntime.__version__} and onnx {onnx.__version__}. Use the bundled "
                "model, or onnxruntime 1.32.0 with onnx 1.23.2.",
                details={
                    "min_cosine": lowest,
                    "mean_cosine": mean,
                    "onnxruntime": onnxruntime.__version__,
                    "onnx": onnx.__version__,
                },
            )
        digest = _sha256(built)
        manifest = Manifest(
            recipe=recipe.name,
            source_sha256=source_sha256,
            sha256=digest,
            reproduced=digest == recipe.reference_sha256,
            onnxruntime=onnxruntime.__version__,
            onnx=onnx.__version__,
            min_cosine=round(lowest, 6),
            mean_cosine=round(mean, 6),
        )
        staged = Path(tmp) / "manifest.json"
        staged.write_text(json.dumps(manifest.__dict__, indent=2) + "\n", encoding="utf-8")
        os.replace(built, target)
        os.replace(staged, target.with_suffix(_MANIFEST_SUFFIX))
    if not manifest.reproduced:
        _log.info("built %s with sha256 %s (not the reference build)", target, digest)


def _per_channel(source: Path, built: Path) -> None:
    """Fold ``source`` into float32 weights, then quantise them per channel into ``built``."""
    folded = built.with_name("folded.onnx")
    _fold(source, folded)
    _quantize(folded, built)


PER_CHANNEL = Recipe(
    name=RECIPE,
    build=_per_channel,
    reference_sha256=REFERENCE_SHA256,
    min_cosine=MIN_COSINE,
    min_mean_cosine=MIN_MEAN_COSINE,
    label="fast bundled model",
)
"""The ``bundled:fast`` model: steps 1 and 2 of this module's docstring."""


def _fold(source: Path, folded: Path) -> None:
    """Let onnxruntime constant-fold ``source`` (int8 weights → float32) into ``folded``."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    onnxruntime.InferenceSession(
        str(source), sess_options=options, providers=["CPUExecutionProvider"]
    )


def _quantize(folded: Path, built: Path) -> None:
    """Quantise ``folded``'s MatMul weights to int8 per channel into ``built``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # The quantiser advises pre-processing through logging.warning (the root logger);
    # that step (shape inference and fusions for static quantisation) is not needed
    # for dynamic MatMuls.
    with _quiet_root_logger():
        quantize_dynamic(
            str(folded),
            str(built),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
        )


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """Drop root-logger warnings for a while, without ``logging.warning`` installing a
    stderr handler in the host program (it calls basicConfig when root has none)."""
    root = logging.getLogger()
    level, guard = root.level, logging.NullHandler()
    root.addHandler(guard)
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)
        root.removeHandler(guard)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (one build at a time per model)."""
    import fcntl  # POSIX only; imported here so that importing kgsearch never needs it

    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
