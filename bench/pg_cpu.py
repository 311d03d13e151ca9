"""Where a 3-activity run's CPU goes on Postgres, 1 and 2 workers: `python -m bench.pg_cpu`.

For each worker count, a fresh database on the pg_bench server (durable
settings, pg_stat_statements on) gets 200 queued runs that `workers`
pg_worker.py processes serve, as pg_bench does. Printed per run: the
workers' CPU and the server's (every postgres process, read from /proc
between "go" and the last run completing), statements and commits, and the
contention signs of two workers: the decision locks (SKIP LOCKED) and the
rows they took, and how often a worker listed the runs needing a decision.
Counts barely move with the machine's load; the CPU figures move a little.

    python -m bench.pg_cpu [REPS]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import psycopg

from bench.pg_bench import DURABLE, RUNS, _go, _stop, _workers
from bench.pg_counts import STATS
from bench.pg_worker import register
from harvest_engine import PostgresReader, PostgresRuntime
from tests.pg_server import PostgresServer, postgres_bin

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()


def _cpu_of(pid: int, *, children: bool = False) -> float:
    """CPU seconds of a process (and of its reaped children)."""
    fields = _stat(pid)
    # After the name: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / TICK


def server_cpu(postmaster: int) -> float:
    """The whole server's CPU seconds so far: live backends and those that exited."""
    total = _cpu_of(postmaster, children=True)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = _stat(int(entry.name))
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[1]) == postmaster:
            total += (int(fields[11]) + int(fields[12])) / TICK
    return total


def measure(server: PostgresServer, workers: int) -> dict[str, float]:
    """One timed drain of RUNS queued runs by `workers` processes, per-run figures."""
    dsn = server.create_database()
    with PostgresRuntime.connect(dsn) as rt:
        register(rt)
        for i in range(RUNS):
            rt.start_workflow("three_steps", i)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    procs = _workers(dsn, workers)
    try:
        with (
            PostgresReader.connect(dsn) as reader,
            psycopg.connect(dsn, autocommit=True) as stats,
        ):
            stats.execute("SELECT pg_stat_statements_reset()")
            cpu0 = sum(_cpu_of(p.pid) for p in procs)
            srv0 = server_cpu(postmaster)
            began = time.perf_counter()
            _go(procs)
            while reader.counts_by_state().get("COMPLETED", 0) < RUNS:
                time.sleep(0.01)
            wall = time.perf_counter() - began
            cpu = sum(_cpu_of(p.pid) for p in procs) - cpu0
            srv = server_cpu(postmaster) - srv0
            rows = stats.execute(
                "SELECT calls, rows, query FROM pg_stat_statements "
                "WHERE query NOT LIKE %s AND query NOT LIKE %s",
                ("SELECT state, COUNT(*)%", "%pg_stat%"),
            ).fetchall()
    finally:
        _stop(procs)
    calls = sum(int(c) for c, _, _ in rows)
    commits = sum(int(c) for c, _, q in rows if q == "COMMIT")
    locks = [
        (int(c), int(r))
        for c, r, q in rows
        if "SKIP LOCKED" in q and "harvest_executions" in q
    ]
    return {
        "runs/s": RUNS / wall,
        "worker ms/run": cpu / RUNS * 1000,
        "server ms/run": srv / RUNS * 1000,
        "statements/run": calls / RUNS,
        "commits/run": commits / RUNS,
        "decision lock statements/run": sum(c for c, _ in locks) / RUNS,
        "rows they locked/run": sum(r for _, r in locks) / RUNS,
        "run listings/run": sum(
            int(c)
            for c, _, q in rows
            if q.startswith("SELECT exec_id FROM harvest_executions e")
        )
        / RUNS,
    }


def main() -> None:
    bindir = postgres_bin()
    if bindir is None:
        raise SystemExit("PostgreSQL is not installed")
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    server = PostgresServer(bindir, options=DURABLE + STATS)
    try:
        print(f"load average {os.getloadavg()[0]:.2f}")
        for _ in range(reps):
            for workers in (1, 2):
                got = measure(server, workers)
                shown = ", ".join(f"{k} {v:.2f}" for k, v in got.items())
                print(f"{workers} worker(s): {shown}", flush=True)
        print(f"load average {os.getloadavg()[0]:.2f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
