"""The store conformance suite of :mod:`kgsearch.testing.conformance` on a Citus cluster:
every store a distributed one on the coordinator (the ``store_factory`` of this folder's
conftest), as tests/conformance runs it on SQLite and one PostgreSQL server."""

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from kgsearch.testing.conformance import *  # noqa: F403
from kgsearch.testing.conformance.state_machine import StoreMachine
from kgsearch.testing.stores import StoreFactory


def test_store_agrees_with_a_plain_dict_model(store_factory: StoreFactory) -> None:
    """The suite's state machine with fewer runs: each writes through two-phase
    commits across the nodes, about ten times slower than on one server."""
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
