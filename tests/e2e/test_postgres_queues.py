"""A queue's limits across three worker processes on Postgres, and after a kill -9.

Each run's one activity body records its start and end by the database's
clock; a queue of concurrency 2 must never have three bodies overlapping,
however many workers serve it, and a worker SIGKILLed mid-body must give
its slot back (its run goes on elsewhere once the lease expires): every run
completes, and no slot stays held or waiting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from harvest_engine import PostgresReader, PostgresRuntime, StartOptions

if TYPE_CHECKING:
    from datetime import datetime

    from tests.e2e.conftest import Workers

pytestmark = pytest.mark.slow

LEASE = 1.0


def sql(dsn: str, text: str, *args: Any) -> list[Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(text, args or None)
        return cursor.fetchall() if cursor.description else []


def enqueue(dsn: str, workers: Workers, count: int) -> list[str]:
    module = workers.load("pg_queue_worker")
    with PostgresRuntime.connect(dsn) as rt:  # the schema first: then the test's table
        sql(
            dsn,
            "CREATE TABLE IF NOT EXISTS test_intervals (id BIGSERIAL PRIMARY KEY, "
            "exec_id TEXT, worker TEXT, started TIMESTAMPTZ, ended TIMESTAMPTZ)",
        )
        rt.register_queue(module.POOL)
        rt.register_workflow(module.pooled)
        return [
            str(
                rt.start_workflow_with_options(
                    "pooled", n, StartOptions(queue="pool")
                ).exec_id
            )
            for n in range(count)
        ]


def completed(dsn: str) -> int:
    rows = sql(dsn, "SELECT COUNT(*) FROM harvest_executions WHERE state = 'COMPLETED'")
    return int(rows[0][0])


def most_overlapping(intervals: list[tuple[datetime, datetime]]) -> int:
    """The largest number of intervals open at one instant."""
    edges = sorted(
        [(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals],
        key=lambda edge: (edge[0], edge[1]),  # an end before a start at one instant
    )
    live = most = 0
    for _, step in edges:
        live += step
        most = max(most, live)
    return most


def stop(dsn: str, workers: Workers, procs: list[Any]) -> None:
    sql(dsn, "CREATE TABLE harvest_test_stop (x INTEGER)")
    for proc in procs:
        done = workers.finish(proc)
        assert done.returncode == 0, done.stderr


def no_slot_held(dsn: str) -> None:
    with PostgresReader.connect(dsn) as reader:
        [pool] = [q for q in reader.flow_reads().queue_infos() if q.name == "pool"]
    assert (pool.running, pool.waiting) == (0, 0)
    assert sql(
        dsn, "SELECT COUNT(*) FROM harvest_executions WHERE state <> 'COMPLETED'"
    ) == [(0,)]


def test_three_workers_never_run_more_than_the_queue_concurrency(
    pg_dsn: str, workers: Workers
) -> None:
    runs = 8
    enqueue(pg_dsn, workers, runs)
    procs = [workers.spawn("pg_queue_worker", pg_dsn, f"w{i}") for i in range(3)]
    workers.wait_for(lambda: completed(pg_dsn) == runs, f"{runs} runs to complete")
    stop(pg_dsn, workers, procs)
    intervals = sql(pg_dsn, "SELECT started, ended FROM test_intervals")
    assert len(intervals) == runs
    assert most_overlapping(intervals) == 2  # the limit, and used
    assert len({w for (w,) in sql(pg_dsn, "SELECT worker FROM test_intervals")}) >= 2
    no_slot_held(pg_dsn)


def test_a_worker_killed_holding_a_slot_gives_it_back_with_its_lease(
    pg_dsn: str, workers: Workers
) -> None:
    runs = 6
    enqueue(pg_dsn, workers, runs)
    procs = {
        f"w{i}": workers.spawn(
            "pg_queue_worker", pg_dsn, f"w{i}", "--lease", str(LEASE)
        )
        for i in range(3)
    }
    holder: list[Any] = []

    def a_body_in_flight() -> bool:
        holder[:] = sql(
            pg_dsn,
            "SELECT worker FROM test_intervals WHERE ended IS NULL LIMIT 1",
        )
        return bool(holder)

    workers.wait_for(a_body_in_flight, "a body to run")
    victim = holder[0][0]
    workers.sigkill(procs.pop(victim))
    killed_at = sql(pg_dsn, "SELECT clock_timestamp()")[0][0]
    workers.wait_for(lambda: completed(pg_dsn) == runs, f"{runs} runs to complete")
    stop(pg_dsn, workers, list(procs.values()))
    rows = sql(pg_dsn, "SELECT started, ended FROM test_intervals")
    cut = sum(ended is None for _, ended in rows)  # the victim's bodies, cut off
    intervals = [(started, ended or killed_at) for started, ended in rows]
    assert cut >= 1
    assert len(intervals) == runs + cut  # each cut-off body ran again elsewhere
    assert most_overlapping(intervals) <= 2
    no_slot_held(pg_dsn)
