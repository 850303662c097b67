"""The store conformance suite of :mod:`kgsearch.testing.conformance` on spread stores:
relationships and chunks distributed by row id over both workers (``distribute(…,
spread=True)``), everything else as on the unspread layout."""

from collections.abc import Iterator

import pytest
from citus_cluster import CitusStoreFactory
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from kgsearch.testing.conformance import *  # noqa: F403
from kgsearch.testing.conformance.state_machine import StoreMachine
from kgsearch.testing.stores import StoreFactory


@pytest.fixture
def store_factory(citus_url: str) -> Iterator[CitusStoreFactory]:
    """Opens fresh spread stores on the cluster; closes them after the test."""
    factory = CitusStoreFactory(citus_url, spread=True)
    yield factory
    factory.close_all()


def test_store_agrees_with_a_plain_dict_model(store_factory: StoreFactory) -> None:
    """The suite's state machine with fewer runs (two-phase commits across the nodes)."""
    machine = type("Machine", (StoreMachine,), {"factory": staticmethod(store_factory)})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=10,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
