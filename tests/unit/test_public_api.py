"""The public surface: ``kgsearch.__all__`` is exactly the expected list, sorted the way
ruff's RUF022 sorts it, every name resolves, and ``import kgsearch`` works with no
optional extras installed (httpx ``test_exported_members.py``)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import kgsearch

EXPECTED = [
    "LLM",
    "BudgetExceeded",
    "Chunk",
    "ChunkIn",
    "ConfigError",
    "Conflict",
    "DeleteReport",
    "DimensionMismatch",
    "EmbedReport",
    "Embedder",
    "EmbeddingState",
    "EmbeddingStatus",
    "EmbeddingStatusReport",
    "EmbeddingStatusRow",
    "EmbeddingTodo",
    "Engine",
    "EnrichmentConfig",
    "Explain",
    "ExtractionFailed",
    "ExtractionRecord",
    "ExtractionReport",
    "ExtractionResult",
    "ExtractionStatus",
    "Filters",
    "FusedHit",
    "GraphObject",
    "GraphResult",
    "ImportFailed",
    "IngestProblem",
    "IngestReport",
    "InvalidRequest",
    "KgsearchError",
    "Kind",
    "LegRank",
    "MentionIn",
    "Mentioned",
    "MergeReport",
    "MigrationError",
    "MissingCredentials",
    "MissingDependency",
    "NeighborObject",
    "Neighborhood",
    "NotFound",
    "ObjectIn",
    "ObjectRef",
    "Page",
    "Preview",
    "ProviderError",
    "RagContext",
    "Relationship",
    "RelationshipIn",
    "RelationshipResult",
    "RetryPolicy",
    "SearchRequest",
    "SearchResponse",
    "Settings",
    "Source",
    "SourceIn",
    "SourceMentions",
    "Statement",
    "Stats",
    "Store",
    "StoreError",
    "SummaryReport",
    "TextAdded",
    "TextResult",
    "__version__",
    "connect",
    "create_embedder",
]


def isort_style(name: str) -> tuple[int, str]:
    """RUF022's isort-style order: SCREAMING_CASE, then CamelCase, then the rest."""
    if name.isupper() and len(name) > 1:
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def test_all_is_exactly_the_expected_public_names() -> None:
    assert kgsearch.__all__ == EXPECTED


def test_all_is_sorted_isort_style() -> None:
    assert kgsearch.__all__ == sorted(kgsearch.__all__, key=isort_style)


def test_all_has_no_duplicates() -> None:
    assert len(set(kgsearch.__all__)) == len(kgsearch.__all__)


def test_every_name_in_all_resolves() -> None:
    missing = [name for name in kgsearch.__all__ if not hasattr(kgsearch, name)]
    assert missing == []


def test_every_public_class_is_defined_in_a_kgsearch_module() -> None:
    foreign = [
        name
        for name in kgsearch.__all__
        if isinstance(getattr(kgsearch, name), type)
        and not getattr(kgsearch, name).__module__.startswith("kgsearch.")
    ]
    assert foreign == []


def test_version_is_a_string() -> None:
    assert isinstance(kgsearch.__version__, str)


def test_import_works_without_the_optional_embedding_extras() -> None:
    script = textwrap.dedent(
        """
        import sys
        blocked = ("sentence_transformers", "fastembed", "torch", "openai")
        for name in blocked:
            sys.modules[name] = None  # makes `import name` raise ImportError
        import kgsearch
        engine = kgsearch.Engine(kgsearch.connect(":memory:"))
        engine.close()
        loaded = sorted(n for n in blocked if sys.modules.get(n) is not None)
        print("ok", kgsearch.__version__, loaded)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == f"ok {kgsearch.__version__} []\n"


def test_kgsearch_testing_imports_without_pytest_or_hypothesis() -> None:
    script = textwrap.dedent(
        """
        import sys
        for name in ("pytest", "_pytest", "hypothesis"):
            sys.modules[name] = None  # makes `import name` raise ImportError
        from kgsearch.testing import FakeEmbedder, URLStoreFactory, assert_topk, bfs
        factory = URLStoreFactory(lambda: ":memory:", persistent=False)
        factory().close()
        suite = sorted(n for n in sys.modules if n.startswith("kgsearch.testing.conformance"))
        print("ok", suite)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert (result.returncode, result.stderr, result.stdout) == (0, "", "ok []\n")
