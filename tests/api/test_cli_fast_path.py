"""``kgsearch search`` through a running ``kgsearch serve`` of the same store: a real
server process and the real CLI (subprocesses), compared with the search in process."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kgsearch.cli import cli
from kgsearch.cli.remote import discovery_path, store_identity

ENV = {"KGSEARCH_EMBED__MODEL": "fake:32"}
GRAPH = [
    {"kind": "object", "type": "Person", "key": "ada", "properties": {"name": "Ada Lovelace"}},
    {"kind": "object", "type": "Org", "key": "acme", "properties": {"name": "Acme Corp"}},
    {"kind": "object", "type": "Person", "key": "alan", "properties": {"name": "Alan Turing"}},
    {
        "kind": "relationship",
        "type": "WORKS_FOR",
        "source": {"type": "Person", "key": "ada"},
        "target": {"type": "Org", "key": "acme"},
    },
]
POST = 'POST /api/search/unified HTTP/1.1" 200'
REFUSED = 'POST /api/search/unified HTTP/1.1" 403'
STATS = 'GET /api/graph/stats HTTP/1.1" 200'
KGSEARCH = [sys.executable, "-m", "kgsearch"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with the graph embedded in two projects (default and alpha, which lacks Alan)."""
    root = tmp_path_factory.mktemp("fast")
    db = root / "fast.db"
    for project, rows in (("default", GRAPH), ("alpha", GRAPH[:2])):
        data = root / f"{project}.jsonl"
        data.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
        for args in (["import", str(data)], ["embed", "generate"]):
            done = CliRunner().invoke(cli, ["--db", str(db), "-p", project, *args], env=ENV)
            assert done.exit_code == 0, done.output
    return db


def _env(runtime: Path, **more: str) -> dict[str, str]:
    # the kgsearch under test, where the run points at a checkout's src (a store its
    # migrations wrote is refused by an older installed copy)
    tested = {k: v for k, v in os.environ.items() if k == "PYTHONPATH"}
    return {**ENV, "PATH": "/usr/bin:/bin", "KGSEARCH_RUNTIME_DIR": str(runtime), **tested, **more}


def kgsearch(db: Path, runtime: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KGSEARCH, "--db", str(db), *args],
        env=_env(runtime, **env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


class Server:
    def __init__(self, proc: subprocess.Popen[bytes], log: Path, record: dict[str, Any]) -> None:
        self.proc, self.log, self.record = proc, log, record

    def searches(self) -> int:
        """Searches the server has answered so far (its access log)."""
        return self.log.read_text(encoding="utf-8").count(POST)

    def stats(self) -> int:
        """Stats the server has answered so far."""
        return self.log.read_text(encoding="utf-8").count(STATS)

    def refusals(self) -> int:
        """Searches the server refused (another project than the key's)."""
        return self.log.read_text(encoding="utf-8").count(REFUSED)


@contextmanager
def _serving(store: Path, tmp_path: Path, *flags: str) -> Iterator[Server]:
    runtime = tmp_path / "run"
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [*KGSEARCH, "--db", str(store), "serve", *flags, "--port", "0", "--no-worker"],
            env=_env(runtime),
            stdout=sink,
            stderr=sink,
        )
    identity = store_identity(str(store))
    assert identity is not None
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KGSEARCH_RUNTIME_DIR", str(runtime))
        found = discovery_path(identity)
    deadline = time.monotonic() + 60
    while not found.exists():
        assert proc.poll() is None, log.read_text(encoding="utf-8")
        assert time.monotonic() < deadline, "kgsearch serve wrote no discovery file"
        time.sleep(0.1)
    try:
        yield Server(proc, log, json.loads(found.read_text(encoding="utf-8")))
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert not found.exists(), "the discovery file outlived the server"


@pytest.fixture
def server(store: Path, tmp_path: Path) -> Iterator[Server]:
    with _serving(store, tmp_path, "--no-auth") as running:
        yield running


def _without_timings(found: dict[str, Any]) -> dict[str, Any]:
    return {**found, "metadata": {**found["metadata"], "executionTime": None}}


def _table(text: str) -> str:
    return re.sub(r"results in [0-9.]+ ms", "results in … ms", text)


@pytest.mark.parametrize("args", [["Ada"], ["Ada", "-p", "alpha"], ["Alan", "--limit", "2"]])
def test_search_through_the_server_prints_what_the_search_in_process_prints(
    store: Path, server: Server, tmp_path: Path, args: list[str]
) -> None:
    runtime = tmp_path / "run"

    remote_json = kgsearch(store, runtime, "--json", "search", *args)
    remote_table = kgsearch(store, runtime, "search", *args)
    assert server.searches() == 2
    local_json = kgsearch(store, runtime, "--json", "search", *args, "--in-process")
    local_table = kgsearch(store, runtime, "search", *args, "--in-process")

    assert server.searches() == 2
    assert remote_json.returncode == local_json.returncode == 0, remote_json.stderr
    assert remote_table.returncode == local_table.returncode == 0, remote_table.stderr
    remote, local = json.loads(remote_json.stdout), json.loads(local_json.stdout)
    assert remote["results"], "the search found nothing: the comparison would be empty"
    assert _without_timings(remote) == _without_timings(local)
    assert _table(remote_table.stdout) == _table(local_table.stdout)


def test_the_search_in_process_does_not_load_the_engine_when_a_server_answers(
    store: Path, server: Server, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *KGSEARCH[1:], "--db", str(store), "search", "Ada"],
        env=_env(tmp_path / "run"),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )

    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
    assert server.searches() == 1
    assert "kgsearch.cli.remote" in imported
    assert not {"kgsearch.engine", "pydantic", "numpy", "httpx"} & imported


@pytest.mark.parametrize("args", [[], ["-p", "alpha"]])
def test_stats_through_the_server_prints_what_stats_in_process_prints(
    store: Path, server: Server, tmp_path: Path, args: list[str]
) -> None:
    runtime = tmp_path / "run"

    # a SQLite store is counted in process, read-only: --server asks the server
    url = str(server.record["url"])
    remote_json = kgsearch(store, runtime, "--json", "stats", *args, "--server", url)
    remote_table = kgsearch(store, runtime, "stats", *args, "--server", url)
    assert server.stats() == 2
    local_json = kgsearch(store, runtime, "--json", "stats", *args, "--in-process")
    local_table = kgsearch(store, runtime, "stats", *args, "--in-process")

    assert server.stats() == 2
    assert remote_json.returncode == local_json.returncode == 0, remote_json.stderr
    assert remote_table.returncode == local_table.returncode == 0, remote_table.stderr
    remote = json.loads(remote_json.stdout)
    assert remote["counts"]["objects"] == (3 if not args else 2)
    assert remote == json.loads(local_json.stdout)
    assert remote_table.stdout == local_table.stdout


def test_stats_through_the_server_loads_neither_the_engine_nor_pydantic(
    store: Path, server: Server, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *KGSEARCH[1:], "--db", str(store), "stats"],
        env=_env(tmp_path / "run", KGSEARCH_SERVER=str(server.record["url"])),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )

    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
    assert server.stats() == 1
    assert "kgsearch.cli.remote" in imported
    assert not {"kgsearch.engine", "pydantic", "numpy", "httpx"} & imported


def test_a_discovery_file_of_a_dead_server_is_ignored(
    store: Path, server: Server, tmp_path: Path
) -> None:
    runtime = tmp_path / "run"
    path = next(runtime.glob("server-*.json"))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    # the live server's URL under a dead pid: a search must not be sent there
    path.write_text(json.dumps({**server.record, "pid": gone.pid}), encoding="utf-8")

    done = kgsearch(store, runtime, "--json", "search", "Ada")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"]
    assert server.searches() == 0
    path.write_text(json.dumps(server.record), encoding="utf-8")  # the server removes it


def test_a_server_with_other_search_settings_is_not_used(
    store: Path, server: Server, tmp_path: Path
) -> None:
    done = kgsearch(store, tmp_path / "run", "--json", "search", "Ada", KGSEARCH_SEARCH__RRF_K="10")

    assert done.returncode == 0, done.stderr
    assert server.searches() == 0


def test_an_unreachable_explicit_server_falls_back_with_a_note(store: Path, tmp_path: Path) -> None:
    done = kgsearch(
        store, tmp_path / "run", "--json", "search", "Ada", "--server", "http://127.0.0.1:9"
    )

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"]
    assert "searching in process" in done.stderr


def test_a_server_with_api_keys_is_used_with_a_key_and_skipped_without(
    store: Path, tmp_path: Path
) -> None:
    made = CliRunner().invoke(
        cli, ["--db", str(store), "--json", "keys", "create", "--scopes", "read"], env=ENV
    )
    key = json.loads(made.stdout)["key"]
    runtime = tmp_path / "run"
    with _serving(store, tmp_path) as keyed:
        assert keyed.record["auth"] is True
        without = kgsearch(store, runtime, "--json", "search", "Ada")
        assert keyed.searches() == 0
        with_key = kgsearch(store, runtime, "--json", "search", "Ada", KGSEARCH_API_KEY=key)
        assert keyed.searches() == 1
        other = kgsearch(
            store, runtime, "--json", "search", "Ada", "-p", "alpha", KGSEARCH_API_KEY=key
        )
        # the key is default's: refused, so searched in process
        assert (keyed.searches(), keyed.refusals()) == (1, 1)

    answers = [json.loads(done.stdout) for done in (without, with_key, other)]
    assert _without_timings(answers[0]) == _without_timings(answers[1])
    assert answers[2]["results"] and answers[2] != answers[0]
