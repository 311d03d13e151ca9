"""Several PostgresRuntime processes on one database: runs complete once, a dead worker's attempt is retaken."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from harvest_engine import (
    Overlap,
    PostgresReader,
    PostgresRuntime,
    Schedule,
    WorkflowSchedule,
)

if TYPE_CHECKING:
    from tests.e2e.conftest import Workers

pytestmark = pytest.mark.slow

RUNS = 24
LEASE = 1.0


def sql(dsn: str, text: str, *args: Any) -> list[Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(text, args or None)
        return cursor.fetchall() if cursor.description else []


def start_runs(dsn: str, workers: Workers, count: int) -> list[str]:
    module = workers.load("pg_worker")
    with PostgresRuntime.connect(dsn) as rt:
        rt.register_workflow(module.three_steps)
        return [str(rt.start_workflow("three_steps", n)) for n in range(count)]


def all_done(dsn: str, count: int) -> bool:
    rows = sql(dsn, "SELECT COUNT(*) FROM harvest_executions WHERE state = 'COMPLETED'")
    return int(rows[0][0]) == count


def stop_workers(dsn: str, workers: Workers, procs: list[Any]) -> None:
    sql(dsn, "CREATE TABLE harvest_test_stop (x INTEGER)")
    for proc in procs:
        done = workers.finish(proc)
        assert done.returncode == 0, done.stderr


def test_three_workers_complete_every_run_with_no_completion_recorded_twice(
    pg_dsn: str, workers: Workers
) -> None:
    exec_ids = start_runs(pg_dsn, workers, RUNS)
    procs = [workers.spawn("pg_worker", pg_dsn, f"w{i}") for i in range(3)]
    workers.wait_for(lambda: all_done(pg_dsn, RUNS), f"{RUNS} runs to complete")
    stop_workers(pg_dsn, workers, procs)

    with PostgresReader.connect(pg_dsn) as reader:
        for n, exec_id in enumerate(exec_ids):
            assert reader.describe(exec_id).output.value == n + 3
            types = [e.type for e in reader.load_history(exec_id)]
            assert types.count("ActivityCompleted") == 3
            assert types.count("ActivityScheduled") == 3
            assert types[-1] == "WorkflowCompleted"
    assert sql(pg_dsn, "SELECT COUNT(*) FROM harvest_tasks") == [(0,)]


def test_a_worker_killed_mid_activity_has_its_attempt_retaken_within_the_lease(
    pg_dsn: str, workers: Workers
) -> None:
    (exec_id,) = start_runs(pg_dsn, workers, 1)
    victim = workers.spawn(
        "pg_worker", pg_dsn, "victim", "--hang", "--lease", str(LEASE)
    )
    workers.wait_for(
        lambda: (
            sql(pg_dsn, "SELECT worker_id FROM harvest_tasks WHERE status = 'RUNNING'")
            == [("victim",)]
        ),
        "the victim to claim the first step",
        victim,
    )
    # Alive, the victim renews its lease: nobody else may take the attempt.
    rescuer = workers.spawn("pg_worker", pg_dsn, "rescuer", "--lease", str(LEASE))
    time.sleep(2 * LEASE)
    assert sql(pg_dsn, "SELECT worker_id FROM harvest_tasks") == [("victim",)]

    workers.sigkill(victim)
    killed_at = time.monotonic()
    workers.wait_for(lambda: all_done(pg_dsn, 1), "the rescuer to finish the run")
    reclaimed_within = time.monotonic() - killed_at
    stop_workers(pg_dsn, workers, [rescuer])

    assert reclaimed_within < 2 * LEASE + 5  # the lease, a renewal tick, load
    with PostgresReader.connect(pg_dsn) as reader:
        attempts = reader.activity_attempts(exec_id)
        assert [(a.attempt, a.outcome) for a in attempts] == [
            (1, "LOST"),
            (1, "COMPLETED"),
            (1, "COMPLETED"),
            (1, "COMPLETED"),
        ]
        assert attempts[0].error is not None
        assert "victim" in attempts[0].error.message
        types = [e.type for e in reader.load_history(exec_id)]
        assert types.count("ActivityCompleted") == 3
        assert reader.describe(exec_id).output.value == 3


def test_a_schedule_fires_each_slot_once_across_three_workers(
    pg_dsn: str, workers: Workers
) -> None:
    module = workers.load("pg_worker")
    with PostgresRuntime.connect(pg_dsn) as rt:
        rt.register_workflow(module.three_steps)
        rt.upsert_schedule(
            WorkflowSchedule(
                "three_steps",
                Schedule.every("1s"),
                input=0,
                overlap=Overlap.ALLOW_ALL,
                max_active_runs=100,
            )
        )
    procs = [workers.spawn("pg_worker", pg_dsn, f"w{i}") for i in range(3)]
    workers.wait_for(
        lambda: int(sql(pg_dsn, "SELECT COUNT(*) FROM harvest_executions")[0][0]) >= 3,
        "three slots to fire",
    )
    stop_workers(pg_dsn, workers, procs)

    slots = sql(
        pg_dsn,
        "SELECT workflow_id, COUNT(*) FROM harvest_executions GROUP BY workflow_id",
    )
    assert len(slots) >= 3
    assert all(count == 1 for _, count in slots), slots
