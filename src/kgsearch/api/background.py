"""Background embedding for the servers: an optional worker and pollable backfill jobs.

Writes commit rows as ``pending`` and return; these threads embed them afterwards
through :meth:`kgsearch.Engine.embed_step`, which does one bounded batch per kind and
never sleeps on a backoff, so both stop promptly when asked. The engine's store
serialises statements, so the threads share it safely with request handlers. Under
``serve --workers N`` a backfill is polled from any process, and one runs per project
across them, through the server's :class:`~kgsearch.api.job_board.JobBoard`.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import UTC, datetime
from typing import Any

from kgsearch.api.job_board import JobBoard
from kgsearch.engine import Engine
from kgsearch.errors import Conflict, KgsearchError, NotFound
from kgsearch.model import Kind

__all__ = ["BackfillJobs", "EmbeddingWorker"]

log = logging.getLogger("kgsearch.api")
_KEEP_JOBS = 100


class EmbeddingWorker:
    """Embeds every project's due rows every ``interval`` seconds until stopped.

    It never competes with request handling for long: it runs one bounded batch per
    step on its own thread with no transaction open while the embedder works, rests
    ``pause`` seconds between batches (so request threads get the store and the CPU),
    and when a whole step fails (the provider is down, hung or refusing) it waits
    longer and longer, up to ``max_backoff`` seconds, before trying again, so an
    outage neither spins nor burns every row's attempts at once.

    Args:
        engine: The engine whose store is watched.
        interval: Seconds between polls when there is nothing to do.
        batch_size: Rows per embedder call.
        pause: Seconds between two batches.
        max_backoff: The longest wait after failed steps.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        interval: float = 1.0,
        batch_size: int = 64,
        pause: float = 0.05,
        max_backoff: float = 30.0,
    ) -> None:
        self.engine = engine
        self.interval = interval
        self.batch_size = batch_size
        self.pause = pause
        self.max_backoff = max_backoff
        self._failed_steps = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kgsearch-embed", daemon=True)
        self._last_error: str | None = None

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Ask the thread to stop after its current batch and wait for it."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                while not self._stop.is_set():
                    report = self.engine.embed_step(batch_size=self.batch_size)
                    if report.processed == 0:
                        break
                    if report.embedded == 0 and report.failed:
                        self._note(report.errors[0] if report.errors else "embedding failed")
                        break  # the provider failed the whole step: back off
                    self._failed_steps = 0
                    self._last_error = None
                    self._stop.wait(self.pause)
            except KgsearchError as exc:
                self._note(exc.message)
            except Exception:  # a bug; keep serving and say so loudly
                log.exception("background embedding crashed")
            self._stop.wait(self._wait())

    def _note(self, message: str) -> None:
        self._failed_steps += 1
        if message != self._last_error:
            log.warning("background embedding failed: %s", message)
            self._last_error = message

    def _wait(self) -> float:
        """The poll interval, doubled for each failed step in a row up to the cap."""
        if not self._failed_steps:
            return self.interval
        return float(min(self.max_backoff, self.interval * 2.0 ** min(self._failed_steps, 16)))


class _Job:
    def __init__(
        self, project: str, kinds: Sequence[Kind], batch_size: int, delay_ms: int, limit: int | None
    ) -> None:
        self.id = secrets.token_hex(8)
        self.project = project
        self.kinds = list(kinds)
        self.batch_size = batch_size
        self.delay_ms = delay_ms
        self.limit = limit
        self.state = "running"
        self.total = 0
        self.counts = {"processed": 0, "embedded": 0, "failed": 0, "dead": 0, "batches": 0}
        self.errors: list[str] = []
        self.error: dict[str, Any] | None = None
        self.started_at = datetime.now(UTC)
        self.finished_at: datetime | None = None
        self.cancel = threading.Event()
        self.thread: threading.Thread | None = None

    def snapshot(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "project": self.project,
            "state": self.state,
            "kinds": [k.value for k in self.kinds],
            "total": self.total,
            **self.counts,
            "errors": list(self.errors[:10]),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "error": self.error,
        }


class BackfillJobs:
    """Backfill jobs of all projects; each project runs at most one at a time.

    Args:
        engine: The engine to embed with.
        board: Shares the jobs with the server's other processes (``--workers``).
    """

    def __init__(self, engine: Engine, board: JobBoard | None = None) -> None:
        self.engine = engine
        self.board = board
        self._lock = threading.Lock()
        self._jobs: dict[str, _Job] = {}

    def start(
        self,
        project: str,
        *,
        kinds: Sequence[Kind] = tuple(Kind),
        batch_size: int = 64,
        delay_ms: int = 0,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """Start a backfill of ``project`` and return its first snapshot.

        Raises:
            Conflict: A backfill of this project is still running.
        """
        board = self.board.exclusive() if self.board is not None else nullcontext()
        with self._lock, board:
            running = [j.id for j in self._jobs.values() if j.project == project]
            running = [i for i in running if self._jobs[i].state == "running"]
            if self.board is not None:
                running += [s["id"] for s in self.board.running(project)]
            if running:
                raise Conflict(
                    f"a backfill of this project is already running (job {running[0]})",
                    details={"job_id": running[0]},
                )
            job = _Job(project, kinds, batch_size, delay_ms, limit)
            job.total = self.engine.embedding_todo(project=project, kinds=kinds).total
            self._jobs[job.id] = job
            self._forget_old()
            job.thread = threading.Thread(
                target=self._run, args=(job,), name=f"kgsearch-backfill-{job.id}", daemon=True
            )
            first = job.snapshot()  # before the thread runs: a small job may finish at once
            self._post(job, now=True)
            if self.board is not None:
                self.board.own(job.id, job.cancel.set)
            job.thread.start()
            return first

    def get(self, project: str, job_id: str) -> dict[str, Any]:
        """A job's progress; jobs of other projects do not exist for the caller.

        Raises:
            NotFound: No job with this id in ``project``.
        """
        job = self._jobs.get(job_id)
        if job is not None and job.project == project:
            return job.snapshot()
        posted = None if self.board is None or job else self.board.read(job_id)
        if posted is None or posted.get("project") != project:
            raise NotFound(f"backfill job {job_id!r} not found in this project")
        return posted

    def stop_all(self, timeout: float = 30.0) -> None:
        """Cancel running jobs after their current batch and wait for them."""
        jobs = list(self._jobs.values())
        for job in jobs:
            job.cancel.set()
        for job in jobs:
            if job.thread is not None and job.thread.is_alive():
                job.thread.join(timeout)

    def _forget_old(self) -> None:
        finished = [j for j in self._jobs.values() if j.state != "running"]
        for job in finished[: max(0, len(self._jobs) - _KEEP_JOBS)]:
            del self._jobs[job.id]
            if self.board is not None:
                self.board.forget(job.id)

    def _post(self, job: _Job, *, now: bool = False) -> None:
        if self.board is not None:
            self.board.post(job.id, job.snapshot(), now=now)

    def _run(self, job: _Job) -> None:
        state, error = "done", None
        try:
            while not job.cancel.is_set():
                report = self.engine.embed_step(
                    project=job.project, kinds=job.kinds, batch_size=job.batch_size
                )
                for name in job.counts:
                    job.counts[name] += getattr(report, name)
                job.errors.extend(e for e in report.errors if e not in job.errors)
                self._post(job)
                if report.processed == 0:
                    break
                if job.limit is not None and job.counts["processed"] >= job.limit:
                    break
                if job.delay_ms:
                    job.cancel.wait(job.delay_ms / 1000)
            else:
                state = "cancelled"
        except KgsearchError as exc:
            state, error = "failed", exc.to_dict()["error"]
        except Exception:  # a bug: record it without leaking internals to the caller
            log.exception("backfill job %s crashed", job.id)
            state, error = "failed", {"code": "error", "message": "internal error", "details": {}}
        job.finished_at = datetime.now(UTC)
        job.error = error
        # the board first, as JobRegistry._run does: a poller that sees the job end may
        # start another, which forgets old jobs; a last post after that would write a
        # forgotten job's file back
        if self.board is not None:
            self.board.post(job.id, {**job.snapshot(), "state": state}, now=True)
            self.board.release(job.id)
        job.state = state
