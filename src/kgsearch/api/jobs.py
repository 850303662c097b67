"""Pollable background jobs of the REST API (ingest and extraction runs).

A job runs one engine call in its own thread and can be polled by id. The work
reports progress through :meth:`Job.update`, which is also where a job asked to stop
(server shutdown, ``DELETE /api/jobs/{id}``) ends: it raises :class:`Cancelled`
between two steps, after the engine has recorded the last one, so a cancelled
ingest leaves stored documents and queued chunks for a later run. A model call in
flight is not waited for: the job's work runs under a
:class:`~kgsearch.cancel.Cancel` token that cancelling the job cancels, so the call
is dropped at once and its chunks are left for a later run, no attempt counted. Jobs of other
projects do not exist for the caller. The engine's store serialises statements, so
job threads share it safely with request handlers. Under ``serve --workers N`` a job
is polled and cancelled from any process through the server's
:class:`~kgsearch.api.job_board.JobBoard`.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from datetime import UTC, datetime
from typing import Any

from kgsearch.api.job_board import JobBoard
from kgsearch.cancel import Cancel, cancellable
from kgsearch.errors import Conflict, KgsearchError, NotFound

__all__ = ["Cancelled", "Job", "JobRegistry"]

log = logging.getLogger("kgsearch.api")


class Cancelled(Exception):
    """Raised by :meth:`Job.update` inside the work of a job asked to stop."""


class Job:
    """One background job: its state, progress so far and, once done, its result.

    Args:
        project: The project the job belongs to (and the only one that sees it).
        kind: What runs (``ingest``, ``extract``).
        progress: The initial progress counters.
        board: Where the job's snapshots are posted for the server's other processes.
    """

    def __init__(
        self,
        project: str,
        kind: str,
        progress: Mapping[str, Any],
        board: JobBoard | None = None,
    ) -> None:
        self.id = secrets.token_hex(8)
        self.project = project
        self.kind = kind
        self.state = "running"
        self.progress = dict(progress)
        self.result: Any = None
        self.error: dict[str, Any] | None = None
        self.started_at = datetime.now(UTC)
        self.finished_at: datetime | None = None
        self.cancel = threading.Event()
        self.calls = Cancel()  # the model calls of the work
        self.thread: threading.Thread | None = None
        self.board = board

    def stop(self) -> None:
        """Ask the work to stop after its current step; drop its model calls now."""
        self.cancel.set()
        self.calls.cancel("the job was cancelled")

    @property
    def running(self) -> bool:
        """Whether the job has not finished yet."""
        return self.state == "running"

    def update(self, **values: Any) -> None:
        """Merge progress counters, then stop the work if the job was cancelled.

        Raises:
            Cancelled: The job was asked to stop.
        """
        # A new dict, swapped in whole: request threads read it without a lock.
        self.progress = {**self.progress, **values}
        if self.board is not None:
            self.board.post(self.id, self.snapshot())
        if self.cancel.is_set():
            raise Cancelled

    def snapshot(self) -> dict[str, Any]:
        """The job as the API returns it."""
        return {
            "id": self.id,
            "project": self.project,
            "kind": self.kind,
            "state": self.state,
            "progress": dict(self.progress),
            "result": self.result,
            "error": self.error,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }


class JobRegistry:
    """Background jobs of all projects, each in its own thread.

    Args:
        per_project: Jobs a project may run at once (more are 409).
        keep: Finished jobs remembered for polling (the oldest are forgotten first).
        board: Shares the jobs with the server's other processes (``--workers``); the
            limit per project is then counted over all of them.
    """

    def __init__(
        self, *, per_project: int = 4, keep: int = 100, board: JobBoard | None = None
    ) -> None:
        self.per_project = per_project
        self.keep = keep
        self.board = board
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}

    def start(
        self,
        project: str,
        kind: str,
        work: Callable[[Job], Any],
        *,
        progress: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run ``work(job)`` in a new thread and return the job's first snapshot.

        ``work`` returns the job's result (a pydantic model); a
        :class:`~kgsearch.errors.KgsearchError` it raises fails the job with that
        error, and :class:`Cancelled` ends it as cancelled.

        Raises:
            Conflict: ``project`` already runs ``per_project`` jobs.
        """
        board = self.board.exclusive() if self.board is not None else nullcontext()
        with self._lock, board:
            running = [j.id for j in self._jobs.values() if j.project == project and j.running]
            if self.board is not None:
                running += [s["id"] for s in self.board.running(project) if s["id"] not in running]
            if len(running) >= self.per_project:
                raise Conflict(
                    f"{len(running)} jobs of this project are running; poll them "
                    "(GET /api/jobs/{id}) and start more when one is done",
                    details={"running": running},
                )
            job = Job(project, kind, progress or {}, self.board)
            self._jobs[job.id] = job
            self._forget_old()
            job.thread = threading.Thread(
                target=self._run, args=(job, work), name=f"kgsearch-{kind}-{job.id}", daemon=True
            )
            first = job.snapshot()  # before the thread runs: a small job may finish at once
            if self.board is not None:
                self.board.post(job.id, first, now=True)
                self.board.own(job.id, job.stop)
            job.thread.start()
            return first

    def get(self, project: str, job_id: str) -> dict[str, Any]:
        """A job's snapshot.

        Raises:
            NotFound: No job with this id in ``project``.
        """
        posted = self._posted(project, job_id)
        return posted if posted is not None else self._find(project, job_id).snapshot()

    def cancel(self, project: str, job_id: str) -> dict[str, Any]:
        """Ask a job to stop after its current step; returns its snapshot.

        Raises:
            NotFound: No job with this id in ``project``.
        """
        posted = self._posted(project, job_id)
        if posted is not None and self.board is not None:  # another process runs it
            if posted["state"] == "running":
                self.board.ask_to_cancel(job_id)
            return posted
        job = self._find(project, job_id)
        job.stop()
        return job.snapshot()

    def stop_all(self, timeout: float = 30.0) -> None:
        """Cancel every running job and wait for each to reach a stopping point."""
        jobs = list(self._jobs.values())
        for job in jobs:
            job.stop()
        for job in jobs:
            if job.thread is not None and job.thread.is_alive():
                job.thread.join(timeout)

    def _posted(self, project: str, job_id: str) -> dict[str, Any] | None:
        """The snapshot of a job of ``project`` another process runs, or None."""
        if self.board is None or job_id in self._jobs:
            return None
        posted = self.board.read(job_id)
        return posted if posted is not None and posted.get("project") == project else None

    def _find(self, project: str, job_id: str) -> Job:
        job = self._jobs.get(job_id)
        if job is None or job.project != project:
            raise NotFound(f"job {job_id!r} not found in this project")
        return job

    def _forget_old(self) -> None:
        finished = [j for j in self._jobs.values() if not j.running]
        for job in finished[: max(0, len(self._jobs) - self.keep)]:
            del self._jobs[job.id]
            if self.board is not None:
                self.board.forget(job.id)

    @staticmethod
    def _run(job: Job, work: Callable[[Job], Any]) -> None:
        state, result, error = "done", None, None
        try:
            with cancellable(job.calls):
                result = work(job)
            if job.cancel.is_set():  # its model calls were dropped: the run stopped
                state = "cancelled"
        except Cancelled:
            state = "cancelled"
        except KgsearchError as exc:
            state, error = "failed", exc.to_dict()["error"]
        except Exception:  # a bug: record it without leaking internals to the caller
            log.exception("%s job %s crashed", job.kind, job.id)
            state, error = "failed", {"code": "error", "message": "internal error", "details": {}}
        job.result, job.error = result, error
        job.finished_at = datetime.now(UTC)
        # the board first: a poller that sees the job end may start another, which
        # forgets the oldest finished job and drops its file; a last post after that
        # would write the forgotten file back
        if job.board is not None:
            job.board.post(job.id, {**job.snapshot(), "state": state}, now=True)
            job.board.release(job.id)
        job.state = state  # last: a poller that sees "done" also sees the result
