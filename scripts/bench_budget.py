"""What the LLM budget costs a spending request: admission (two range sums over the
project's usage of the minute and the UTC day, one insert) plus settling its tokens,
on a SQLite file holding a day of usage for 10 keys.

Usage: python scripts/bench_budget.py [--hours 24] [--requests 300]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from kgsearch import connect
from kgsearch.lifecycle.budget import Budget, BudgetLimits
from kgsearch.llm.base import Usage
from kgsearch.llm.meter import Meter


def main() -> None:
    """Fill a day's usage, then time admit + settle per request."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hours", type=int, default=24, help="usage already in the store")
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = connect(str(Path(folder) / "budget.db"))
        minute = int(time.time() // 60)
        keys = [f"k{i}" for i in range(10)]
        with store.transaction():
            for m in range(minute - args.hours * 60, minute + 1):
                for key in keys:
                    store.add_llm_usage("p", key, m, requests=1, prompt_tokens=100)
        budget = Budget(store, BudgetLimits.unlimited())
        took = []
        for i in range(args.requests):
            started = time.perf_counter()
            budget.admit("p", keys[i % len(keys)])
            meter = Meter()
            meter.add(Usage(1873, 231), None)
            budget.settle("p", keys[i % len(keys)], meter)
            took.append((time.perf_counter() - started) * 1000)
        store.close()
    took.sort()
    rows = (args.hours * 60 + 1) * len(keys)
    p95 = took[int(len(took) * 0.95)]
    print(
        f"{rows} usage rows: admit + settle p50 {statistics.median(took):.2f} ms, "
        f"p95 {p95:.2f} ms, max {took[-1]:.2f} ms over {len(took)} requests"
    )


if __name__ == "__main__":
    main()
