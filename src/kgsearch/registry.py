"""One registry for every seam: embedders, LLM providers, rerankers, extractors, legs.

A part is a value registered under a name in its seam's :class:`Registry`, the same
way for every seam and for built-ins and plugins alike (llm's ``DEFAULT_PLUGINS``): a
built-in is declared in :data:`BUILTINS` (its name, the module that registers it and a
one-line summary), and that module calls ``REGISTRY.register(name, part)`` when it is
imported. The first lookup imports the seam's declared modules, so a seam's owner
never lists its parts.

The declared names are plain strings on the lowest floor (this module imports the
standard library and :mod:`kgsearch.errors` only), so the light CLI reads its choices
(:func:`names`: recipes, rerankers, providers) without pydantic, numpy or the engine,
and REST, MCP and the docs read the same table. ``tests/unit/test_registry.py`` keeps
every declared name registered by its module, and every registered built-in declared.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from kgsearch.errors import ConfigError, InvalidRequest

__all__ = ["BUILTINS", "Builtin", "Registry", "names"]

T = TypeVar("T")


@dataclass(frozen=True)
class Builtin:
    """A built-in part, declared where the light CLI can read it.

    Attributes:
        module: The module whose import registers the part.
        summary: One line for ``--help`` and the docs.
    """

    module: str
    summary: str


_SEARCH = "kgsearch.search"
_RERANKERS = f"{_SEARCH}.rerankers"

BUILTINS: dict[str, dict[str, Builtin]] = {
    "embedder": {
        "bundled": Builtin(
            "kgsearch.embed",
            "the offline default model (ONNX, in the wheel); `bundled:fast` is it re-quantised",
        ),
        "fake": Builtin("kgsearch.embed", "hashed bag of words, for tests"),
        "fastembed": Builtin("kgsearch.embed", "a fastembed model (extra `fastembed`)"),
        "openai": Builtin("kgsearch.embed", "an OpenAI-compatible /embeddings endpoint"),
        "sentence-transformers": Builtin(
            "kgsearch.embed", "a sentence-transformers model (extra `sentence-transformers`)"
        ),
    },
    "llm": {
        "fake": Builtin("kgsearch.llm", "scripted responses, for tests"),
        "ollama": Builtin("kgsearch.llm", "a local Ollama server, no key"),
        "openai": Builtin("kgsearch.llm", "OpenAI or any compatible chat server"),
    },
    "extractor": {
        "spacy": Builtin("kgsearch.engine.providers", "spaCy entities, offline"),
        "llm": Builtin("kgsearch.engine.providers", "the configured chat model"),
        "none": Builtin("kgsearch.engine.providers", "no extraction: chunks only"),
    },
    "reranker": {
        "none": Builtin(_RERANKERS, "the fused order"),
        "mmr": Builtin(_RERANKERS, "maximal marginal relevance (mmr_lambda)"),
        "node_distance": Builtin(_RERANKERS, "shortest-path hops from center_id"),
        "mentions": Builtin(_RERANKERS, "how many sources mention the hit"),
        "cross_encoder": Builtin(_RERANKERS, "the engine's cross-encoder"),
        "agreement": Builtin(
            f"{_SEARCH}.agreement", "how many legs found the hit, then the fused score"
        ),
    },
    "leg": {
        "scope": Builtin(f"{_SEARCH}.legs", "vector, BM25 and name legs of each scope"),
        "relationships:anchored": Builtin(
            f"{_SEARCH}.anchor", "facts about the objects the query names"
        ),
        "graph": Builtin(f"{_SEARCH}.legs", "BFS, personalised PageRank or relation paths"),
        "graph:modes": Builtin(f"{_SEARCH}.modes", "LightRAG's local/global expansions"),
        "graph:passages": Builtin(f"{_SEARCH}.passages", "multi-hop passages (HippoRAG 2)"),
        "graph:mentioned": Builtin(
            f"{_SEARCH}.mentioned", "objects the best chunks mention (when weighed)"
        ),
        "graph:evidence": Builtin(
            f"{_SEARCH}.evidence", "passages the entities and facts point to (documents)"
        ),
    },
    "recipe": {
        name: Builtin(f"{_SEARCH}.request", summary)
        for name, summary in (
            ("chunks", "chunks only"),
            ("communities", "community reports only"),
            ("expand", "BFS expansion of the first round"),
            ("global", "LightRAG global: relationships → objects and chunks"),
            ("hybrid", "LightRAG hybrid: local and global"),
            ("hybrid_mmr", "everything, reranked by MMR"),
            ("hybrid_rrf", "everything, fused by RRF (the default)"),
            ("local", "LightRAG local: objects → relationships and chunks"),
            ("mentions", "reranked by source mentions"),
            ("mix", "LightRAG mix: hybrid plus the chunks' own legs"),
            ("multi_hop", "relation paths and passages, depth 3"),
            ("naive", "LightRAG naive: chunks only"),
            ("node_distance", "reranked by hops from center_id"),
            ("objects_typed", "objects only (use with type_hint)"),
            ("relationships", "relationships only"),
        )
    },
}
"""Every built-in part, per seam, in the order the seam lists them."""


def names(seam: str) -> tuple[str, ...]:
    """The names a seam answers to: the declared built-ins, then any a plugin registered,
    without importing a part.

    Args:
        seam: ``embedder``, ``llm``, ``extractor``, ``reranker``, ``leg`` or ``recipe``.
    """
    registry = _REGISTRIES.get(seam)
    extra = [n for n in registry._parts if n not in BUILTINS[seam]] if registry else []
    return (*BUILTINS[seam], *extra)


_REGISTRIES: dict[str, Registry[object]] = {}


class Registry(Generic[T]):
    """Name → part for one seam. Parts register themselves; lookups load the seam's
    declared built-ins first (once, on first use).

    Args:
        seam: The seam's key in :data:`BUILTINS`.
        error: What an unknown name raises (:class:`~kgsearch.errors.ConfigError` for
            settings, :class:`~kgsearch.errors.InvalidRequest` for a request's name).
        label: What a part is called in messages (default: the seam).
        specs: Whether names are the provider part of ``provider:model`` specs (then
            they hold no colon).
    """

    def __init__(
        self,
        seam: str,
        *,
        error: type[ConfigError] | type[InvalidRequest] = InvalidRequest,
        label: str | None = None,
        specs: bool = False,
    ) -> None:
        if seam not in BUILTINS:
            raise ValueError(f"undeclared seam {seam!r}")
        self.seam = seam
        self.label = label or seam
        self._specs = specs
        self._error = error
        self._parts: dict[str, T] = {}
        self._loaded = self._loading = False
        self._lock = threading.RLock()
        _REGISTRIES[seam] = self  # type: ignore[assignment]

    def register(self, name: str, part: T) -> None:
        """Make ``name`` answer with ``part`` (a name registered again is replaced).

        Raises:
            ValueError: The name is empty, or has a colon in a seam of
                ``provider:model`` specs (they split at the first one).
        """
        if not name or (self._specs and ":" in name):
            raise ValueError(f"invalid {self.label} name {name!r}")
        self._parts[name] = part

    def get(self, name: str) -> T:
        """The part registered as ``name``.

        Raises:
            ConfigError: Unknown name (settings seams: embedders, LLMs, extractors).
            InvalidRequest: Unknown name (request seams: rerankers, legs, recipes).
        """
        self.load()
        part = self._parts.get(name)
        if part is None:
            known = self.names()
            raise self._error(
                f"unknown {self.label} {name!r}; known: {', '.join(known)}",
                details={"name": name, "known": list(known)},
            )
        return part

    def names(self) -> tuple[str, ...]:
        """The registered names: built-ins in declared order, then plugins."""
        self.load()
        declared = [n for n in BUILTINS[self.seam] if n in self._parts]
        return (*declared, *(n for n in self._parts if n not in BUILTINS[self.seam]))

    def items(self) -> Iterator[tuple[str, T]]:
        """``(name, part)`` pairs in :meth:`names` order."""
        for name in self.names():
            yield name, self._parts[name]

    def load(self) -> None:
        """Import the modules that register the seam's built-ins (once)."""
        if self._loaded:
            return
        with self._lock:  # another thread waits; a module being imported looks up as is
            if self._loaded or self._loading:
                return
            self._loading = True
            try:
                for module in dict.fromkeys(b.module for b in BUILTINS[self.seam].values()):
                    importlib.import_module(module)
                self._loaded = True
            finally:
                self._loading = False

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._parts

    def declared(self) -> Mapping[str, Builtin]:
        """The seam's declared built-ins."""
        return BUILTINS[self.seam]
