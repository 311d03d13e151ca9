"""Two real Postgres workers whose runs signal each other in a loop: no deadlock, no failed round.

A transaction waits for a run's row only in one fixed order (a record batch
locks its runs sorted by exec_id bytewise, claims take runs in that order);
a decision, which already holds its own run, takes any other run's row
without waiting (NOWAIT: it stands back and runs again). Before that, two
decisions each holding their run and waiting for the peer's made Postgres
break the cycle by failing one worker's whole round ("deadlock detected"),
which the serving loop logged and retried. Timing decides whether two
decisions meet, so this load (40 pairs, 40 pings each, two worker processes
deciding two runs per transaction) cannot force it: the engine before
commit 0bc2839 failed rounds that way in 5 of 8 tries, this one in none.
The in-process rendezvous tests (tests/engine/test_postgres_deadlocks.py)
force each cycle deterministically; this one is the same loop with real
processes, as users run it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import psycopg
import pytest

from harvest_engine import PostgresReader, PostgresRuntime
from tests.e2e.workers.pg_pingpong_worker import ping_pong

if TYPE_CHECKING:
    from conftest import Workers

    from tests.pg_server import PostgresServer

pytestmark = pytest.mark.slow

PAIRS = 40
ROUNDS = 40


def test_two_workers_whose_runs_ping_each_other_never_fail_a_round_on_a_deadlock(
    pg_server: PostgresServer, workers: Workers
) -> None:
    dsn = pg_server.create_database()
    try:
        PostgresRuntime.connect(dsn).close()  # the schema, before both workers race
        procs = [workers.spawn("pg_pingpong_worker", dsn, f"w{i}") for i in (1, 2)]
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        with PostgresRuntime.connect(dsn, worker_id="starter") as rt:
            rt.register_workflow(ping_pong)
            runs: list[str] = []
            for _ in range(PAIRS):
                a = str(rt.start_workflow("ping_pong", ROUNDS))
                b = str(rt.start_workflow("ping_pong", ROUNDS))
                rt.send_signal(a, "peer", b)
                rt.send_signal(b, "peer", a)
                runs += [a, b]
        deadline = time.monotonic() + 120
        with PostgresReader.connect(dsn) as reader:
            while time.monotonic() < deadline:
                states = [reader.describe(run).state for run in runs]
                if all(state == "COMPLETED" for state in states):
                    break
                time.sleep(0.2)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE harvest_test_stop ()")
        logs = [workers.finish(proc) for proc in procs]
    finally:
        pg_server.drop_database(dsn)
    for done in logs:
        assert done.returncode == 0, done.stderr
        assert "deadlock" not in done.stderr, done.stderr
        assert "failed in the serving loop" not in done.stderr, done.stderr
    assert states == ["COMPLETED"] * len(runs)
