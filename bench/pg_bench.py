"""Postgres benchmarks: 3-activity runs/s with 1 and 2 worker processes, client signal to completion.

    .venv/bin/python -m bench pg_bench
    .venv/bin/python -m bench.pg_bench signal   # only the signal row, printed

A throwaway server (tests/pg_server.py, the tests' initdb + pg_ctl on a Unix
socket) started here with durable settings (fsync and synchronous_commit on,
unlike the tests'); each figure uses a fresh database.
"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.pg_worker import register
from harvest_engine import (
    ExecutionOutcome,
    HarvestClient,
    PostgresReader,
    PostgresRuntime,
)
from tests.pg_server import PostgresServer, postgres_bin

HERE = Path(__file__).parent
WORKER = HERE / "pg_worker.py"
RUNS = 200
SIGNALS = 100
DURABLE = (
    "-c listen_addresses='' -c fsync=on -c synchronous_commit=on "
    "-c shared_buffers=64MB -c max_connections=200"
)


def _workers(dsn: str, n: int) -> list[subprocess.Popen[str]]:
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), dsn],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    for proc in procs:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError("a worker did not start")
    return procs


def _go(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()


def _stop(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        proc.communicate(timeout=60)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def throughput(server: PostgresServer, workers: int) -> tuple[float, float]:
    """Runs/s of three-activity runs by `workers` processes (all queued first), and their CPU.

    The second figure is the workers' CPU seconds (start-up included) per
    wall second of the timed part: near `workers` means they were CPU-bound.
    """
    dsn = server.create_database()
    with PostgresRuntime.connect(dsn) as rt:
        register(rt)
        for i in range(RUNS):
            rt.start_workflow("three_steps", i)
    cpu = _children_cpu()
    procs = _workers(dsn, workers)
    wall = 0.0
    try:
        with PostgresReader.connect(dsn) as reader:
            began = time.perf_counter()
            _go(procs)
            deadline = began + 600
            while reader.counts_by_state().get("COMPLETED", 0) < RUNS:
                if time.perf_counter() > deadline:
                    raise RuntimeError("the runs did not complete in 10 minutes")
                time.sleep(0.01)
            wall = time.perf_counter() - began
    finally:
        _stop(procs)
    return RUNS / wall, (_children_cpu() - cpu) / wall


async def _latencies(dsn: str) -> list[float]:
    latencies = []
    with HarvestClient.connect(dsn) as client:
        for i in range(SIGNALS):
            exec_id = await client.start_workflow("waits_for_go")
            began = time.perf_counter()
            await client.send_signal(exec_id, "go", i)
            outcome = await client.result(exec_id, timeout="30s")
            latencies.append(time.perf_counter() - began)
            assert outcome == ExecutionOutcome.Completed(output=i)
    return latencies


def signal_to_completion(server: PostgresServer) -> list[float]:
    """Seconds from a client's send_signal to the client seeing the run completed (1 worker)."""
    dsn = server.create_database()
    PostgresRuntime.connect(dsn).close()
    procs = _workers(dsn, 1)
    try:
        _go(procs)
        return asyncio.run(_latencies(dsn))
    finally:
        _stop(procs)


def run() -> list[tuple[str, str]]:
    """The rows of RESULTS.md's pg_bench section."""
    bindir = postgres_bin()
    if bindir is None:
        return [("Postgres benchmarks", "skipped: PostgreSQL is not installed")]
    server = PostgresServer(bindir, options=DURABLE)
    try:
        load = os.getloadavg()[0]
        one, one_cpu = throughput(server, 1)
        two, two_cpu = throughput(server, 2)
        signal_row = _signal_row(server)
        load_after = os.getloadavg()[0]
    finally:
        server.stop()
    where = f"load average {load:.1f} → {load_after:.1f} on {os.cpu_count()} cores"
    return [
        (
            f"{RUNS} runs of 3 activities, 1 PostgresRuntime worker process (fsync on)",
            f"{one:.1f} runs/s, worker CPU {one_cpu:.2f} cores ({where})",
        ),
        (
            f"{RUNS} runs of 3 activities, 2 PostgresRuntime worker processes",
            f"{two:.1f} runs/s = {two / one:.2f}x one worker (target >= 1.7x), "
            f"worker CPU {two_cpu:.2f} cores",
        ),
        signal_row,
    ]


def _signal_row(server: PostgresServer) -> tuple[str, str]:
    """The signal -> completion row (its own fresh database and worker)."""
    lat = sorted(signal_to_completion(server))
    p50 = statistics.median(lat) * 1000
    p90 = lat[int(len(lat) * 0.9)] * 1000
    return (
        f"client send_signal -> client sees the run completed, {SIGNALS} runs, "
        "1 worker, LISTEN/NOTIFY both ways",
        f"p50 {p50:.1f} ms, p90 {p90:.1f} ms (target p50 <= 10 ms)",
    )


def signal_only() -> None:
    """Print the signal row alone (a quick before/after on a busy machine)."""
    bindir = postgres_bin()
    if bindir is None:
        raise SystemExit("PostgreSQL is not installed")
    server = PostgresServer(bindir, options=DURABLE)
    try:
        load = os.getloadavg()[0]
        name, result = _signal_row(server)
        print(f"| {name} | {result}, load average {load:.1f} |", flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    if sys.argv[1:] != ["signal"]:
        raise SystemExit("usage: python -m bench.pg_bench signal")
    signal_only()
