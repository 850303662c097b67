"""Time the extraction parser on hostile replies: one shape per way it used to go
quadratic or recurse without bound (issue 31), at 1 MB and 30 MB.

A reply over ``extract.max_reply_chars`` (1,000,000 by default) fails its chunk
unread, so the 30 MB rows show only that parsing stays linear past the cap. Times are
CPU seconds of this process (``time.process_time``), so other work on a shared machine
does not count; wall seconds are shown beside them.

    python scripts/bench_parse_hostile.py            # print the table
    python scripts/bench_parse_hostile.py --write    # and write its section of docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from benchdoc import table, write_section

from kgsearch.extract.parse import is_empty_reply, parse_reply_lenient

SHAPES: dict[str, Callable[[int], str]] = {
    "letters `x`": lambda n: "x" * n,
    "braces `{`": lambda n: "{" * n,
    "brackets `[`": lambda n: "[" * n,
    "open heads `a(`": lambda n: "a(" * (n // 2),
    "nested heads `r(`…`)`": lambda n: "r(" * (n // 4) + ")" * (n // 4),
    "spaces between two letters": lambda n: "a" + " " * n + "b",
    "`x_` repeated": lambda n: "x_" * (n // 2),
    'list keys `"entities": [x`': lambda n: '"entities": [x ' * (n // 15),
    "fences": lambda n: "```" * (n // 3),
    "wrapped description lines": lambda n: "a [b] c: d\n" + "x y\n" * (n // 4),
    "empty triples `a()`": lambda n: "a()" * (n // 3),
}


def timed(text: str) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    parse_reply_lenient(text)
    is_empty_reply(text)
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument("--sizes", default="1000000,30000000", help="characters, comma-separated")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for name, make in SHAPES.items():
        row: list[object] = [name]
        for size in sizes:
            cpu, wall = timed(make(size))
            row.append(f"{cpu:.2f} ({wall:.2f})")
            print(name, size, f"{cpu:.3f} cpu s", f"{wall:.3f} wall s", flush=True)
        rows.append(row)
    body = table(["shape", *(f"{s / 1e6:g} MB: CPU s (wall s)" for s in sizes)], rows)
    print(body)
    if args.write:
        write_section(
            "parse-hostile",
            "Extraction parser on hostile replies",
            "python scripts/bench_parse_hostile.py --write",
            body + "\n\nBefore the linear parser (issue 31) 20,000 characters took 1.66 s "
            "(letters), 7.19 s (open heads), 1.02 s (spaces), 1.52 s (`x_`), and brackets "
            "and nested heads raised RecursionError; each grew with the square of the "
            "length (100,000 letters: 55 s). `tests/unit/extract/test_parse_hostile.py` "
            "holds each 1 MB shape under one CPU second.",
        )


if __name__ == "__main__":
    main()
