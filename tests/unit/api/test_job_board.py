"""The job board of ``serve --workers N``: registries that share one folder see each
other's jobs, as the server's processes do (each registry here stands for a process)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kgsearch.api.job_board import JobBoard
from kgsearch.api.jobs import Job, JobRegistry
from kgsearch.errors import Conflict, NotFound


def _wait(check: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _registries(folder: Path, **options: Any) -> tuple[JobRegistry, JobRegistry]:
    return (
        JobRegistry(board=JobBoard(folder), **options),
        JobRegistry(board=JobBoard(folder), **options),
    )


def test_a_job_started_in_one_process_is_polled_from_another(tmp_path: Path) -> None:
    owner, other = _registries(tmp_path)
    go = threading.Event()

    def work(job: Job) -> dict[str, int]:
        job.update(documents=1)
        go.wait(10)
        return {"documents": 1}

    started = owner.start("alpha", "ingest", work, progress={"documents_total": 1})

    _wait(lambda: other.get("alpha", started["id"])["progress"].get("documents") == 1)
    seen = other.get("alpha", started["id"])
    assert (seen["state"], seen["kind"], seen["progress"]["documents_total"]) == (
        "running",
        "ingest",
        1,
    )
    with pytest.raises(NotFound):  # jobs of other projects do not exist for the caller
        other.get("beta", started["id"])
    go.set()
    _wait(lambda: other.get("alpha", started["id"])["state"] == "done")
    assert other.get("alpha", started["id"])["result"] == {"documents": 1}
    assert other.get("alpha", started["id"])["finished_at"] is not None


def test_a_job_is_cancelled_from_another_process(tmp_path: Path) -> None:
    owner, other = _registries(tmp_path)

    def work(job: Job) -> None:
        while True:  # a long run, stopped only by its cancel
            job.update(chunks=1)
            time.sleep(0.02)

    started = owner.start("alpha", "extract", work)
    asked = other.cancel("alpha", started["id"])

    assert asked["state"] == "running"  # the owner stops it at its next step
    _wait(lambda: owner.get("alpha", started["id"])["state"] == "cancelled")
    _wait(lambda: other.get("alpha", started["id"])["state"] == "cancelled")
    assert not list(tmp_path.glob("*.cancel"))


def test_the_limit_per_project_counts_every_process(tmp_path: Path) -> None:
    first, second = _registries(tmp_path, per_project=1)
    go = threading.Event()
    started = first.start("alpha", "ingest", lambda job: go.wait(10))
    try:
        with pytest.raises(Conflict) as refused:
            second.start("alpha", "ingest", lambda job: None)
        assert refused.value.details["running"] == [started["id"]]
        second.start("beta", "ingest", lambda job: None)  # another project is free
    finally:
        go.set()
    _wait(lambda: second.get("alpha", started["id"])["state"] == "done")
    second.start("alpha", "ingest", lambda job: None)  # and the first one has finished


def test_a_job_whose_process_exited_is_reported_failed(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], **_OUT)
    snapshot = {"id": "00ff", "project": "alpha", "kind": "ingest", "state": "running"}
    (tmp_path / "00ff.json").write_text(
        json.dumps({"pid": int(gone.stdout), "snapshot": snapshot}), "utf-8"
    )

    seen = JobRegistry(board=JobBoard(tmp_path)).get("alpha", "00ff")

    assert seen["state"] == "failed"
    assert "exited" in seen["error"]["message"]
    assert JobBoard(tmp_path).running("alpha") == []


_OUT: Any = {"capture_output": True, "text": True, "check": True}


def test_ids_that_are_not_job_ids_find_nothing(tmp_path: Path) -> None:
    (tmp_path.parent / "secret.json").write_text("{}", "utf-8")
    board = JobBoard(tmp_path)

    assert board.read("../secret") is None
    with pytest.raises(NotFound):
        JobRegistry(board=board).get("alpha", "../secret")


class _SlowLastPost(JobBoard):
    """A board whose final post of a job lags, as on a loaded machine: the thread that
    finished a job is descheduled before it writes the job's last snapshot."""

    def post(self, job_id: str, snapshot: Any, *, now: bool = False) -> None:
        if snapshot["state"] != "running":
            time.sleep(0.2)
        super().post(job_id, snapshot, now=now)


@pytest.mark.parametrize("board", [JobBoard, _SlowLastPost])
def test_forgotten_jobs_leave_no_file(tmp_path: Path, board: type[JobBoard]) -> None:
    # a poller that sees "done" may start the next job, which forgets the oldest: the
    # finished job's last post comes before, or it would write a forgotten file back
    registry = JobRegistry(board=board(tmp_path), keep=1)
    ids = []
    for _ in range(3):
        job = registry.start("alpha", "ingest", lambda job: None)
        _wait(lambda job=job: registry.get("alpha", job["id"])["state"] == "done")
        posted = json.loads((tmp_path / f"{job['id']}.json").read_text())
        assert posted["snapshot"]["state"] == "done"
        ids.append(job["id"])

    time.sleep(0.3)  # any post still under way lands
    assert sorted(p.stem for p in tmp_path.glob("*.json")) == ids[-1:]


def test_one_backfill_per_project_across_processes(tmp_path: Path) -> None:
    from kgsearch import Engine, connect
    from kgsearch.api.background import BackfillJobs
    from kgsearch.embed.fake import FakeEmbedder
    from kgsearch.model import ObjectIn

    with Engine(connect(str(tmp_path / "kg.db")), embedder=FakeEmbedder(32)) as engine:
        engine.add_objects([ObjectIn(type="Person", key=f"p{i}") for i in range(3)])
        owner = BackfillJobs(engine, JobBoard(tmp_path / "backfill"))
        other = BackfillJobs(engine, JobBoard(tmp_path / "backfill"))
        try:
            job = owner.start(engine.project, batch_size=1, delay_ms=300)

            with pytest.raises(Conflict):
                other.start(engine.project)
            _wait(lambda: other.get(engine.project, job["id"])["state"] == "done")
            seen = other.get(engine.project, job["id"])
            assert (seen["processed"], seen["embedded"], seen["total"]) == (3, 3, 3)
            with pytest.raises(NotFound):
                other.get("elsewhere", job["id"])
        finally:
            owner.stop_all()


def test_two_processes_asked_at_once_start_one_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = _registries(tmp_path, per_project=1)
    looked = JobBoard.running

    def slow_look(board: JobBoard, project: str) -> list[dict[str, Any]]:
        found = looked(board, project)
        time.sleep(0.3)  # both would look before either posts, without the board's lock
        return found

    monkeypatch.setattr(JobBoard, "running", slow_look)
    go = threading.Event()
    outcomes: list[str] = []

    def start(registry: JobRegistry) -> None:
        try:
            registry.start("alpha", "ingest", lambda job: go.wait(10))
            outcomes.append("started")
        except Conflict:
            outcomes.append("refused")

    threads = [threading.Thread(target=start, args=(r,)) for r in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    go.set()

    assert sorted(outcomes) == ["refused", "started"]
