"""Postgres benchmarks: 3-activity runs/s with 1 and 2 worker processes beside DBOS, signal latency.

    .venv/bin/python -m bench pg_bench     (make bench sets PEERS_PYTHON)
    .venv/bin/python -m bench.pg_bench signal   # only the signal row, printed

A throwaway server (tests/pg_server.py, the tests' initdb + pg_ctl on a Unix
socket) started here with durable settings (fsync and synchronous_commit on,
unlike the tests'); each figure uses a fresh database on it. DBOS Transact
runs the same workload on the same server in the same run (bench/dbos_pg.py
with the peers venv: DBOS's Postgres system database, its own queue).
Throughput alternates harvest with 1 worker, with 2 workers and DBOS, REPS
times, and reports medians.
"""

from __future__ import annotations

import asyncio
import json
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
DBOS_SCRIPT = HERE / "dbos_pg.py"
PEERS_PYTHON = Path(
    os.environ.get("PEERS_PYTHON", HERE.parent / ".venv-peers" / "bin" / "python")
)
RUNS = 200
REPS = 3
# DBOS's queue poll (polling_interval_sec; DBOS's default is 1 s, which alone
# would cost a second of a 2-second run): 10 ms, as the peers bench's recv poll.
DBOS_POLL = 0.01
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


def dbos_throughput(server: PostgresServer) -> tuple[float, float] | None:
    """DBOS's runs/s and CPU (cores) on a fresh database of the same server; None without DBOS."""
    if not PEERS_PYTHON.exists():
        return None
    done = subprocess.run(
        [
            str(PEERS_PYTHON),
            str(DBOS_SCRIPT),
            server.create_database(),
            "--runs",
            str(RUNS),
            "--poll",
            str(DBOS_POLL),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    row = json.loads(done.stdout.strip().splitlines()[-1])
    return float(row["runs_per_sec"]), float(row["cpu_cores"])


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


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def run() -> list[tuple[str, str]]:
    """The rows of RESULTS.md's pg_bench section."""
    bindir = postgres_bin()
    if bindir is None:
        return [("Postgres benchmarks", "skipped: PostgreSQL is not installed")]
    server = PostgresServer(bindir, options=DURABLE)
    ones: list[tuple[float, float]] = []
    twos: list[tuple[float, float]] = []
    dbos: list[tuple[float, float]] = []
    try:
        load = os.getloadavg()[0]
        for _ in range(REPS):
            ones.append(throughput(server, 1))
            twos.append(throughput(server, 2))
            peer = dbos_throughput(server)
            if peer is not None:
                dbos.append(peer)
        signal_row = _signal_row(server)
        load_after = os.getloadavg()[0]
    finally:
        server.stop()
    one, one_cpu = _median([r for r, _ in ones]), _median([c for _, c in ones])
    two, two_cpu = _median([r for r, _ in twos]), _median([c for _, c in twos])
    where = f"load average {load:.1f} → {load_after:.1f} on {os.cpu_count()} cores"
    rows = [
        (
            f"{RUNS} runs of 3 activities, 1 PostgresRuntime worker process (fsync on; "
            f"median of {REPS})",
            f"{one:.1f} runs/s (each: {', '.join(f'{r:.0f}' for r, _ in ones)}), "
            f"worker CPU {one_cpu:.2f} cores ({where})",
        ),
        (
            f"{RUNS} runs of 3 activities, 2 PostgresRuntime worker processes",
            f"{two:.1f} runs/s = {two / one:.2f}x one worker (target >= 1.7x), "
            f"worker CPU {two_cpu:.2f} cores",
        ),
    ]
    if dbos:
        d_tput = _median([r for r, _ in dbos])
        d_cpu = _median([c for _, c in dbos])
        ratios = (one / d_tput, two / d_tput)
        verdicts = ["met" if r >= 3 else "NOT met" for r in ratios]
        rows.append(
            (
                f"DBOS {RUNS} runs of 3 steps on the same server, its Postgres system "
                f"database and its own queue (one process, queue poll {DBOS_POLL * 1000:.0f} ms; "
                "bench/dbos_pg.py)",
                f"DBOS {d_tput:.1f} runs/s (each: {', '.join(f'{r:.0f}' for r, _ in dbos)}), "
                f"CPU {d_cpu:.2f} cores; harvest 1 worker x{ratios[0]:.1f} "
                f"(target >= x3: {verdicts[0]}), 2 workers x{ratios[1]:.1f} "
                f"({verdicts[1]})",
            )
        )
    else:
        rows.append(
            (
                "DBOS on the same server",
                f"skipped: no {PEERS_PYTHON} (run `make bench`)",
            )
        )
    rows.append(signal_row)
    return rows


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
