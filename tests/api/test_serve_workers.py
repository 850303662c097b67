"""``kgsearch serve --workers 2``: two processes on one socket, one store, one embedding
worker; run as a real server (a subprocess) over HTTP."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from kgsearch.cli import cli

ENV = {"KGSEARCH_EMBED__MODEL": "fake:32"}


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
        return [int(x) for x in f.read().split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_two_server_processes_share_one_store(tmp_path: Path) -> None:
    db = tmp_path / "workers.db"
    made = CliRunner().invoke(
        cli,
        [
            "--db",
            str(db),
            "--json",
            "keys",
            "create",
            "--project",
            "alpha",
            "--scopes",
            "read,write",
        ],
        env=ENV,
    )
    key = json.loads(made.stdout)["key"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "kgsearch", "--db", str(db), "serve", "--port", str(port)]
    proc = subprocess.Popen(
        [*command, "--workers", "2"],
        env={**os.environ, **ENV},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    headers = {"Authorization": f"Bearer {key}"}
    base = f"http://127.0.0.1:{port}"
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "kgsearch serve --workers 2 did not start"
            time.sleep(0.2)
        with httpx.Client(base_url=base, headers=headers, timeout=30) as c:
            for name in ("Ada Lovelace", "Charles Babbage", "Alan Turing"):
                created = c.post("/api/graph/objects", json={"type": "Person", "key": name})
                assert created.status_code == 201, created.text
            # the one embedding worker embeds them; either process then finds them
            while True:
                found = c.post("/api/search/unified", json={"query": "Alan Turing", "limit": 3})
                assert found.status_code == 200, found.text
                keys = [r.get("name") or r.get("key") for r in found.json()["results"]]
                if found.json()["results"] and "Alan Turing" in json.dumps(keys):
                    break
                assert time.monotonic() < deadline, f"never embedded: {found.json()}"
                time.sleep(0.3)
            answers = [
                c.post("/api/search/unified", json={"query": f"Ada {i}"}).status_code
                for i in range(10)
            ]
            job = c.post(
                "/api/documents", json={"text": "Ada Lovelace wrote notes.", "extractor": "none"}
            ).json()
        # each poll on a connection of its own, so the socket hands polls to both processes
        polls = [_poll(base, headers, job["id"]) for _ in range(20)]
        while polls[-1]["state"] == "running":
            assert time.monotonic() < deadline, f"the job never finished: {polls[-1]}"
            polls.append(_poll(base, headers, job["id"]))
        workers = [p for p in _children(proc.pid) if _children(p) or _is_server(p)]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)

    assert answers == [200] * 10
    assert all(p["id"] == job["id"] for p in polls), polls  # never a 404 from the other process
    assert polls[-1]["state"] == "done", polls[-1]
    assert polls[-1]["result"]["documents"] == 1
    assert len(workers) >= 2, workers
    assert not any(_alive(p) for p in workers)


def _poll(base: str, headers: dict[str, str], job_id: str) -> dict[str, Any]:
    answer = httpx.get(f"{base}/api/jobs/{job_id}", headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _is_server(pid: int) -> bool:
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    return b"multiprocessing" in cmdline and b"resource_tracker" not in cmdline


def test_only_the_first_process_takes_the_embedding_worker(tmp_path: Path) -> None:
    from kgsearch.cli.serve_workers import _first, _held

    lock = tmp_path / "worker.lock"
    lock.write_bytes(b"")
    try:
        assert _first(str(lock)) is True
        assert _first(str(lock)) is False  # another open file: as another process would
    finally:
        while _held:
            _held.pop().close()


def test_each_process_listens_on_a_socket_of_its_own_on_the_port() -> None:
    import pickle
    from multiprocessing.reduction import ForkingPickler

    from kgsearch.cli.serve_workers import listening_socket

    parent = listening_socket("127.0.0.1", 0)
    assert parent is not None
    port = parent.getsockname()[1]
    # what uvicorn hands each process it starts: a new socket on the same port
    own = [pickle.loads(ForkingPickler.dumps(parent)) for _ in range(2)]
    try:
        assert [s.getsockname() for s in own] == [("127.0.0.1", port)] * 2
        assert all(type(s) is socket.socket for s in own)
        for s in own:
            s.listen(64)
            s.setblocking(False)
        # connections made together are spread over the processes' sockets, by the kernel
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(32)]
        time.sleep(0.2)
        accepted = [0, 0]
        for i, s in enumerate(own):
            while True:
                try:
                    conn, _ = s.accept()
                except BlockingIOError:
                    break
                conn.close()
                accepted[i] += 1
        for c in clients:
            c.close()
        assert sum(accepted) == 32 and min(accepted) > 0, accepted
        # a port another server listens on is refused, not shared
        with socket.socket() as other:
            other.bind(("127.0.0.1", 0))
            other.listen()
            taken = other.getsockname()[1]
            with pytest.raises(OSError):
                listening_socket("127.0.0.1", taken)
    finally:
        parent.close()
        for s in own:
            s.close()
