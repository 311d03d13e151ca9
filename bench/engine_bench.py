"""Engine benchmarks: throughput of short runs, and the instance cache's O(K) against full replay."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from harvest_engine import (
    ActivityContext,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)


@activity
async def bench_step(ctx: ActivityContext, n: int) -> int:
    return n + 1


@workflow
async def bench_chain(ctx: WorkflowContext, k: int) -> int:
    value = 0
    for _ in range(k):
        value = await ctx.execute_activity(bench_step, value)
    return value


def _runtime(path: Path, cache: bool) -> SqliteRuntime:
    rt = SqliteRuntime.open(path)
    rt.register_workflow(bench_chain)
    rt.register_activity(bench_step)
    if not cache:
        rt.cache.capacity = 0
    return rt


async def _chain_seconds(k: int, cache: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        rt = _runtime(Path(tmp) / "bench.db", cache)
        exec_id = rt.start_workflow("bench_chain", k)
        started = time.perf_counter()
        await rt.run_until_blocked(exec_id)
        elapsed = time.perf_counter() - started
        rt.close()
        return elapsed


async def _throughput(runs: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        rt = _runtime(Path(tmp) / "bench.db", cache=True)
        for _ in range(runs):
            rt.start_workflow("bench_chain", 3)
        started = time.perf_counter()
        await rt.run_until_idle()
        elapsed = time.perf_counter() - started
        rt.close()
        return runs / elapsed


def run() -> list[tuple[str, str]]:
    """Measure; return (name, result) rows for RESULTS.md."""
    rows: list[tuple[str, str]] = []
    tput = asyncio.run(_throughput(200))
    rows.append(
        (
            "runs of 3 activities, run_until_idle, file on disk (FULL fsync)",
            f"{tput:.0f} runs/s",
        )
    )
    for k in (100, 400):
        with_cache = asyncio.run(_chain_seconds(k, cache=True))
        without = asyncio.run(_chain_seconds(k, cache=False))
        rows.append(
            (
                f"chain of {k} activities: cache on vs full replay per cycle",
                f"{with_cache:.2f} s vs {without:.2f} s (full replay is {without / with_cache:.1f}x slower)",
            )
        )
    small = asyncio.run(_chain_seconds(100, cache=True))
    large = asyncio.run(_chain_seconds(400, cache=True))
    rows.append(
        ("cache on: time(K=400) / time(K=100) (linear is 4.0)", f"{large / small:.1f}")
    )
    return rows


def main() -> Any:
    for name, result in run():
        print(f"{name}: {result}")


if __name__ == "__main__":
    main()
