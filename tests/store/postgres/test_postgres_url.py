"""The PostgreSQL store URL: kgsearch's own parameters are parsed and removed."""

from __future__ import annotations

import pytest

from kgsearch.errors import ConfigError
from kgsearch.model import Kind
from kgsearch.store.postgres.connection import BUILD_MEMORY, EF_SEARCH, parse_url


def test_own_parameters_are_removed_and_libpq_ones_kept() -> None:
    libpq, options = parse_url(
        "postgresql://kg:pw@db:5432/kg?schema=team_a&sslmode=require&vector_index=ivfflat"
        "&pool_size=3&ef_search=64"
    )
    assert libpq == "postgresql://kg:pw@db:5432/kg?sslmode=require"
    assert (options.schema, options.vector_index, options.pool_size, options.ef_search) == (
        "team_a",
        "ivfflat",
        3,
        64,
    )


def test_defaults() -> None:
    libpq, options = parse_url("postgres://localhost/kg")
    assert libpq == "postgresql://localhost/kg"
    assert (options.schema, options.vector_index, options.pool_size, options.ef_search) == (
        "public",
        "hnsw",
        4,
        None,
    )
    # without ef_search each kind walks its own beam; with it, every kind walks that one
    assert [options.beam(k) for k in Kind] == [EF_SEARCH[k] for k in Kind]
    assert options.beam(Kind.RELATIONSHIP) < options.beam(Kind.OBJECT)
    _, explicit = parse_url("postgres://localhost/kg?ef_search=64")
    assert {explicit.beam(k) for k in Kind} == {64}


def test_build_memory() -> None:
    libpq, options = parse_url("postgresql://localhost/kg?build_memory=4GB&sslmode=require")
    assert (libpq, options.build_memory) == ("postgresql://localhost/kg?sslmode=require", "4GB")
    assert parse_url("postgresql://localhost/kg")[1].build_memory == BUILD_MEMORY == "512MB"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("schema=Bad-Name", "invalid schema"),
        ("schema=1abc", "invalid schema"),
        ('schema=x";drop', "invalid schema"),
        ("vector_index=annoy", "vector_index must be"),
        ("pool_size=0", "pool_size must be"),
        ("pool_size=lots", "pool_size must be"),
        ("ef_search=5", "ef_search must be"),
        ("build_memory=lots", "build_memory must be"),
        ("build_memory=512", "build_memory must be"),
        ("build_memory=64kB", "build_memory must be"),
        ("build_memory=1GB;reset all", "build_memory must be"),
    ],
)
def test_bad_parameters_raise_config_error(query: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_url(f"postgresql://localhost/kg?{query}")
