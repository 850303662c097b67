"""``kgsearch serve --workers N``: several server processes on one port.

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

**One listening socket a process.** Behind one shared socket the processes did not
share the connections: a process woken by a new connection accepts every connection
waiting, so a burst of keep-alive clients connecting together (8 in a benchmark, a
pool of a proxy) often all went to one process while the other idled (per-process CPU
over 10 s: 9.45 s and 0.02 s). Where the system has ``SO_REUSEPORT`` (Linux, the BSDs,
macOS) each process therefore listens on a socket of its own bound to the same port
(:func:`listening_socket`), and the kernel spreads new connections over them; a process
that exits leaves the group, and its replacement joins it. Elsewhere they share one.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
from dataclasses import asdict, dataclass
from typing import IO, Any, TypeVar

from kgsearch.cli.common import load_settings
from kgsearch.engine import Engine
from kgsearch.lifecycle.budget import BudgetLimits

__all__ = [
    "MAX_WORKERS",
    "OPTIONS_ENV",
    "ProcessOptions",
    "app",
    "listening_socket",
    "model_threads",
    "one_blas_thread",
    "usable_cpus",
]

MAX_WORKERS = 64
"""The most server processes ``--workers`` starts (``auto`` included)."""

OPTIONS_ENV = "KGSEARCH_SERVE_PROCESS"
"""The environment variable that carries :class:`ProcessOptions` (JSON) to the workers."""

_S = TypeVar("_S", bound=socket.socket)
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


class _OwnSocket(socket.socket):
    """The parent's socket, bound with ``SO_REUSEPORT`` to hold the port (and to learn
    it when 0 was asked for) but never listened on: each process it is handed to (uvicorn
    pickles it for every process it starts, restarts included) gets a new socket bound
    to the same address instead of a copy of this one (:func:`_bound`)."""

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        host, port = self.getsockname()[:2]
        return _bound, (self.family, host, port)


def _bound(family: int, host: str, port: int) -> socket.socket:
    """A socket bound to ``(host, port)`` with ``SO_REUSEPORT``, beside the others."""
    sock = _shared_bind(socket.socket(family, socket.SOCK_STREAM), host, port)
    sock.set_inheritable(True)
    return sock


def _shared_bind(sock: _S, host: str, port: int) -> _S:
    """``sock`` bound to ``(host, port)`` with ``SO_REUSEPORT`` (closed if that fails)."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if sock.family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def listening_socket(host: str, port: int) -> socket.socket | None:
    """The socket to hand uvicorn's processes: one that gives each process a socket of
    its own on the same port (see the module docstring), or None where the system has
    no ``SO_REUSEPORT`` (the processes then share uvicorn's one socket).

    Raises:
        OSError: The address cannot be bound (in use, not local).
    """
    if not hasattr(socket, "SO_REUSEPORT"):
        return None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    if port:  # taken by anything (another server's shared port too): refuse, not share
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    return _shared_bind(_OwnSocket(family, socket.SOCK_STREAM), host, port)


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
    from threadpoolctl import threadpool_limits

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
