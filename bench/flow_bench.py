"""Flow control: harvest's queues beside DBOS's on the same workload, SQLite and Postgres.

    PEERS_PYTHON=.venv-peers/bin/python .venv/bin/python -m bench.flow_bench [RUNS] [REPS]

Workloads (RUNS defaults to 1,000), each engine in one process working its own queue,
timed from the first enqueue to the last run's end:
- `concurrency`: RUNS workflows of three sequential steps (x + 1) on a queue of
  concurrency 8, REPS times (default 3) for each engine, the two engines taking
  turns (harvest, DBOS, harvest, ...) so that a slow minute of this shared
  machine falls on both; the row gives each engine's median and the ratio of
  the medians, then every turn's pair;
- `rate`: RATE_RUNS such workflows on a queue limited to RATE per second (harvest
  spaces admissions evenly; DBOS's limiter counts a sliding window);
- `admission`: harvest alone, in process: a queue of concurrency 1 of one-step
  runs; the time from one run's end (its row's close) to the next run's first
  decision (its ActivityScheduled event), p50 and p90.
SQLite is a file in WAL mode with synchronous=FULL for both; Postgres is a
throwaway server (tests/pg_server.py) with fsync and synchronous_commit on,
a fresh database per figure. DBOS runs bench/dbos_queues.py in the peers
venv; without it the DBOS columns say so.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harvest_engine import (
    ActivityContext,
    PostgresRuntime,
    Queue,
    Rate,
    Runtime,
    SqliteRuntime,
    StartOptions,
    WorkflowContext,
    activity,
    workflow,
)
from tests.pg_server import PostgresServer, postgres_bin

HERE = Path(__file__).parent
DBOS_SCRIPT = HERE / "dbos_queues.py"
PEERS_PYTHON = Path(
    os.environ.get("PEERS_PYTHON", HERE.parent / ".venv-peers" / "bin" / "python")
)
RUNS = 1000
REPS = 3
CONCURRENCY = 8
RATE = 100
RATE_RUNS = 200
ADMISSIONS = 200
DURABLE = (
    "-c listen_addresses='' -c fsync=on -c synchronous_commit=on "
    "-c shared_buffers=64MB -c max_connections=200"
)


@activity
def inc(ctx: ActivityContext, x: int) -> int:
    """One step: x + 1."""
    return x + 1


@workflow
async def three_steps(ctx: WorkflowContext, x: int) -> int:
    """Three sequential steps."""
    for _ in range(3):
        x = await ctx.execute_activity(inc, x)
    return x


@workflow
async def one_step(ctx: WorkflowContext, x: int) -> int:
    """One step (the admission-latency run)."""
    return await ctx.execute_activity(inc, x)


def _open(target: str) -> Runtime:
    if target.startswith("postgresql://"):
        return PostgresRuntime.connect(target)
    return SqliteRuntime.open(target)


async def _serve_until_done(rt: Runtime, ids: list[Any]) -> None:
    stop = asyncio.Event()
    server = asyncio.create_task(rt.serve(stop, poll_interval="10ms"))
    last = ids[-1]  # admitted last: its end is (about) the end of the workload
    while True:  # the runs end in the server task beside this loop
        if rt.outcome(last).is_terminal and (
            rt.counts_by_state().get("COMPLETED", 0) >= len(ids)
        ):
            break
        await asyncio.sleep(0.01)
    stop.set()
    await server


def harvest_queue(target: str, runs: int, queue: Queue) -> dict[str, Any]:
    """RUNS three-step runs through `queue`; runs per second, first enqueue to last end."""
    with _open(target) as rt:
        rt.register_workflow(three_steps)
        rt.register_activity(inc)
        rt.register_queue(queue)
        began = time.perf_counter()
        ids = [
            rt.start_workflow_with_options(
                "three_steps", i, StartOptions(queue=queue.name)
            ).exec_id
            for i in range(runs)
        ]
        asyncio.run(_serve_until_done(rt, ids))
        wall = time.perf_counter() - began
        outputs = [rt.describe(i).output.value for i in ids]  # type: ignore[union-attr]
    if outputs != [i + 3 for i in range(runs)]:
        raise RuntimeError("harvest returned wrong results")
    return {"seconds": round(wall, 3), "runs_per_sec": round(runs / wall, 1)}


def admission_latency(target: str) -> dict[str, float]:
    """Ms from a run's end to the next queued run's first decision (concurrency 1)."""
    with _open(target) as rt:
        rt.register_workflow(one_step)
        rt.register_activity(inc)
        rt.register_queue(Queue("one", concurrency=1))
        ids = [
            rt.start_workflow_with_options(
                "one_step", i, StartOptions(queue="one")
            ).exec_id
            for i in range(ADMISSIONS)
        ]
        asyncio.run(_serve_until_done(rt, ids))
        spans = []
        for exec_id in ids:
            first = next(
                e.at for e in rt.load_history(exec_id) if e.type == "ActivityScheduled"
            )
            spans.append((first, rt.describe(exec_id).closed_at))
    spans.sort(key=lambda span: span[0])
    gaps = [
        (nxt[0] - prev[1]).total_seconds() * 1000
        for prev, nxt in itertools.pairwise(spans)
        if prev[1] is not None
    ]
    gaps.sort()
    return {
        "p50_ms": round(statistics.median(gaps), 3),
        "p90_ms": round(gaps[int(len(gaps) * 0.9)], 3),
    }


def dbos_queue(target: str, runs: int, *extra: str) -> dict[str, Any] | None:
    """The same workload on DBOS's queue (None when the peers venv is missing)."""
    if not PEERS_PYTHON.exists():
        return None
    done = subprocess.run(
        [str(PEERS_PYTHON), str(DBOS_SCRIPT), target, "--runs", str(runs), *extra],
        check=True,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _taking_turns(where: Any, runs: int, reps: int) -> str:
    """The concurrency row: REPS runs of each engine, alternating; medians and each pair."""
    ours: list[float] = []
    theirs: list[float] = []
    for rep in range(reps):
        queue = Queue("q8", concurrency=CONCURRENCY)
        ours.append(harvest_queue(where(f"h8_{rep}"), runs, queue)["runs_per_sec"])
        dbos = dbos_queue(where(f"d8_{rep}"), runs, "--concurrency", str(CONCURRENCY))
        if dbos is not None:
            theirs.append(dbos["runs_per_sec"])
    median = statistics.median(ours)
    if not theirs:
        return (
            f"harvest {median} runs/s (median of {reps}); DBOS: skipped (no peers venv)"
        )
    pairs = ", ".join(
        f"{h:.0f}/{d:.0f}=x{h / d:.1f}" for h, d in zip(ours, theirs, strict=True)
    )
    return (
        f"harvest {median} runs/s, DBOS {statistics.median(theirs)} runs/s "
        f"(medians of {reps}), x{median / statistics.median(theirs):.1f}; "
        f"turns: {pairs}"
    )


def run(runs: int = RUNS, reps: int = REPS) -> list[tuple[str, str]]:
    """The rows of RESULTS.md's flow-control section."""
    rows: list[tuple[str, str]] = []
    bindir = postgres_bin()
    server = None if bindir is None else PostgresServer(bindir, options=DURABLE)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            stores: list[tuple[str, Any]] = [
                ("SQLite", lambda name: str(Path(tmp) / f"{name}.db"))
            ]
            if server is not None:
                stores.append(("Postgres", lambda _name: server.fresh_database()))
            for store, where in stores:
                rows.append(
                    (
                        f"{store}: {runs} enqueued 3-step runs, queue concurrency "
                        f"{CONCURRENCY}",
                        _taking_turns(where, runs, reps),
                    )
                )
                ours = harvest_queue(
                    where("hr"), RATE_RUNS, Queue("qr", rate=Rate(RATE, "1s"))
                )
                theirs = dbos_queue(where("dr"), RATE_RUNS, "--rate", f"{RATE}/1")
                rows.append(
                    (
                        f"{store}: {RATE_RUNS} runs on a queue of rate {RATE}/s "
                        f"(floor {(RATE_RUNS - 1) / RATE:.2f} s evenly spaced)",
                        f"harvest {ours['seconds']} s; "
                        + (
                            "DBOS skipped"
                            if theirs is None
                            else f"DBOS {theirs['seconds']} s (sliding window)"
                        ),
                    )
                )
                latency = admission_latency(where("ha"))
                rows.append(
                    (
                        f"{store}: in-process admission when a slot frees "
                        f"(concurrency 1, {ADMISSIONS} runs)",
                        f"p50 {latency['p50_ms']} ms, p90 {latency['p90_ms']} ms",
                    )
                )
    finally:
        if server is not None:
            server.stop()
    return rows


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else RUNS
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else REPS
    load = os.getloadavg()[0]
    for name, result in run(runs, reps):
        print(f"| {name} | {result} |", flush=True)
    print(f"load average {load:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
