"""Embedding and extraction worker processes against the Citus coordinator (issue 33,
item 5): three processes share a queue, one is killed with SIGKILL holding a claimed
batch, nothing is lost and nothing done twice (the checks of tests/worker_processes.py,
as on one PostgreSQL server). Workers started without ``--project`` claim project by
project there; on a spread store a chunk claim runs shard by shard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from citus_cluster import CitusStoreFactory
from worker_processes import check_embedding_workers, check_extraction_workers


@pytest.mark.slow
def test_embedding_processes_on_citus_lose_nothing_when_one_is_killed(
    store_factory: Any, citus_url: str, tmp_path: Path
) -> None:
    check_embedding_workers(store_factory(), citus_url, tmp_path)


@pytest.mark.slow
def test_embedding_processes_on_a_spread_store_lose_nothing_when_one_is_killed(
    citus_url: str, tmp_path: Path
) -> None:
    factory = CitusStoreFactory(citus_url, spread=True)
    try:
        check_embedding_workers(factory(), citus_url, tmp_path, kind="chunks")
    finally:
        factory.close_all()


@pytest.mark.slow
def test_extraction_processes_on_citus_lose_nothing_when_one_is_killed(
    store_factory: Any, tmp_path: Path
) -> None:
    check_extraction_workers(store_factory, tmp_path)
