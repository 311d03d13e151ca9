"""DBOS Transact's queues on the flow-control workload, SQLite or Postgres (the peers venv).

    .venv-peers/bin/python bench/dbos_queues.py URL [--runs 1000] [--concurrency 8]
        [--rate LIMIT/PERIOD] [--poll 0.01]

URL is a SQLite file path or a postgresql:// DSN (DBOS's system database).
RUNS workflows of three sequential steps (each x + 1) are enqueued on one
DBOS queue with `concurrency` (or with a `limiter` of LIMIT per PERIOD
seconds) in one launched process, which works its own queue; timed from the
first enqueue to the last result, as bench/flow_bench.py times harvest.
It imports nothing of harvest. The last line on stdout is a JSON object.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from dbos import DBOS


@DBOS.step()
def inc(x: int) -> int:
    """One step: x + 1."""
    return x + 1


@DBOS.workflow()
def three_steps(x: int) -> int:
    """Three sequential steps."""
    for _ in range(3):
        x = inc(x)
    return x


def _url(target: str) -> str:
    if target.startswith("postgresql://"):
        return "postgresql+psycopg://" + target.removeprefix("postgresql://")
    return f"sqlite:///{target}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--rate", default=None, help="LIMIT/PERIOD, e.g. 100/1")
    parser.add_argument("--poll", type=float, default=0.01)
    args = parser.parse_args()
    limiter: Any = None
    if args.rate:
        limit, period = args.rate.split("/")
        limiter = {"limit": int(limit), "period": float(period)}
    DBOS(
        config={
            "name": "flow-bench",
            "system_database_url": _url(args.url),
            "log_level": "WARNING",
        }
    )
    DBOS.launch()
    queue = DBOS.register_queue(
        "flow_bench",
        concurrency=args.concurrency,
        limiter=limiter,
        polling_interval_sec=args.poll,
    )
    try:
        began = time.perf_counter()
        handles = [queue.enqueue(three_steps, i) for i in range(args.runs)]
        results = [h.get_result() for h in handles]
        wall = time.perf_counter() - began
    finally:
        DBOS.destroy(destroy_registry=False)
    if results != [i + 3 for i in range(args.runs)]:
        raise RuntimeError("DBOS returned wrong results")
    print(
        json.dumps(
            {
                "engine": "dbos",
                "runs": args.runs,
                "seconds": round(wall, 3),
                "runs_per_sec": round(args.runs / wall, 1),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
