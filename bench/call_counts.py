"""Python call counts of the hot workloads: the machine-independent side of an A/B.

`PYTHONPATH=TREE python -m bench.call_counts` prints, for a signal round trip,
one run and a long history, how many Python calls the engine makes (cProfile
totals after a warm-up), so two trees compare on a loaded machine too.
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats
import tempfile
from collections.abc import Awaitable, Callable
from typing import Any

from bench import harvest_workloads as w

Workload = Callable[[Any, int], Awaitable[dict[str, Any]]]

WORKLOADS: list[tuple[str, Workload, int, int]] = [
    ("50 signals -> completion", w.signal, 50, 5),
    ("50 one-run latencies", w.latency, 50, 5),
    ("long history K=500", w.long_history, 500, 50),
]


def calls(workload: Workload, size: int, warm_up: int) -> int:
    """The Python calls `workload(size)` makes on a fresh file after `warm_up` of its own."""
    with tempfile.TemporaryDirectory(prefix="harvest-calls-") as folder:
        rt = w._open(folder)
        try:
            asyncio.run(workload(rt, warm_up))
            profiler = cProfile.Profile()
            profiler.enable()
            asyncio.run(workload(rt, size))
            profiler.disable()
        finally:
            rt.close()
    return int(pstats.Stats(profiler).total_calls)  # type: ignore[attr-defined]


def main() -> None:
    for name, workload, size, warm_up in WORKLOADS:
        print(f"{name}: {calls(workload, size, warm_up):,} calls")


if __name__ == "__main__":
    main()
