"""Background jobs seen from every process of ``kgsearch serve --workers N``.

A job runs in the process whose request started it, but the next poll may reach any
process on the socket. Each process that owns jobs posts their snapshots to a
directory the server's processes share (one JSON file per job, replaced whole, so a
reader never sees half of one); a process that does not know a job reads its file.
Cancelling a job another process runs leaves a marker file beside it, which the
owner's watcher thread turns into the job's own stop within :data:`WATCH_SECONDS`.

A file names the process that wrote it: a job still ``running`` in a process that has
exited (the supervisor restarts a worker that dies) is reported as failed, never as
running forever. With one process there is no board, and nothing here runs.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic_core import to_jsonable_python

__all__ = ["POST_SECONDS", "WATCH_SECONDS", "JobBoard"]

POST_SECONDS = 0.25
"""A running job's snapshot is posted at most this often (its first and last always)."""

WATCH_SECONDS = 0.5
"""How often a process looks for cancel markers of the jobs it runs."""

log = logging.getLogger("kgsearch.api")

_ID = re.compile(r"[0-9a-f]{1,64}")  # job ids are hex tokens; anything else is no file


class JobBoard:
    """Job snapshots shared by a server's processes through ``folder``.

    Args:
        folder: The directory the processes share (made if missing).
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._posted: dict[str, float] = {}
        self._held: dict[str, Mapping[str, Any]] = {}
        self._owned: dict[str, Callable[[], None]] = {}
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the board's lock across processes: checking which jobs run and posting a
        new one's first snapshot happen as one step, so two processes asked at once
        never both start a job only one may run."""
        with open(self.folder / ".lock", "a+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def post(self, job_id: str, snapshot: Mapping[str, Any], *, now: bool = False) -> None:
        """Publish a job's snapshot; a running job's at most every :data:`POST_SECONDS`
        unless ``now`` (its first and its last). A snapshot held back is posted by the
        watcher (:meth:`own`) within :data:`WATCH_SECONDS`, unless a newer one is first."""
        with self._lock:  # writes in order: a held-back snapshot never follows a newer one
            clock = time.monotonic()
            if not now and clock - self._posted.get(job_id, float("-inf")) < POST_SECONDS:
                self._held[job_id] = snapshot
                return
            self._held.pop(job_id, None)
            self._posted[job_id] = clock
            self._write(job_id, snapshot)

    def _write(self, job_id: str, snapshot: Mapping[str, Any]) -> None:
        body = json.dumps({"pid": os.getpid(), "snapshot": to_jsonable_python(snapshot)})
        temporary: str | None = None
        try:
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".post-")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(body)
            os.replace(temporary, self._path(job_id, ".json"))
        except OSError as exc:  # the job goes on; only other processes lose sight of it
            log.warning("could not post job %s for the other server processes: %s", job_id, exc)
            if temporary is not None:
                Path(temporary).unlink(missing_ok=True)

    def read(self, job_id: str) -> dict[str, Any] | None:
        """The snapshot another process posted, or None. A job still running in a
        process that has exited is reported as failed."""
        if not _ID.fullmatch(job_id):
            return None
        try:
            posted = json.loads(self._path(job_id, ".json").read_text("utf-8"))
        except (OSError, ValueError):
            return None
        snapshot: dict[str, Any] = posted["snapshot"]
        if snapshot.get("state") == "running" and not _alive(int(posted["pid"])):
            snapshot["state"] = "failed"
            snapshot["error"] = {
                "code": "error",
                "message": "the server process running this job exited before it finished",
                "details": {},
            }
        return snapshot

    def running(self, project: str) -> list[dict[str, Any]]:
        """Snapshots of ``project``'s jobs that processes still alive are running."""
        found = []
        for path in self.folder.glob("*.json"):
            snapshot = self.read(path.stem)
            if snapshot and snapshot.get("project") == project and snapshot["state"] == "running":
                found.append(snapshot)
        return found

    def forget(self, job_id: str) -> None:
        """Drop a job's file (its owner forgot it)."""
        with self._lock:
            self._posted.pop(job_id, None)
        for suffix in (".json", ".cancel"):
            self._path(job_id, suffix).unlink(missing_ok=True)

    def ask_to_cancel(self, job_id: str) -> None:
        """Ask the process running ``job_id`` to stop it."""
        self._path(job_id, ".cancel").touch()

    def own(self, job_id: str, stop: Callable[[], None]) -> None:
        """Watch a job this process runs: post its held-back snapshots, and call
        ``stop`` when another process asks to cancel it."""
        with self._lock:
            self._owned[job_id] = stop
            if self._watcher is None or not self._watcher.is_alive():
                self._watcher = threading.Thread(
                    target=self._watch, daemon=True, name="kgsearch-job-board"
                )
                self._watcher.start()

    def release(self, job_id: str) -> None:
        """Stop watching a job that has finished."""
        with self._lock:
            self._owned.pop(job_id, None)
            self._held.pop(job_id, None)

    def _watch(self) -> None:
        while True:
            with self._lock:
                if not self._owned:
                    self._watcher = None
                    return
                owned = list(self._owned.items())
                for job_id in [i for i in self._held if i in self._owned]:
                    self._posted[job_id] = time.monotonic()
                    self._write(job_id, self._held.pop(job_id))
            for job_id, stop in owned:
                marker = self._path(job_id, ".cancel")
                if marker.exists():
                    marker.unlink(missing_ok=True)
                    stop()
            time.sleep(WATCH_SECONDS)

    def _path(self, job_id: str, suffix: str) -> Path:
        if not _ID.fullmatch(job_id):
            raise ValueError(f"not a job id: {job_id!r}")
        return self.folder / f"{job_id}{suffix}"


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a process of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
