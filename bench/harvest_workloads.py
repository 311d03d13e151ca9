"""The peers' workloads on harvest, one per process: `python -m bench.harvest_workloads NAME N`.

Each call opens a fresh file (WAL, synchronous=FULL) in a temporary folder,
runs one workload and prints one JSON line, so `peers_bench` can run it
under strace (fdatasync counts) and read a clean RSS. The workloads mirror
`shared/peers/bench_dbos.py`: 3 sequential activities returning x+1, a run
of K activities, a run parked on a signal.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.sql_floor import sql_floor_long_history, sql_floor_signal
from harvest_engine import (
    ActivityContext,
    ExecutionOutcome,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowReplayer,
    activity,
    workflow,
)


@activity
async def inc(ctx: ActivityContext, x: int) -> int:
    return x + 1


@workflow
async def three_steps(ctx: WorkflowContext, x: int) -> int:
    for _ in range(3):
        x = await ctx.execute_activity(inc, x)
    return x


@workflow
async def k_steps(ctx: WorkflowContext, k: int) -> int:
    x = 0
    for _ in range(k):
        x = await ctx.execute_activity(inc, x)
    return x


@workflow
async def wait_signal(ctx: WorkflowContext, _input: Any) -> int:
    return int(await ctx.wait_for_signal("go"))


def _open(folder: str, *, intercept: bool = False) -> SqliteRuntime:
    """The bench file's runtime; `intercept` installs pass-through hooks on every call."""
    if intercept:
        from bench.interceptors_bench import PassThrough  # noqa: PLC0415

        rt = SqliteRuntime.open(Path(folder) / "bench.db", interceptors=[PassThrough()])
    else:
        rt = SqliteRuntime.open(Path(folder) / "bench.db")
    for wf in (three_steps, k_steps, wait_signal):
        rt.register_workflow(wf)
    rt.register_activity(inc)
    return rt


async def throughput(rt: SqliteRuntime, n: int) -> dict[str, Any]:
    """N runs started, then driven together (run_until_idle); runs per second end to end."""
    started = time.perf_counter()
    ids = [rt.start_workflow("three_steps", i) for i in range(n)]
    await rt.run_until_idle()
    seconds = time.perf_counter() - started
    done = sum(1 for e in ids if isinstance(rt.outcome(e), ExecutionOutcome.Completed))
    if done != n:
        raise SystemExit(f"throughput: {done} of {n} runs completed")
    return {"runs": n, "seconds": seconds, "runs_per_sec": n / seconds}


async def latency(rt: SqliteRuntime, reps: int) -> dict[str, Any]:
    """One run started and driven alone to Completed, `reps` times; the median."""
    ms = []
    for i in range(reps):
        started = time.perf_counter()
        state = await rt.run_until_blocked(rt.start_workflow("three_steps", i))
        ms.append((time.perf_counter() - started) * 1000)
        if not isinstance(state, RunState.Completed):
            raise SystemExit(f"latency: {state}")
    return {"reps": reps, "median_ms": statistics.median(ms)}


async def long_history(rt: SqliteRuntime, k: int) -> dict[str, Any]:
    """One run of K sequential activities; ms per activity, and a full replay of it."""
    started = time.perf_counter()
    exec_id = rt.start_workflow("k_steps", k)
    state = await rt.run_until_blocked(exec_id)
    seconds = time.perf_counter() - started
    if not isinstance(state, RunState.Completed):
        raise SystemExit(f"long_history: {state}")
    history = rt.load_history(exec_id)
    replayer = WorkflowReplayer([k_steps])
    replays = []
    for _ in range(3):
        began = time.perf_counter()
        replayer.replay(history)
        replays.append(time.perf_counter() - began)
    return {
        "k": k,
        "seconds": seconds,
        "ms_per_activity": seconds / k * 1000,
        "events": len(history),
        "replay_seconds": min(replays),
    }


async def signal(rt: SqliteRuntime, reps: int) -> dict[str, Any]:
    """A parked run; send_signal + run_until_blocked to Completed, in-process; the median."""
    ms = []
    for i in range(reps):
        exec_id = rt.start_workflow("wait_signal", None)
        await rt.run_until_blocked(exec_id)
        started = time.perf_counter()
        rt.send_signal(exec_id, "go", i)
        state = await rt.run_until_blocked(exec_id)
        ms.append((time.perf_counter() - started) * 1000)
        if not isinstance(state, RunState.Completed):
            raise SystemExit(f"signal: {state}")
    return {"reps": reps, "median_ms": statistics.median(ms)}


async def suspended(rt: SqliteRuntime, n: int) -> dict[str, Any]:
    """N runs parked on a signal in one process; its RSS and the cache's size."""
    for _ in range(n):
        rt.start_workflow("wait_signal", None)
    await rt.run_until_idle()
    parked = rt.counts_by_state().get("RUNNING", 0)
    return {
        "runs": n,
        "parked": parked,
        "rss_mb": _rss_mb(),
        "cached": len(rt.cache),
        "capacity": rt.cache.capacity,
    }


async def starts(rt: SqliteRuntime, n: int) -> dict[str, Any]:
    """N starts and no drive: what `latency`'s fdatasync count subtracts to leave the drives."""
    for i in range(n):
        rt.start_workflow("three_steps", i)
    return {"runs": n}


async def commit_floor(rt: SqliteRuntime, n: int) -> dict[str, Any]:
    """Bare one-row commits on a file like harvest's: the disk's floor per commit.

    Every row of the targets that needs a commit per step (a run driven
    alone, a long history, a signal) is bounded below by this figure:
    `ms_per_commit` on a fresh file (the WAL grows), `warm_ms_per_commit`
    once the WAL has wrapped (commits overwrite it in place).
    """
    del rt
    with tempfile.TemporaryDirectory(prefix="harvest-floor-") as folder:
        conn = sqlite3.connect(Path(folder) / "floor.db", isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("CREATE TABLE t (n INTEGER)")
            fresh = _timed_commits(conn, n)
            _timed_commits(conn, 2_500)  # past the 1,000-page autocheckpoint
            warm = _timed_commits(conn, n)
        finally:
            conn.close()
    return {"commits": n, "ms_per_commit": fresh, "warm_ms_per_commit": warm}


async def raw_fdatasync(rt: SqliteRuntime, n: int) -> dict[str, Any]:
    """One 4 KiB write and fdatasync of a plain file, `n` times: the disk alone, no SQLite.

    What every durable commit waits for at least once; the issue's own
    measurement put it at about 30 us on the machine it was written on.
    """
    del rt
    page = b"h" * 4096
    with tempfile.TemporaryDirectory(prefix="harvest-fsync-") as folder:
        fd = os.open(Path(folder) / "sync.bin", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            os.write(fd, page * 16)
            os.fdatasync(fd)  # the blocks exist: later syncs rewrite them in place
            began = time.perf_counter()
            for _ in range(n):
                os.pwrite(fd, page, 0)
                os.fdatasync(fd)
            seconds = time.perf_counter() - began
        finally:
            os.close(fd)
    return {"syncs": n, "us_per_fdatasync": seconds / n * 1e6}


def _timed_commits(conn: sqlite3.Connection, n: int) -> float:
    """Milliseconds per commit of `n` one-row write transactions."""
    began = time.perf_counter()
    for i in range(n):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t VALUES (?)", (i,))
        conn.execute("COMMIT")
    return (time.perf_counter() - began) / n * 1000


async def nothing(rt: SqliteRuntime, n: int) -> dict[str, Any]:
    """Open and close only: the baseline an fdatasync count subtracts."""
    del rt
    return {"runs": n}


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


WORKLOADS = {
    "throughput": throughput,
    "latency": latency,
    "long_history": long_history,
    "signal": signal,
    "suspended": suspended,
    "starts": starts,
    "commit_floor": commit_floor,
    "raw_fdatasync": raw_fdatasync,
    "nothing": nothing,
    "sql_floor_long_history": sql_floor_long_history,
    "sql_floor_signal": sql_floor_signal,
}


async def warm_up(rt: SqliteRuntime, folder: str) -> int:
    """Run batches of runs until the WAL has wrapped once; how many runs that took.

    A fresh file's WAL grows with every commit, and each commit then also
    syncs the file's new size; once SQLite has checkpointed and started
    writing the WAL from its beginning again, a commit overwrites blocks
    already there, which is a long-lived process's steady state (about
    half the cost per commit on this machine's disk).
    """
    wal = Path(folder) / "bench.db-wal"
    runs, sizes = 0, list[int]()
    while len(sizes) < 3 or sizes[-1] != sizes[-3] or runs < 200:
        await throughput(rt, 100)
        runs += 100
        sizes.append(wal.stat().st_size if wal.exists() else 0)
        if runs >= 20_000:
            break
    return runs


def without_fsync(rt: SqliteRuntime) -> None:
    """Take the per-commit fdatasync out of this bench file (WAL + synchronous=NORMAL).

    A measuring device only, never a mode harvest runs in: the same code on
    the same machine with the disk's sync removed shows how much of a row
    is harvest's own work and how much is waiting for the disk.
    """
    rt.store.connection.execute("PRAGMA synchronous = NORMAL")


def main() -> None:
    """`NAME N [--warm] [--no-fsync] [--intercept]`: --warm runs it after `warm_up`.

    See `without_fsync`; --intercept installs pass-through interceptors (bench/interceptors_bench.py).
    """
    name, size = sys.argv[1], int(sys.argv[2])
    warm = "--warm" in sys.argv[3:]
    with tempfile.TemporaryDirectory(prefix="harvest-bench-") as folder:
        rt = _open(folder, intercept="--intercept" in sys.argv[3:])
        if "--no-fsync" in sys.argv[3:]:
            without_fsync(rt)
        try:
            warmed = asyncio.run(warm_up(rt, folder)) if warm else 0
            result = asyncio.run(WORKLOADS[name](rt, size))
        finally:
            rt.close()
    extra = {"warm_up_runs": warmed} if warm else {}
    print(json.dumps({"workload": name, **result, **extra}), flush=True)


if __name__ == "__main__":
    main()
