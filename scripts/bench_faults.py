"""Search under a slow chat model: plain searches, writes and /health with 0, 2 and 4
slow answers in flight, against one `kgsearch serve`, in one run (issue 32, item 1).

Usage: python scripts/bench_faults.py [--asks 0,2,4] [--rounds 2] [--seconds 15]
       [--clients 20] [--slow-seconds 60] [--chat-modes slow,stall] [--db PATH]
       [--no-write]

The sample graph (data/sample/metaqa-movies.jsonl) is imported and embedded with the
bundled model once (cached in --db, as scripts/bench_load.py does) and copied for the
run, so the server's writes never reach the cache. The chat model is the real
OpenAI-compatible client pointed at tests/fault_provider.py on loopback, in each of
--chat-modes: ``slow`` answers after --slow-seconds, ``stall`` starts its reply (the
stream's first piece, half a whole reply) and then sends nothing. The server
(`kgsearch serve --no-auth`, default threads, the LLM lane's 4, the background
embedding worker on) runs as a subprocess; so do the --clients load clients
(tests/load_clients.py: each alternates an object write and a plain unified search,
one more times /health every 20 ms). For each count of --asks, that many threads of
this process keep an answer (``/api/ask``, half of them streamed) waiting on the
model: the load starts once the model holds them all. The counts are run --rounds
times per mode, interleaved (0, 2, 4, 0, 2, 4…), so the machine's drift falls on
every count alike; each row pools its rounds. Afterwards every acknowledged write is
looked up in the store. Writes docs/benchmarks.md's "faults" section and the same
table into docs/reliability.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from bench_load import ensure_db, free_port, percentile
from benchdoc import table, write_section

from kgsearch import Engine, connect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from fault_provider import FaultyProvider  # noqa: E402  (a test helper, not a package)

LOADER = ROOT / "tests" / "load_clients.py"
RELIABILITY = ROOT / "docs" / "reliability.md"


def start_server(store: Path, port: int, provider: FaultyProvider) -> subprocess.Popen[bytes]:
    """`kgsearch serve --no-auth` over ``store`` with ``provider`` as its chat model."""
    env = {
        **os.environ,
        "KGSEARCH_LLM__MODEL": "openai:fault",
        "KGSEARCH_LLM__BASE_URL": provider.url,
        "KGSEARCH_LLM__CACHE": "false",
        "KGSEARCH_LLM__MAX_RETRIES": "0",
        "KGSEARCH_LLM__TIMEOUT": "300",
        "KGSEARCH_LLM__ANSWER_DEADLINE_SECONDS": "300",
        # the answers are the load here, not what the budget is for
        "KGSEARCH_BUDGET__PROJECT_REQUESTS_PER_MINUTE": "0",
        "KGSEARCH_BUDGET__PROJECT_TOKENS_PER_MINUTE": "0",
    }
    command = [sys.executable, "-m", "kgsearch", "--db", str(store), "serve", "--no-auth"]
    proc = subprocess.Popen(
        [*command, "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not start within 120 s")


class Asks:
    """``count`` threads that each keep one answer waiting on the model."""

    def __init__(self, base: str, count: int) -> None:
        self.stop = threading.Event()
        self.statuses: list[int] = []
        self.threads = [
            threading.Thread(target=self._ask, args=(base, n), daemon=True) for n in range(count)
        ]
        for thread in self.threads:
            thread.start()

    def _ask(self, base: str, n: int) -> None:
        body = {"query": "who directed The Matrix", "stream": n % 2 == 1}
        with httpx.Client(base_url=base, timeout=600, trust_env=False) as c:
            while not self.stop.is_set():
                try:
                    self.statuses.append(c.post("/api/ask", json=body).status_code)
                except httpx.HTTPError:
                    self.statuses.append(-1)

    def end(self, provider: FaultyProvider, mode: str) -> None:
        """Let the answers end (the model answers at once meanwhile)."""
        self.stop.set()
        provider.set_chat_mode("ok")
        for thread in self.threads:
            thread.join(60)
        provider.set_chat_mode(mode)


def load(base: str, seconds: float, clients: int, prefix: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(LOADER), base, str(seconds), str(clients), prefix],
        capture_output=True,
        text=True,
        timeout=seconds + 300,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def one_run(
    base: str, provider: FaultyProvider, mode: str, asks: int, args: argparse.Namespace
) -> dict[str, Any]:
    """The load with ``asks`` answers held by the model throughout."""
    asking = Asks(base, asks)
    deadline = time.monotonic() + 60
    while provider.held < asks and time.monotonic() < deadline:
        time.sleep(0.05)
    if provider.held < asks:
        raise SystemExit(f"only {provider.held} of {asks} answers reached the model")
    seen = load(base, args.seconds, args.clients, f"{mode}{asks}-{time.monotonic_ns()}")
    seen["held_after"] = provider.held
    asking.end(provider, mode)
    seen["asks_done"] = len(asking.statuses)
    return seen


def row(
    mode: str, asks: int, runs: list[dict[str, Any]], seconds: float, stored: int
) -> list[object]:
    searches = [s for run in runs for s in run["searches"]]
    took = [s[0] for s in searches]
    health = [h for run in runs for h in run["health"]]
    acked = sum(len(run["acked"]) for run in runs)
    errors = sum(len(run["errors"]) for run in runs) + sum(s[1] != 200 for s in searches)
    return [
        mode,
        asks,
        len(runs),
        len(searches),
        errors,
        f"{len(searches) / (seconds * len(runs)):.1f}",
        f"{percentile(took, 0.5) * 1000:.0f}",
        f"{percentile(took, 0.95) * 1000:.0f}",
        f"{max(took) * 1000:.0f}",
        f"{percentile(health, 0.95) * 1000:.0f}",
        f"{stored:,} / {acked:,}",
    ]


def search_p95(runs: list[dict[str, Any]]) -> float:
    """The p95 seconds of the searches of ``runs``, pooled."""
    return percentile([s[0] for run in runs for s in run["searches"]], 0.95)


Runs = dict[tuple[str, int], list[dict[str, Any]]]


def stored_writes(store: Path, runs: Runs) -> dict[tuple[str, int], int]:
    """How many acknowledged writes of each (mode, count)'s runs are in the store."""
    found: dict[tuple[str, int], int] = {}
    with Engine(connect(str(store))) as engine:
        for which, rounds in runs.items():
            keys = [key for run in rounds for key in run["acked"]]
            found[which] = sum(engine.get_object_by_key("Person", k) is not None for k in keys)
    return found


def replace_marked(path: Path, name: str, body: str) -> None:
    """Replace the text between ``<!-- bench:NAME -->`` markers in ``path``."""
    text = path.read_text(encoding="utf-8")
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    if start not in text:
        raise SystemExit(f"{path} has no {start} marker")
    head, rest = text.split(start, 1)
    tail = rest.split(end, 1)[1]
    path.write_text(f"{head}{start}\n{body.strip()}\n{end}{tail}", encoding="utf-8")


def main() -> None:
    """Run the benchmark and write its sections."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--asks", default="0,2,4", help="Answers in flight, a comma list")
    parser.add_argument("--rounds", type=int, default=2, help="Times each count is run")
    parser.add_argument("--seconds", type=float, default=15.0, help="Seconds of load per run")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--slow-seconds", type=float, default=60.0)
    parser.add_argument("--chat-modes", default="slow,stall", help="slow, stall or both")
    parser.add_argument("--db", type=Path, default=ROOT / "bench-data" / "load-sample.db")
    parser.add_argument("--no-write", action="store_true", help="Do not touch docs/")
    args = parser.parse_args()
    args.db.parent.mkdir(parents=True, exist_ok=True)
    ensure_db(args.db)
    counts = [int(n) for n in args.asks.split(",")]
    modes = args.chat_modes.split(",")
    if not set(modes) <= {"slow", "stall"}:
        raise SystemExit(f"--chat-modes takes slow and stall, not {args.chat_modes!r}")
    workdir = Path(tempfile.mkdtemp(prefix="bench-faults-"))
    store = workdir / "store.db"
    shutil.copy(args.db, store)
    provider = FaultyProvider(slow_seconds=args.slow_seconds)
    port = free_port()
    load_before = os.getloadavg()[0]
    server = start_server(store, port, provider)
    base = f"http://127.0.0.1:{port}"
    runs: Runs = {(mode, n): [] for mode in modes for n in counts}
    try:
        for query in ("warm", "up", "the matrix"):
            httpx.post(f"{base}/api/search/unified", json={"query": query}, timeout=60)
        for mode in modes:
            provider.set_chat_mode(mode)
            for r in range(args.rounds):
                for asks in counts:
                    seen = one_run(base, provider, mode, asks, args)
                    runs[(mode, asks)].append(seen)
                    took = [s[0] for s in seen["searches"]]
                    print(
                        f"{mode}, round {r + 1}, {asks} answers in flight (held after: "
                        f"{seen['held_after']}): {len(took)} searches, p95 "
                        f"{percentile(took, 0.95) * 1000:.0f} ms",
                        file=sys.stderr,
                    )
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        provider.stop()
    stored = stored_writes(store, runs)
    shutil.rmtree(workdir, ignore_errors=True)
    headers = [
        "model",
        "answers in flight",
        "runs",
        "searches",
        "errors",
        "searches/s",
        "search p50 ms",
        "search p95 ms",
        "search max ms",
        "/health p95 ms",
        "writes stored / acknowledged",
    ]
    rows = [row(*k, runs[k], args.seconds, stored[k]) for k in runs]
    ratios = "; ".join(
        f"{mode}, {n} in flight: "
        f"{search_p95(runs[(mode, n)]) / search_p95(runs[(mode, counts[0])]):.2f}x"
        for mode in modes
        for n in counts[1:]
    )
    body = (
        f"{args.clients} clients (tests/load_clients.py, a process of their own), each "
        "alternating an object write and a plain POST /api/search/unified, plus a /health "
        "probe every 20 ms, against `kgsearch serve --no-auth` (default threads: one per "
        "core for requests and as many for searches, 4 on the LLM lane, the background "
        "embedding worker on) over the sample graph (data/sample/metaqa-movies.jsonl) "
        "embedded with the bundled model. The chat model is the real OpenAI-compatible "
        "client pointed at tests/fault_provider.py, `slow` (an answer takes "
        f"{args.slow_seconds:g} s) or `stall` (the reply starts, then nothing comes); "
        "the answers in flight (`/api/ask`, half streamed) are held by it for the whole "
        f"run. Each count was run {args.rounds} times per mode, interleaved, "
        f"{args.seconds:g} s each; the rows pool them. "
        "With twenty closed-loop clients, latency is mostly queueing for the cores. "
        f"Search p95 against none in flight: {ratios}. Load average (1 min) "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after, on "
        f"{os.cpu_count()} cores.\n\n" + table(headers, rows)
    )
    print(table(headers, rows))
    print(f"search p95 ratio: {ratios}")
    if not args.no_write:
        defaults = parser.parse_args([])
        command = "python scripts/bench_faults.py" + "".join(
            f" --{name.replace('_', '-')} {value}"
            for name, value in vars(args).items()
            if name != "no_write" and value != getattr(defaults, name)
        )
        write_section("faults", "Search under a slow chat model (lanes)", command, body)
        replace_marked(RELIABILITY, "faults", f"Command: `{command}`\n\n{body}")


if __name__ == "__main__":
    main()
