"""A read scope: a value a search's freshness checks ask is read once, shared with the
threads the search hands work to, and never outside the scope."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from kgsearch.store.scope import carried, read_scope, scoped


def test_outside_a_scope_nothing_is_read_or_kept() -> None:
    reads: list[int] = []

    def read() -> int:
        reads.append(1)
        return 1

    assert scoped("k", read) is None
    assert reads == []


def test_inside_a_scope_a_key_is_read_once() -> None:
    reads: list[str] = []

    def read(key: str) -> str:
        reads.append(key)
        return key.upper()

    with read_scope():
        assert scoped("a", lambda: read("a")) == "A"
        assert scoped("a", lambda: read("a")) == "A"
        assert scoped("b", lambda: read("b")) == "B"
    assert reads == ["a", "b"]
    with read_scope():  # a new scope reads again
        assert scoped("a", lambda: read("a")) == "A"
    assert reads == ["a", "b", "a"]


def test_threads_inside_the_scope_share_one_read() -> None:
    reads: list[int] = []

    def slow() -> int:
        reads.append(1)
        time.sleep(0.05)  # the others arrive while the first reads
        return 7

    with read_scope(), ThreadPoolExecutor(4) as pool:

        def check(scope: object) -> int | None:
            with scope:  # type: ignore[attr-defined]
                return scoped("k", slow)

        futures = [pool.submit(check, carried()) for _ in range(4)]
        assert [f.result() for f in futures] == [7, 7, 7, 7]
    assert reads == [1]


def test_a_thread_not_carried_into_the_scope_reads_on_its_own() -> None:
    seen: list[object] = []
    with read_scope():
        assert scoped("k", lambda: 1) == 1
        thread = threading.Thread(target=lambda: seen.append(scoped("k", lambda: 2)))
        thread.start()
        thread.join()
    assert seen == [None]
