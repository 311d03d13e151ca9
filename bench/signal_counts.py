"""What one client signal round trip costs each side: `python -m bench.signal_counts [ROUNDS]`.

The round trip of progress_bench (a client here `send_signal`s a parked run
and awaits its result; the serving process is a subprocess,
bench/signal_counts_child.py) is run ROUNDS times, and per round trip it
prints, for SQLite and for Postgres: the Python calls of the server and of
the client (cProfile), their CPU, and on Postgres the statements each side
sent (the server's log_statement, by backend). Each figure is the
difference of a run of ROUNDS + 10 and one of 10 round trips, so start-up
and shut-down cancel out. The counts barely move with the machine's load,
unlike the timings: compare them before and after a change
(bench/RESULTS.md, "The signal round trip cut down"); with PYTHONPATH set,
both sides run the harvest found there (another checkout's, say).
"""

from __future__ import annotations

import asyncio
import collections
import cProfile
import os
import pstats
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.pg_bench import DURABLE
from harvest_engine import HarvestClient, PostgresRuntime, SqliteRuntime
from tests.pg_server import PostgresServer, postgres_bin

HERE = Path(__file__).parent
CHILD = HERE / "signal_counts_child.py"
BASE = 10
LOGGED = " -c log_statement=all -c log_line_prefix='%a|'"
MARK = "SELECT 'harvest signal_counts mark'"


def _calls(profiler: cProfile.Profile | None, path: str | None = None) -> int:
    if path is not None:
        return int(pstats.Stats(path).total_calls)  # type: ignore[attr-defined]
    return int(pstats.Stats(profiler).total_calls) if profiler else 0  # type: ignore[attr-defined]


async def _trips(
    target: str, rounds: int, child: subprocess.Popen[str]
) -> tuple[int, float]:
    """Start `rounds` parked runs, then signal each and await its result, counted."""
    assert child.stdin is not None
    assert child.stdout is not None
    pg = "://" in target
    with HarvestClient.connect(target) if pg else HarvestClient.open(target) as client:
        runs = [await client.start_workflow("waits_for_go") for _ in range(rounds)]
        await asyncio.sleep(1.0)  # every first decision done: the server is idle
        if pg:
            _mark(target)
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "counting"
        profiler = cProfile.Profile()
        cpu = time.process_time()
        profiler.enable()
        for i, exec_id in enumerate(runs):
            await client.send_signal(exec_id, "go", i)
            await client.result(exec_id, timeout="30s")
        profiler.disable()
        cpu = time.process_time() - cpu
        if pg:
            _mark(target)
    return _calls(profiler), cpu


def _mark(dsn: str) -> None:
    import psycopg  # noqa: PLC0415 - Postgres only

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(MARK)


def _one(target: str, rounds: int, folder: str) -> tuple[int, float, int, float]:
    """(client calls, client CPU, server calls, server CPU) of one serving child."""
    out = os.path.join(folder, f"server-{rounds}.prof")
    child = subprocess.Popen(
        [sys.executable, str(CHILD), target, out],
        env={
            "PYTHONPATH": str(HERE.parent),  # unless set: then the code under test
            **os.environ,
            "PGAPPNAME": "server",
        },
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    try:
        calls, cpu = asyncio.run(_trips(target, rounds, child))
    finally:
        child.send_signal(signal.SIGTERM)
        said, _ = child.communicate(timeout=60)
    server_cpu = float(said.split()[-1])
    return calls, cpu, _calls(None, out), server_cpu


def _per_trip(target: str, rounds: int, folder: str) -> dict[str, float]:
    small = _one(target, BASE, folder)
    large = _one(target, BASE + rounds, folder)
    names = ("client calls", "client CPU ms", "server calls", "server CPU ms")
    scale = (1, 1000, 1, 1000)
    return {
        name: (b - a) * k / rounds
        for name, a, b, k in zip(names, small, large, scale, strict=True)
    }


def _statements(log: str, rounds: int) -> dict[str, float]:
    """Statements per round trip by side (libpq's application name), between the last marks."""
    lines = log.splitlines()
    marks = [i for i, line in enumerate(lines) if "signal_counts mark" in line]
    sides: collections.Counter[str] = collections.Counter()
    for line in lines[marks[-2] + 1 : marks[-1]]:
        found = re.match(r"(\w*)\|LOG:\s+(?:statement|execute [^:]*): ", line)
        if found:
            sides[found.group(1)] += 1
    return {
        "server statements": sides["server"] / rounds,
        "client statements": sides["client"] / rounds,
    }


def main() -> None:
    """Print the per-round-trip counts of both stores."""
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "signals.db")
        SqliteRuntime.open(path).close()
        for name, value in _per_trip(path, rounds, folder).items():
            print(f"SQLite {name} per round trip: {value:.1f}", flush=True)
        bindir = postgres_bin()
        if bindir is None:
            print("Postgres: skipped (not installed)")
            return
        server = PostgresServer(bindir, options=DURABLE + LOGGED)
        os.environ["PGAPPNAME"] = "client"  # this process's connections, in the log
        try:
            dsn = server.create_database()
            PostgresRuntime.connect(dsn).close()
            counts = _per_trip(dsn, rounds, folder)
            log = (server.root / "server.log").read_text(errors="replace")
        finally:
            server.stop()
        counts.update(_statements(log, BASE + rounds))
        for name, value in counts.items():
            print(f"Postgres {name} per round trip: {value:.1f}", flush=True)


if __name__ == "__main__":
    main()
