"""``kgsearch serve --workers N``: several server processes behind one socket.

One process serves searches on one core's worth of Python at a time (the GIL): the
query embedding and the vector products run beside it, but parsing, ranking, fusing
and encoding a search do not. With ``--workers N`` uvicorn's supervisor binds the
socket once and starts N processes, each of which calls :func:`app` here: it builds
an engine of its own over the same store (SQLite in WAL mode, or a PostgreSQL pool per
process) from the options the parent left in :data:`OPTIONS_ENV`, and the app over
it. The supervisor restarts a process that dies.

What each process holds for itself: the embedding model, the store's vectors and
caches. The bundled model runs on the process's share of the CPUs
(:func:`model_threads`), not on every CPU in every process. A background job runs
in the process that started it and posts its progress to a folder the processes
share (:mod:`kgsearch.api.job_board`), so any process answers a poll or a cancel.
The embedding worker (``--worker``) runs in one process only: the first to take
:data:`OPTIONS_ENV`'s lock file.
"""

from __future__ import annotations

import atexit
import json
import os
from dataclasses import asdict, dataclass
from typing import IO, Any

from kgsearch.cli.common import load_settings
from kgsearch.engine import Engine
from kgsearch.lifecycle.budget import BudgetLimits

__all__ = [
    "MAX_WORKERS",
    "OPTIONS_ENV",
    "ProcessOptions",
    "app",
    "model_threads",
    "one_blas_thread",
    "usable_cpus",
]

MAX_WORKERS = 64
"""The most server processes ``--workers`` starts (``auto`` included)."""

OPTIONS_ENV = "KGSEARCH_SERVE_PROCESS"
"""The environment variable that carries :class:`ProcessOptions` (JSON) to the workers."""

_held: list[IO[bytes]] = []  # the embedding worker's lock, held for the process's life


@dataclass(frozen=True)
class ProcessOptions:
    """What every server process needs from the command line."""

    url: str
    project: str | None
    read_url: str | None
    keys: bool
    max_body_bytes: int
    worker_lock: str | None
    threads: int | None
    llm_threads: int
    warm: bool
    jobs_folder: str | None = None
    model_threads: int | None = None

    def to_env(self) -> str:
        """The options as the JSON the workers read."""
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls) -> ProcessOptions:
        """The options the parent left in :data:`OPTIONS_ENV`."""
        fields: dict[str, Any] = json.loads(os.environ[OPTIONS_ENV])
        return cls(**fields)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, where the system has one),
    at most :data:`MAX_WORKERS`: what ``serve --workers auto`` starts."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity masks (macOS, Windows)
        count = os.cpu_count() or 1
    return max(1, min(count, MAX_WORKERS))


def model_threads(workers: int) -> int:
    """The bundled model's threads in each of ``workers`` processes: its share of the
    usable CPUs, at least one. The processes' searches already keep every core busy
    under load, and a model call spread over more threads than its share only waits
    for the cores the other processes hold (docs/benchmarks.md, "load")."""
    return max(1, usable_cpus() // max(1, workers))


def one_blas_thread() -> None:
    """Keep numpy's BLAS to one thread in this process: searches already run side by
    side on the search lane (and in other processes), and a vector product spread over
    every core as well only makes them wait for each other (with 8 clients on 2
    loaded cores a server answered about 2x faster with one BLAS thread;
    docs/benchmarks.md, "load")."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - part of the server extra
        return
    threadpool_limits(1, user_api="blas")


def app() -> Any:
    """The app of one worker process (uvicorn calls it: ``factory=True``)."""
    from kgsearch.api.app import create_app

    options = ProcessOptions.from_env()
    one_blas_thread()
    settings = load_settings()
    if options.read_url:
        store = settings.store.model_copy(update={"read_url": options.read_url})
        settings = settings.model_copy(update={"store": store})
    engine = Engine.from_settings(
        settings,
        project=options.project,
        store_url=options.url,
        model_threads=options.model_threads,
    )
    atexit.register(engine.close)
    return create_app(
        engine,
        keys=options.keys,
        max_body_bytes=options.max_body_bytes,
        worker=options.worker_lock is not None and _first(options.worker_lock),
        threads=options.threads,
        llm_threads=options.llm_threads,
        warm=options.warm,
        budget=BudgetLimits.from_settings(settings.budget),
        jobs_folder=options.jobs_folder,
    )


def _first(lock_path: str) -> bool:
    """Whether this process is the first to lock ``lock_path`` (held until it exits)."""
    import fcntl

    handle = open(lock_path, "rb")  # noqa: SIM115 - held open for the process's life
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return False
    _held.append(handle)
    return True
