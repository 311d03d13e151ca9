"""Serving benchmarks: idle CPU of a serving process, client signal-to-completion, timer lateness."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from harvest_engine import (
    ExecutionOutcome,
    HarvestClient,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)

HERE = Path(__file__).parent
CHILD = HERE / "serving_child.py"
IDLE_SECONDS = 10.0
SIGNALS = 100
TIMERS = 100


def _child(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def idle_cpu(folder: Path) -> float:
    """Percent of one core a serving process uses while every run waits."""
    proc = _child(str(folder / "idle.db"), "idle", str(IDLE_SECONDS))
    out, err = proc.communicate(timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(err)
    measured = json.loads(out)
    return 100.0 * measured["cpu_seconds"] / measured["wall_seconds"]


async def _signal_latencies(path: Path) -> list[float]:
    with HarvestClient.open(path) as client:
        latencies = []
        for i in range(SIGNALS):
            exec_id = await client.start_workflow("waits_for_go")
            began = time.perf_counter()
            await client.send_signal(exec_id, "go", i)
            outcome = await client.result(exec_id, timeout="30s")
            latencies.append(time.perf_counter() - began)
            assert outcome == ExecutionOutcome.Completed(output=i)
    return latencies


def signal_to_completion(folder: Path) -> list[float]:
    """Seconds from a client's send_signal call to the client seeing the run completed."""
    path = folder / "signals.db"
    SqliteRuntime.open(path).close()
    server = _child(str(path), "serve")
    try:
        assert server.stdout is not None
        assert server.stdout.readline().strip() == "serving"
        return asyncio.run(_signal_latencies(path))
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=60)


@workflow
async def naps(ctx: WorkflowContext, seconds: float) -> str:
    """One durable timer."""
    await ctx.sleep(seconds)
    return "done"


async def _timer_lateness(path: Path) -> list[float]:
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(naps)
        stop = asyncio.Event()
        server = asyncio.create_task(rt.serve(stop))
        rng = random.Random(7)
        naps_of = {
            str(rt.start_workflow("naps", seconds)): seconds
            for seconds in (rng.uniform(2.0, 5.0) for _ in range(TIMERS))
        }
        while not all(  # noqa: ASYNC110 - a bench polls the file at 10 Hz
            isinstance(rt.outcome(e), ExecutionOutcome.Completed) for e in naps_of
        ):
            await asyncio.sleep(0.1)
        stop.set()
        await server
        late = []
        for exec_id in naps_of:
            history = rt.load_history(exec_id)
            # A timer counts from the drive that armed it (TimerStarted names
            # its fire_at), not from the run's start: the first drive of 100
            # runs started together comes some milliseconds after the start.
            armed = next(e for e in history if e.type == "TimerStarted")
            fired = next(e for e in history if e.type == "TimerFired")
            due = datetime.fromisoformat(armed.attrs["fire_at"])
            late.append((fired.at - due).total_seconds())
    return late


def timer_lateness(folder: Path) -> list[float]:
    """Seconds between each timer's due time and the decision that fired it."""
    return asyncio.run(_timer_lateness(folder / "timers.db"))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def run() -> list[tuple[str, str]]:
    """Every serving benchmark, as (name, result) rows."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cpu = idle_cpu(folder)
        signals = sorted(signal_to_completion(folder))
        late = sorted(timer_lateness(folder))
    p50 = statistics.median(signals)
    p99 = late[int(0.99 * (len(late) - 1))]
    return [
        (
            f"idle serving process (21 parked runs, one 1 h timer) over {IDLE_SECONDS:.0f} s",
            f"{cpu:.2f}% of a core (target < 1%)",
        ),
        (
            f"client send_signal -> client sees the run completed, {SIGNALS} runs, "
            "default poll 20 ms",
            f"p50 {_ms(p50)}, p90 {_ms(signals[int(0.9 * (len(signals) - 1))])} "
            "(target p50 <= 30 ms)",
        ),
        (
            f"timer lateness, {TIMERS} timers of 2-5 s in one serving process (all armed before the first is due)",
            f"p50 {_ms(statistics.median(late))}, p99 {_ms(p99)}, max {_ms(late[-1])} "
            "(target p99 <= 20 ms)",
        ),
    ]


def main() -> Any:
    """Print the rows (``python -m bench.serve_bench``)."""
    for name, result in run():
        print(f"{name}: {result}")


if __name__ == "__main__":
    main()
