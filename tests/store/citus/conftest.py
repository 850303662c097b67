"""Fixtures of the Citus tests: one real cluster for the session, and stores on it.

The cluster (coordinator + 2 workers, :mod:`citus_cluster`) is built and started once
per session; every store is a fresh schema on the coordinator, migrated by kgsearch
and laid out by :func:`kgsearch.store.postgres.citus.distribute`, dropped after the
test. Without the Citus source (``../shared/vendor/citus-*.tar.gz``) or a compiler
the tests skip, saying which; ``KGSEARCH_TEST_CITUS_URL`` points them at a running
cluster's coordinator instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from citus_cluster import CannotBuild, CitusCluster, CitusStoreFactory, build_citus


@pytest.fixture(scope="session")
def citus_url() -> Iterator[str]:
    """The coordinator URL of a Citus cluster with pgvector, for the whole session."""
    url = os.environ.get("KGSEARCH_TEST_CITUS_URL")
    if url:
        yield url
        return
    try:
        pginstall = build_citus()
    except CannotBuild as exc:
        pytest.skip(f"Citus tests: {exc}")
    cluster = CitusCluster(pginstall)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture
def store_factory(citus_url: str) -> Iterator[CitusStoreFactory]:
    """Opens fresh distributed stores on the cluster; closes them after the test."""
    factory = CitusStoreFactory(citus_url)
    yield factory
    factory.close_all()
