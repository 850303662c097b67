"""Every search recipe runs on a distributed store through the coordinator and ranks as
the same graph does on one PostgreSQL server (BM25 statistics included: Citus refuses
the single-node statement that reads them, issue 33)."""

from __future__ import annotations

from typing import Any

import pytest
from citus_cluster import CitusStoreFactory
from citus_films import QUESTIONS, ranked, seed

from kgsearch.model import Kind
from kgsearch.search.request import RECIPES
from kgsearch.store.postgres import PostgresStore
from kgsearch.store.postgres.lexical import LexicalStats


@pytest.fixture(scope="module")
def both(citus_url: str, postgres_url: str) -> Any:
    """The same graph on the cluster (distributed) and on one server."""
    citus = CitusStoreFactory(citus_url)
    single = CitusStoreFactory(postgres_url, PostgresStore)
    try:
        yield seed(citus(), "films"), seed(single(), "films")
    finally:
        citus.close_all()
        single.close_all()


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_every_recipe_ranks_as_on_one_server(both: Any, recipe: str) -> None:
    on_citus, on_one = both
    for query in QUESTIONS:
        assert ranked(on_citus, query, recipe) == ranked(on_one, query, recipe), query


def test_bm25_reads_no_column_statistics_on_citus(both: Any) -> None:
    on_citus, on_one = both
    assert (on_citus.store.lexical.column_stats, on_one.store.lexical.column_stats) == (
        False,
        True,
    )
    found = on_citus.search("Grapes", recipe="objects_typed", limit=1)
    assert [getattr(h, "key", None) for h in found.results] == ["The Grapes of Wrath"]


def test_the_single_server_stemming_statement_runs_on_citus_too(both: Any) -> None:
    # it once joined the pg_stats view, which Citus refuses beside a distributed table;
    # the common lexemes' shares are now read apart (none on Citus: column_stats off)
    on_citus, _ = both
    for form in (LexicalStats(), LexicalStats(column_stats=False)):
        words = form.words(on_citus.store.db, "films", Kind.OBJECT, ["wrath"], False)
        assert words == (["wrath"], set(), {"wrath": 1})


def test_the_hnsw_settings_reach_the_worker_holding_the_project(both: Any) -> None:
    on_citus, _ = both
    # what a vector leg sends on Citus: its beam always (the workers never see the
    # coordinator's session settings), and the iterative scan when conditions drop rows
    assert on_citus.store.db.workers_follow_settings
    rows = on_citus.store.db.all_with(
        {"hnsw.ef_search": "200", "hnsw.iterative_scan": "relaxed_order"},
        "SELECT current_setting('hnsw.ef_search', true) AS ef, "
        "current_setting('hnsw.iterative_scan', true) AS it FROM objects "
        "WHERE project = 'films' LIMIT 1",
    )
    assert rows == [{"ef": "200", "it": "relaxed_order"}]
