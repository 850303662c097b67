"""Engine-level suites re-run on spread stores (relationships and chunks distributed by
row id over both workers, issue 33 item 3), as test_citus_engine.py runs them on
unspread ones: communities (builds, reports, their recipe), ingest and extraction, the
embedding lifecycle and its workers, and the task runner. The ``store``, ``engine`` and
``pg_factory`` the modules take are overridden below (after the imports, which bring
the modules' own SQLite fixtures)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from citus_cluster import CitusStoreFactory
from unit.communities.test_build import *  # noqa: F403
from unit.ingest.test_ingest import *  # noqa: F403
from unit.test_lifecycle import *  # noqa: F403
from unit.test_task_runner import *  # noqa: F403
from unit.test_workers import *  # noqa: F403

from kgsearch.engine import Engine
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder, FakeExtractor

# these open SQLite files of their own: nothing of them would run on the cluster
for _name in (
    "test_an_unparseable_reply_fails_the_chunk_with_the_raw_reply_then_dead",
    "test_a_provider_outage_never_fails_the_write_and_the_chunks_wait",
    "test_imported_chunks_left_queued_say_how_to_build_them",
    "test_a_run_killed_with_sigkill_resumes_to_completion",
):
    del globals()[_name]


@pytest.fixture
def store_factory(citus_url: str) -> Iterator[CitusStoreFactory]:
    """Opens fresh spread stores on the cluster; closes them after the test."""
    factory = CitusStoreFactory(citus_url, spread=True)
    yield factory
    factory.close_all()


@pytest.fixture  # type: ignore[no-redef]
def store(store_factory: Any) -> Store:
    """A fresh spread store."""
    return store_factory()  # type: ignore[no-any-return]


@pytest.fixture
def pg_factory(store_factory: Any) -> Any:
    """The PostgreSQL stores of the communities' whole-cycle test: spread ones."""
    return store_factory


@pytest.fixture  # type: ignore[no-redef]
def engine(store_factory: Any, fake: FakeExtractor) -> Engine:
    """The ingest tests' engine (its scripted extractor) over a spread store."""
    return Engine(store_factory(), embedder=FakeEmbedder(16), extractors=lambda n, d: fake)
