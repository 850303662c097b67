"""The one job runner over the store's task queue, on every backend.

The same runner embeds rows; here it runs a job of the generic task queue (the way
extraction and community reports will), with real stores, to check that the rules
carry over: work outside any transaction, results kept, failures backed off and then
dead with the whole error kept, unchanged input never re-run, a dead runner's lease
taken over.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest

from kgsearch.http import ProviderSkipped
from kgsearch.lifecycle.extraction import EXTRACT_JOB, retry
from kgsearch.lifecycle.runner import Outcome, RetryPolicy
from kgsearch.lifecycle.tasks import TaskDone, run_tasks
from kgsearch.store.base import Store, Task, TaskIn

JOB = "shout"
# A failed task is due again after a short backoff; a run never waits for it. The
# backoff outlasts a run on a loaded machine: at 0.05 s a Citus run under load took
# its own failed task back before it ended (failed twice, dead, in one run).
NO_WAIT = RetryPolicy(max_attempts=2, backoff_seconds=1.0, max_wait_seconds=0.0)


def past_backoff() -> None:
    time.sleep(1.3)


def enqueue(store: Store, *words: str, digest: str = "v1") -> int:
    return store.enqueue_tasks(
        "p", JOB, [TaskIn(row_id=w, input_hash=digest, payload={"word": w}) for w in words]
    )


def shout(tasks: Sequence[Task]) -> Outcome[Task, TaskDone]:
    """Upper-cases each task's word; a word with a digit fails on its own."""
    done = [TaskDone(t, {"loud": t.payload["word"].upper()}) for t in tasks if t.row_id.isalpha()]
    bad = [t for t in tasks if not t.row_id.isalpha()]
    return Outcome(done, {"digits are not words": bad} if bad else {})


def results(store: Store) -> dict[str, tuple[str, dict[str, Any] | None, str | None]]:
    return {
        s.row_id: (s.status, s.result, s.last_error)
        for s in store.list_tasks(JOB, project="p", limit=1000)
    }


def test_the_runner_completes_every_task_and_keeps_each_result(store: Store) -> None:
    enqueue(store, "ada", "bob", "cy")
    report = run_tasks(store, JOB, shout, project="p", policy=NO_WAIT, batch_size=2)
    assert (report.processed, report.done, report.failed, report.batches) == (3, 3, 0, 2)
    assert results(store) == {
        "ada": ("done", {"loud": "ADA"}, None),
        "bob": ("done", {"loud": "BOB"}, None),
        "cy": ("done", {"loud": "CY"}, None),
    }


def test_work_runs_outside_any_transaction(store: Store) -> None:
    enqueue(store, "ada")
    seen: list[bool] = []

    def work(tasks: Sequence[Task]) -> Outcome[Task, TaskDone]:
        seen.append(store.in_transaction)
        return Outcome([TaskDone(t) for t in tasks])

    run_tasks(store, JOB, work, project="p", policy=NO_WAIT)
    assert seen == [False]
    assert store.task_counts(JOB, project="p")["done"] == 1


def test_a_failing_task_backs_off_then_dies_with_its_error_kept(store: Store) -> None:
    enqueue(store, "ada", "r2d2")
    first = run_tasks(store, JOB, shout, project="p", policy=NO_WAIT)
    assert (first.done, first.failed, first.dead) == (1, 1, 0)
    assert results(store)["r2d2"] == ("failed", None, "digits are not words")
    past_backoff()
    second = run_tasks(store, JOB, shout, project="p", policy=NO_WAIT)
    assert (second.processed, second.failed, second.dead) == (1, 1, 1)
    assert results(store)["r2d2"] == ("dead", None, "digits are not words")
    past_backoff()
    assert run_tasks(store, JOB, shout, project="p", policy=NO_WAIT).processed == 0


def test_an_exception_fails_the_whole_batch_and_is_recorded(store: Store) -> None:
    enqueue(store, "ada", "bob")

    def broken(tasks: Sequence[Task]) -> Outcome[Task, TaskDone]:
        raise TimeoutError("the model did not answer in 30 s")

    report = run_tasks(store, JOB, broken, project="p", policy=NO_WAIT)
    assert (report.processed, report.failed, report.errors) == (
        2,
        2,
        ["TimeoutError: the model did not answer in 30 s"],
    )
    assert {s[0] for s in results(store).values()} == {"failed"}


def test_unchanged_input_is_never_run_again_and_changed_input_is(store: Store) -> None:
    enqueue(store, "ada", "bob")
    run_tasks(store, JOB, shout, project="p", policy=NO_WAIT)
    assert enqueue(store, "ada", "bob") == 0
    assert run_tasks(store, JOB, shout, project="p", policy=NO_WAIT).processed == 0
    assert enqueue(store, "bob", digest="v2") == 1
    again = run_tasks(store, JOB, shout, project="p", policy=NO_WAIT)
    assert (again.processed, again.done) == (1, 1)


def test_a_task_left_by_a_dead_runner_is_taken_over_when_its_lease_ends(store: Store) -> None:
    enqueue(store, "ada")
    # a runner claimed it with a one-second lease long ago and never came back
    assert len(store.claim_tasks(JOB, project="p", limit=1, now=time.time() - 60, lease_seconds=1))
    report = run_tasks(store, JOB, shout, project="p", policy=NO_WAIT)
    assert (report.processed, report.done) == (1, 1)
    assert results(store) == {"ada": ("done", {"loud": "ADA"}, None)}


def test_the_runner_takes_only_its_own_job_and_project(store: Store) -> None:
    enqueue(store, "ada")
    store.enqueue_tasks("q", JOB, [TaskIn(row_id="bob", input_hash="v1")])
    store.enqueue_tasks("p", "other", [TaskIn(row_id="cy", input_hash="v1")])
    assert run_tasks(store, JOB, shout, project="p", policy=NO_WAIT).processed == 1
    assert store.task_counts(JOB, project="q")["pending"] == 1
    assert store.task_counts("other", project="p")["pending"] == 1


def states(store: Store) -> dict[str, tuple[str, int]]:
    return {
        s.row_id: (s.status, s.attempts) for s in store.list_tasks(JOB, project="p", limit=1000)
    }


def test_an_interrupted_batch_gives_its_claims_back(store: Store) -> None:
    enqueue(store, "ada", "bob", "cy")

    def interrupted(tasks: Sequence[Task]) -> Outcome[Task, TaskDone]:
        if len(tasks) == 1:
            raise KeyboardInterrupt
        return shout(tasks)

    with pytest.raises(KeyboardInterrupt):
        run_tasks(store, JOB, interrupted, project="p", policy=NO_WAIT, batch_size=2)
    assert states(store) == {"ada": ("done", 0), "bob": ("done", 0), "cy": ("pending", 0)}
    assert run_tasks(store, JOB, shout, project="p", policy=NO_WAIT).done == 1


def test_an_open_breaker_gives_the_claims_back_without_an_attempt(store: Store) -> None:
    enqueue(store, "ada", "r2d2")
    run_tasks(store, JOB, shout, project="p", policy=NO_WAIT)
    past_backoff()

    def skipped(tasks: Sequence[Task]) -> Outcome[Task, TaskDone]:
        raise ProviderSkipped("breaker open")

    report = run_tasks(store, JOB, skipped, project="p", policy=NO_WAIT)
    assert report.failed == 0 and "breaker open" in report.errors[0]
    assert states(store) == {"ada": ("done", 0), "r2d2": ("failed", 1)}


def test_release_takes_only_claims_still_held(store: Store) -> None:
    enqueue(store, "ada", "bob")
    claimed = store.claim_tasks(JOB, project="p", limit=2, now=time.time(), lease_seconds=600)
    store.complete_tasks(JOB, claimed[:1])
    assert store.release_tasks(JOB, claimed) == 1
    assert states(store) == {"ada": ("done", 0), "bob": ("pending", 0)}


def test_an_error_no_store_could_keep_is_recorded_escaped(store: Store) -> None:
    enqueue(store, "ada")

    def broken(tasks: Sequence[Task]) -> Outcome[Task, TaskDone]:
        return Outcome((), {"reply \ud83d with \x00 in it": list(tasks)})

    run_tasks(store, JOB, broken, project="p", policy=NO_WAIT)
    (state,) = store.list_tasks(JOB, project="p")
    assert (state.status, state.attempts) == ("failed", 1)
    assert state.last_error == "reply \\ud83d with \\x00 in it"


def test_retry_takes_back_expired_claims_and_with_claimed_every_claim(store: Store) -> None:
    store.enqueue_tasks("p", EXTRACT_JOB, [TaskIn(row_id=w, input_hash="v1") for w in "abc"])
    now = time.time()
    store.claim_tasks(EXTRACT_JOB, project="p", limit=1, now=now, lease_seconds=600)
    store.claim_tasks(EXTRACT_JOB, project="p", limit=1, now=now - 700, lease_seconds=600)
    assert retry(store, "p") == 1  # the expired claim only: the other may be a live run's
    assert store.task_counts(EXTRACT_JOB, project="p")["running"] == 1
    assert retry(store, "p", claimed=True) == 1
    assert store.task_counts(EXTRACT_JOB, project="p")["pending"] == 3
