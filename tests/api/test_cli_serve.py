"""The server commands: ``keys create|list|revoke``, ``serve`` and ``mcp`` flags, and
the missing-extra message; ``kgsearch serve`` itself is run as a subprocess."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from kgsearch import connect
from kgsearch.cli import cli

ENV = {"KGSEARCH_EMBED__MODEL": "fake:32"}


def run(db: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db), *args], env=ENV)


def as_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_keys_create_prints_the_key_once_and_list_never_shows_it(tmp_path: Path) -> None:
    db = tmp_path / "k.db"

    created = as_json(
        run(db, "--json", "keys", "create", "--project", "alpha", "--scopes", "read,write,debug")
    )
    listed = as_json(run(db, "--json", "keys", "list"))

    assert created["key"].startswith(f"kgs_{created['id']}_")
    assert (created["project"], created["scopes"]) == ("alpha", ["read", "write", "debug"])
    assert [k["id"] for k in listed] == [created["id"]]
    assert created["key"] not in json.dumps(listed)


def test_keys_revoke_marks_the_key_revoked(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    key_id = as_json(run(db, "--json", "keys", "create", "--project", "alpha"))["id"]

    revoked = as_json(run(db, "--json", "keys", "revoke", key_id))
    again = run(db, "--json", "keys", "revoke", key_id)

    assert revoked == {"revoked": key_id}
    assert as_json(run(db, "--json", "keys", "list", "--project", "alpha"))[0]["revoked_at"]
    assert (again.exit_code, json.loads(again.stdout)["error"]["code"]) == (1, "not_found")


def test_keys_usage_shows_spend_per_key_and_per_project(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    created = as_json(
        run(db, "--json", "keys", "create", "--project", "alpha", "--scopes", "read,llm")
    )
    minute = int(time.time() // 60)
    with closing(connect(str(db))) as store:
        store.add_llm_usage("alpha", created["id"], minute, requests=2, prompt_tokens=90)
        store.add_llm_usage("alpha", "", minute, requests=1, completion_tokens=10)
        store.add_llm_usage("beta", "other", minute, requests=5)

    report = as_json(run(db, "--json", "keys", "usage", "--project", "alpha"))
    table = run(db, "keys", "usage")

    assert created["scopes"] == ["read", "llm"]
    assert [
        (r["key_id"], r["today"]["requests"], r["today"]["tokens"]) for r in report["keys"]
    ] == [
        ("", 1, 10),
        (created["id"], 2, 90),
    ]
    assert [(p["project"], p["today"]["requests"]) for p in report["projects"]] == [("alpha", 3)]
    assert table.exit_code == 0, table.output
    assert created["id"] in table.output and "beta" in table.output and "(total)" in table.output


def test_keys_limit_sets_and_resets_a_keys_own_budget(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    key_id = as_json(run(db, "--json", "keys", "create", "--scopes", "read,llm"))["id"]

    set_ = as_json(run(db, "--json", "keys", "limit", key_id, "--requests-per-minute", "60"))
    listed = as_json(run(db, "--json", "keys", "list"))
    reset = as_json(run(db, "--json", "keys", "limit", key_id, "--reset"))
    neither = run(db, "keys", "limit", key_id)
    unknown = run(db, "--json", "keys", "limit", "nokey", "--tokens-per-day", "5")

    assert set_ == {"id": key_id, "llm_limits": {"requests_per_minute": 60}}
    assert listed[0]["llm_limits"]["requests_per_minute"] == 60
    assert reset == {"id": key_id, "llm_limits": None}
    assert as_json(run(db, "--json", "keys", "list"))[0]["llm_limits"] is None
    assert neither.exit_code == 2 and "--reset" in neither.output
    assert (unknown.exit_code, json.loads(unknown.stdout)["error"]["code"]) == (1, "not_found")


def test_keys_create_rejects_unknown_scopes(tmp_path: Path) -> None:
    result = run(tmp_path / "k.db", "keys", "create", "--scopes", "read,root")

    assert result.exit_code == 1
    assert "unknown scope(s) root" in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "--no-auth", "--host", "0.0.0.0"],
        ["mcp", "--transport", "http", "--no-auth", "--host", "10.0.0.1"],
    ],
)
def test_keyless_mode_refuses_non_loopback_addresses(tmp_path: Path, args: list[str]) -> None:
    result = run(tmp_path / "k.db", *args)

    assert result.exit_code == 2
    assert "--no-auth only serves loopback addresses" in result.output


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("lots", "'lots' is neither a whole number nor 'auto'"),
        ("0", "0 is not between 1 and 64 (or 'auto')"),
        ("65", "65 is not between 1 and 64 (or 'auto')"),
    ],
)
def test_serve_workers_takes_a_number_or_auto(tmp_path: Path, value: str, message: str) -> None:
    result = run(tmp_path / "k.db", "serve", "--workers", value)

    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "k.db").exists()  # refused before any store is made


def test_serve_workers_above_one_are_refused_for_an_in_memory_store() -> None:
    result = CliRunner().invoke(cli, ["--db", ":memory:", "serve", "--workers", "2"], env=ENV)

    assert result.exit_code == 2
    assert "an in-memory store lives in one process" in result.output


def test_serve_workers_auto_is_one_process_per_usable_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kgsearch.cli import serve_workers
    from kgsearch.cli.serve import AUTO_WORKERS, WorkerCount, _processes

    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 3, 5}, raising=False)
    parse = WorkerCount().convert

    assert parse("auto", None, None) == parse(" AUTO ", None, None) == AUTO_WORKERS
    assert parse("3", None, None) == 3
    assert serve_workers.usable_cpus() == 3
    assert _processes(AUTO_WORKERS, "/data/graph.db") == 3
    assert _processes(AUTO_WORKERS, ":memory:") == 1  # no other process sees it
    assert _processes(2, "postgresql://db/kg") == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(200)), raising=False)
    assert serve_workers.usable_cpus() == 64


def test_each_server_process_runs_the_model_on_its_share_of_the_cpus(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kgsearch.cli import serve_workers

    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(8)), raising=False)

    assert serve_workers.model_threads(1) == 8
    assert serve_workers.model_threads(2) == 4
    assert serve_workers.model_threads(3) == 2  # 8 // 3: never more threads than CPUs
    assert serve_workers.model_threads(8) == 1
    assert serve_workers.model_threads(64) == 1  # at least one


def test_serve_workers_hand_the_model_threads_to_each_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgsearch.cli import serve, serve_workers

    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1}, raising=False)
    seen: list[serve_workers.ProcessOptions] = []
    monkeypatch.setattr(serve, "_serve_processes", lambda options, *rest: seen.append(options))

    result = run(tmp_path / "k.db", "serve", "--workers", "2")

    assert result.exit_code == 0, result.output
    assert seen[0].model_threads == 1  # 2 processes on 2 CPUs: one thread each
    again = serve_workers.ProcessOptions(**json.loads(seen[0].to_env()))
    assert again == seen[0]  # what the processes read back from the environment


@pytest.mark.parametrize(("command", "module"), [("serve", "fastapi"), ("mcp", "mcp")])
def test_server_commands_without_the_extra_say_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, module: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)

    result = run(tmp_path / "k.db", command)

    assert result.exit_code == 1
    assert "pip install 'kgsearch[server]'" in result.output


def test_kgsearch_imports_without_the_server_extra() -> None:
    code = (
        "import sys\n"
        "for m in ('fastapi', 'starlette', 'uvicorn', 'mcp', 'anyio'):\n"
        "    sys.modules[m] = None\n"
        "import kgsearch, kgsearch.cli, kgsearch.keys, kgsearch.api, kgsearch.mcp\n"
        "try:\n"
        "    import kgsearch.api.app\n"
        "except kgsearch.MissingDependency as exc:\n"
        "    print(exc)\n"
    )

    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )

    assert out.stdout.strip() == (
        "the REST API needs the server extra: pip install 'kgsearch[server]'"
    )


def test_kgsearch_serve_answers_on_loopback(tmp_path: Path) -> None:
    db = tmp_path / "serve.db"
    key = as_json(run(db, "--json", "keys", "create", "--project", "alpha"))["key"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "kgsearch", "--db", str(db), "serve", "--port", str(port)],
        env={  # PYTHONPATH: the kgsearch under test, where the run points at a checkout's src
            **ENV,
            "PATH": "/usr/bin:/bin",
            **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                health = httpx.get(f"{base}/health", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "kgsearch serve did not start"
                time.sleep(0.1)
        listed = httpx.get(f"{base}/api/graph/objects", headers={"Authorization": f"Bearer {key}"})
        unauthorised = httpx.get(f"{base}/api/graph/objects")
        ui = httpx.get(f"{base}/ui/")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)

    assert health.json()["status"] == "ok"
    assert (listed.status_code, listed.json()) == (200, {"items": [], "next_cursor": None})
    assert unauthorised.status_code == 401
    assert ui.status_code == 200 and "/ui/static/app.js" in ui.text
