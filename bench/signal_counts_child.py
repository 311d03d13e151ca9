"""The serving process of bench/signal_counts.py (not a benchmark itself).

signal_counts_child.py TARGET OUT   serve TARGET (a file or a DSN), print "ready";
on a line on stdin start counting (cProfile when OUT is not "-"), print
"counting"; at SIGTERM stop, write the profile to OUT and print "cpu SECONDS"
(this process's CPU while counting).
"""

from __future__ import annotations

import asyncio
import cProfile
import os
import signal
import sys

from bench.pg_worker import register
from harvest_engine import PostgresRuntime, Runtime, SqliteRuntime


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


async def serve(target: str, out: str) -> None:
    """Serve until SIGTERM, counting from the parent's go line."""
    rt: Runtime = (
        PostgresRuntime.connect(target)
        if "://" in target
        else SqliteRuntime.open(target)
    )
    with rt:
        register(rt)  # type: ignore[arg-type]
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        profiler = cProfile.Profile() if out != "-" else None
        began: list[float] = []

        async def count_from_go() -> None:
            await loop.run_in_executor(None, sys.stdin.readline)
            began.append(_cpu())
            if profiler is not None:
                profiler.enable()
            print("counting", flush=True)

        print("ready", flush=True)
        counting = asyncio.create_task(count_from_go())
        await rt.serve(stop)
        counting.cancel()
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(out)
        print(f"cpu {_cpu() - began[0] if began else 0.0}", flush=True)


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1], sys.argv[2]))
