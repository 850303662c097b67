"""Embedding and extraction workers in separate processes against one PostgreSQL
(issue 33, item 5): the checks of tests/worker_processes.py on one server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from worker_processes import check_embedding_workers, check_extraction_workers


@pytest.mark.slow
def test_worker_processes_share_the_queue_and_a_killed_one_loses_nothing(
    pg_factory: Any, postgres_url: str, tmp_path: Path
) -> None:
    check_embedding_workers(pg_factory(), postgres_url, tmp_path)


@pytest.mark.slow
def test_extraction_processes_share_the_queue_and_a_killed_one_loses_nothing(
    pg_factory: Any, tmp_path: Path
) -> None:
    check_extraction_workers(pg_factory, tmp_path)
