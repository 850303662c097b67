"""The generic task queue: claim, complete, fail, backoff, dead, requeue."""

from __future__ import annotations

import threading

from kgsearch.store.base import Store, Task, TaskIn, TaskState
from kgsearch.testing.conformance.builders import reopen
from kgsearch.testing.stores import StoreFactory

JOB = "extract"


def queue(store: Store, *row_ids: str, project: str = "p", digest: str = "h1") -> int:
    return store.enqueue_tasks(
        project, JOB, [TaskIn(row_id=r, input_hash=digest, payload={"chunk": r}) for r in row_ids]
    )


def task(row_id: str, *, project: str = "p", digest: str = "h1", attempts: int = 0) -> Task:
    return Task(project, row_id, digest, attempts, {"chunk": row_id})


def counts(**given: int) -> dict[str, int]:
    return {"pending": 0, "running": 0, "done": 0, "failed": 0, "dead": 0, **given}


def claim(
    store: Store, now: float = 0.0, *, limit: int = 10, project: str | None = "p"
) -> list[Task]:
    return store.claim_tasks(JOB, project=project, limit=limit, now=now, lease_seconds=30.0)


def fail(store: Store, tasks: list[Task], error: str = "boom", *, now: float = 0.0) -> None:
    store.fail_tasks(JOB, tasks, error, now=now, max_attempts=3, backoff_seconds=10.0)


# enqueue and claim ---------------------------------------------------------------


def test_queued_tasks_are_pending_and_counted(store: Store) -> None:
    assert queue(store, "a", "b") == 2
    assert store.task_counts(JOB, project="p") == counts(pending=2)
    assert store.task_counts("summarize", project="p") == counts()


def test_tasks_are_claimed_in_queueing_order_with_their_payload(store: Store) -> None:
    queue(store, "c", "a", "b")
    assert claim(store, limit=2) == [task("c"), task("a")]
    assert store.task_counts(JOB, project="p") == counts(pending=1, running=2)
    assert claim(store) == [task("b")]


def test_a_claimed_task_is_not_claimed_again_while_its_lease_holds(store: Store) -> None:
    queue(store, "a")
    assert claim(store, now=100.0) == [task("a")]
    assert claim(store, now=129.0) == []
    assert store.next_task_retry_at(JOB, project="p") == 130.0


def test_an_expired_lease_makes_a_running_task_claimable_again(store: Store) -> None:
    queue(store, "a")
    claim(store, now=100.0)
    assert claim(store, now=130.0) == [task("a")]


def test_a_completed_task_is_done_and_keeps_its_result(store: Store) -> None:
    queue(store, "a", "b")
    claimed = claim(store)
    assert store.complete_tasks(JOB, claimed[:1], results=[{"objects": 3}]) == 1
    assert store.task_counts(JOB, project="p") == counts(running=1, done=1)
    assert store.list_tasks(JOB, project="p", statuses=["done"]) == [
        TaskState(
            project="p",
            row_id="a",
            input_hash="h1",
            status="done",
            attempts=0,
            last_error=None,
            next_attempt_at=0.0,
            claimed_until=0.0,
            payload={"chunk": "a"},
            result={"objects": 3},
        )
    ]
    assert claim(store, now=1000.0) == [task("b")]


def test_completing_an_unclaimed_task_does_nothing(store: Store) -> None:
    queue(store, "a")
    assert store.complete_tasks(JOB, [task("a")]) == 0
    assert store.task_counts(JOB, project="p") == counts(pending=1)


# failures, backoff and dead ------------------------------------------------------


def test_a_failed_task_waits_for_its_backoff(store: Store) -> None:
    queue(store, "a")
    fail(store, claim(store, now=100.0), now=100.0)
    assert store.task_counts(JOB, project="p") == counts(failed=1)
    assert store.next_task_retry_at(JOB, project="p") == 110.0
    assert claim(store, now=109.0) == []
    assert claim(store, now=110.0) == [task("a", attempts=1)]


def test_the_backoff_doubles_with_each_attempt(store: Store) -> None:
    queue(store, "a")
    fail(store, claim(store, now=0.0), now=0.0)
    fail(store, claim(store, now=10.0), now=10.0)
    assert store.next_task_retry_at(JOB, project="p") == 30.0


def test_a_task_failing_max_attempts_times_is_dead_with_its_whole_error(store: Store) -> None:
    error = "reply was not JSON: " + "x" * 5000
    queue(store, "a")
    for now in (0.0, 10.0, 30.0):
        fail(store, claim(store, now=now), error, now=now)
    assert store.task_counts(JOB, project="p") == counts(dead=1)
    assert store.list_tasks(JOB, project="p") == [
        TaskState(
            project="p",
            row_id="a",
            input_hash="h1",
            status="dead",
            attempts=3,
            last_error=error,
            next_attempt_at=70.0,
            claimed_until=0.0,
            payload={"chunk": "a"},
            result=None,
        )
    ]
    assert claim(store, now=1e9) == []
    assert store.next_task_retry_at(JOB, project="p") is None


def test_requeue_makes_dead_tasks_pending_with_attempts_reset(store: Store) -> None:
    queue(store, "a", "b")
    first, second = claim(store)
    store.complete_tasks(JOB, [second])
    store.fail_tasks(JOB, [first], "boom", now=0.0, max_attempts=1, backoff_seconds=10.0)
    assert store.requeue_tasks(JOB, project="p", statuses=[]) == 0
    assert store.requeue_tasks(JOB, project="p", statuses=["dead"]) == 1
    assert store.task_counts(JOB, project="p") == counts(pending=1, done=1)
    assert claim(store) == [task("a")]


# input hashes ----------------------------------------------------------------------


def test_a_task_queued_again_with_the_same_input_is_not_run_again(store: Store) -> None:
    queue(store, "a")
    store.complete_tasks(JOB, claim(store))
    assert queue(store, "a") == 0
    assert store.task_counts(JOB, project="p") == counts(done=1)
    assert claim(store, now=1e9) == []


def test_a_failed_task_queued_again_with_the_same_input_keeps_its_attempts(store: Store) -> None:
    queue(store, "a")
    fail(store, claim(store, now=0.0), now=0.0)
    assert queue(store, "a") == 0
    assert claim(store, now=10.0) == [task("a", attempts=1)]


def test_a_task_queued_again_with_new_input_runs_again_from_scratch(store: Store) -> None:
    queue(store, "a")
    fail(store, claim(store, now=0.0), now=0.0)
    assert queue(store, "a", digest="h2") == 1
    assert store.task_counts(JOB, project="p") == counts(pending=1)
    assert claim(store, now=0.0) == [task("a", digest="h2")]


def test_tasks_completed_together_each_keep_their_own_result(store: Store) -> None:
    queue(store, "a", "b", "c")
    claimed = claim(store)
    done = store.complete_tasks(JOB, claimed, results=[{"n": 1}, None, {"n": 3}])
    assert done == 3
    assert [(s.row_id, s.result) for s in store.list_tasks(JOB, project="p")] == [
        ("a", {"n": 1}),
        ("b", None),
        ("c", {"n": 3}),
    ]


def test_a_done_task_queued_again_with_new_input_forgets_its_result(store: Store) -> None:
    queue(store, "a")
    store.complete_tasks(JOB, claim(store), results=[{"objects": 3}])
    queue(store, "a", digest="h2")
    (state,) = store.list_tasks(JOB, project="p")
    assert (state.status, state.input_hash, state.result) == ("pending", "h2", None)


def test_a_task_queued_again_with_new_input_while_running_stays_pending(store: Store) -> None:
    queue(store, "a")
    old = claim(store, now=0.0)
    queue(store, "a", digest="h2")
    assert claim(store, now=1.0) == []  # the old runner's lease still holds
    assert store.complete_tasks(JOB, old) == 0
    assert store.task_counts(JOB, project="p") == counts(pending=1)
    assert claim(store, now=1.0) == [task("a", digest="h2")]  # lease released


def test_a_failure_on_old_input_leaves_the_new_input_pending(store: Store) -> None:
    queue(store, "a")
    old = claim(store, now=0.0)
    queue(store, "a", digest="h2")
    fail(store, old, now=1.0)
    assert store.task_counts(JOB, project="p") == counts(pending=1)
    assert claim(store, now=1.0) == [task("a", digest="h2")]


# projects, jobs, deletion ---------------------------------------------------------


def test_projects_are_isolated(store: Store) -> None:
    queue(store, "a", project="p")
    queue(store, "a", "b", project="q")
    assert claim(store, project="p") == [task("a", project="p")]
    assert store.task_counts(JOB, project="q") == counts(pending=2)
    assert store.requeue_tasks(JOB, project="q", statuses=["running"]) == 0
    assert store.delete_tasks("q", JOB, ["a"]) == 1
    assert store.task_counts(JOB, project="p") == counts(running=1)
    assert store.list_tasks(JOB, project="q") == [
        TaskState("q", "b", "h1", "pending", 0, None, 0.0, 0.0, {"chunk": "b"}, None)
    ]


def test_claiming_without_a_project_takes_every_projects_tasks(store: Store) -> None:
    queue(store, "a", project="p")
    queue(store, "b", project="q")
    assert claim(store, project=None) == [task("a", project="p"), task("b", project="q")]
    assert store.task_counts(JOB, project=None) == counts(running=2)


def test_jobs_are_isolated(store: Store) -> None:
    queue(store, "a")
    store.enqueue_tasks("p", "summarize", [TaskIn("a", "h9")])
    assert store.claim_tasks("summarize", project="p", limit=5, now=0.0) == [
        Task("p", "a", "h9", 0, {})
    ]
    assert store.task_counts(JOB, project="p") == counts(pending=1)


def test_deleted_tasks_are_forgotten(store: Store) -> None:
    queue(store, "a", "b")
    assert store.delete_tasks("p", JOB, ["a", "missing"]) == 1
    assert store.list_tasks(JOB, project="p") == [
        TaskState("p", "b", "h1", "pending", 0, None, 0.0, 0.0, {"chunk": "b"}, None)
    ]


def test_get_tasks_returns_the_rows_tasks_in_the_order_asked(store: Store) -> None:
    queue(store, "a", "b", "c")
    queue(store, "b", project="q")
    (done,) = claim(store, limit=1)
    store.complete_tasks(JOB, [done], results=[{"n": 1}])
    got = store.get_tasks("p", JOB, ["c", "missing", "a", "c"])
    assert [(s.row_id, s.status, s.result) for s in got] == [
        ("c", "pending", None),
        ("a", "done", {"n": 1}),
    ]
    assert store.get_tasks("p", JOB, []) == []
    assert [s.project for s in store.get_tasks("q", JOB, ["a", "b"])] == ["q"]


def test_claiming_only_some_rows_leaves_the_others_due(store: Store) -> None:
    queue(store, "a", "b", "c", "d")
    got = store.claim_tasks(JOB, project="p", limit=10, now=0.0, row_ids=["d", "b", "zz"])
    assert [t.row_id for t in got] == ["b", "d"]
    assert store.claim_tasks(JOB, project="p", limit=10, now=0.0, row_ids=[]) == []
    assert [t.row_id for t in claim(store)] == ["a", "c"]
    many = [f"x{i}" for i in range(2000)]  # beyond SQLite's old 999-parameter limit
    queue(store, *many[:3])
    got = store.claim_tasks(JOB, project="p", limit=10, now=0.0, row_ids=many)
    assert [t.row_id for t in got] == ["x0", "x1", "x2"]


def test_payloads_round_trip_as_json(store: Store) -> None:
    payload = {"text": "Grüße, 東京 \u0000 done", "ids": [1, 2.5, None], "nested": {"ok": True}}
    store.enqueue_tasks("p", JOB, [TaskIn("a", "h1", payload)])
    assert claim(store) == [Task("p", "a", "h1", 0, payload)]


# concurrency ---------------------------------------------------------------------


def test_two_stores_claiming_at_once_never_get_the_same_task(
    store: Store, store_factory: StoreFactory
) -> None:
    other = reopen(store_factory, store)
    row_ids = [f"r{i:03d}" for i in range(120)]
    queue(store, *row_ids)
    taken: list[list[str]] = [[], []]
    errors: list[BaseException] = []

    def worker(index: int, handle: Store) -> None:
        try:
            while batch := claim(handle, limit=3):
                taken[index].extend(t.row_id for t in batch)
        except BaseException as exc:  # surfaced below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i, s)) for i, s in enumerate((store, other))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(taken[0] + taken[1]) == row_ids
    assert set(taken[0]).isdisjoint(taken[1])
