"""Concurrent clients of a kgsearch REST server, run in a process of their own (so their
threads never share the server's interpreter lock) by the fault-injection suite.

``python tests/load_clients.py BASE_URL SECONDS CLIENTS PREFIX`` runs CLIENTS threads
for SECONDS, each alternating an object write and a unified search, plus one prober
of ``/health`` every 20 ms, and prints one JSON object: the keys of acknowledged
writes, each search's (seconds, status, warnings), each probe's seconds, and errors.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

import httpx


def main(base: str, seconds: float, clients: int, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {"acked": [], "searches": [], "health": [], "errors": []}
    lock = threading.Lock()
    # Plain HTTP on loopback: no TLS context (building one costs ~0.1 s per client).
    made = [
        httpx.Client(base_url=base, timeout=60, trust_env=False, verify=False)
        for _ in range(clients + 1)
    ]
    until = time.monotonic() + seconds

    def client(n: int) -> None:
        with made[n] as c:
            i = 0
            while time.monotonic() < until:
                key = f"{prefix}-{n}-{i}"
                try:
                    w = c.post(
                        "/api/graph/objects",
                        json={"type": "Person", "key": key, "properties": {"name": f"P {key}"}},
                    )
                    started = time.perf_counter()
                    s = c.post("/api/search/unified", json={"query": f"P {prefix} {i}"})
                    took = time.perf_counter() - started
                except httpx.HTTPError as exc:
                    with lock:
                        out["errors"].append(repr(exc))
                    continue
                with lock:
                    if w.status_code == 201:
                        out["acked"].append(key)
                    else:
                        out["errors"].append(f"write {w.status_code}: {w.text[:200]}")
                    warnings = s.json().get("metadata", {}).get("warnings", [])
                    out["searches"].append([took, s.status_code, warnings])
                i += 1

    def probe() -> None:
        with made[clients] as c:
            while time.monotonic() < until:
                started = time.perf_counter()
                try:
                    r = c.get("/health")
                except httpx.HTTPError as exc:
                    with lock:
                        out["errors"].append(f"health: {exc!r}")
                    continue
                took = time.perf_counter() - started
                with lock:
                    out["health"].append(took if r.status_code == 200 else -1.0)
                time.sleep(0.02)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    threads.append(threading.Thread(target=probe))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


if __name__ == "__main__":
    base, seconds, clients, prefix = sys.argv[1:5]
    print(json.dumps(main(base, float(seconds), int(clients), prefix)))
