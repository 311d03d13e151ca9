"""Postgres faults under real worker processes: a restarted server, a connection ended mid-decision.

The workers keep serving through both: a lost connection rolls back what
it was writing, the worker logs a warning, reconnects with backoff and
carries on; no history loses or repeats an event, and no committed event
changes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from harvest_engine import PostgresReader, PostgresRuntime
from tests.pg_server import PostgresServer, postgres_bin

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Iterator
    from pathlib import Path

    from tests.e2e.conftest import Workers

# Generous: pytest-timeout's default (120 s) is shorter than the waits on a loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

LEASE = "2"
# Generous: a loaded 2-core machine restarts a server and three workers slowly.
DEADLINE = 120.0
EXPECTED_TYPES = ["WorkflowStarted"] + ["ActivityScheduled", "ActivityCompleted"] * 3
EXPECTED_TYPES.append("WorkflowCompleted")


def sql(dsn: str, text: str, *args: Any) -> list[Any]:
    with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
        cursor = conn.execute(text, args or None)
        return cursor.fetchall() if cursor.description else []


def completed(dsn: str) -> int:
    rows = sql(dsn, "SELECT COUNT(*) FROM harvest_executions WHERE state = 'COMPLETED'")
    return int(rows[0][0])


def activities_done(dsn: str) -> int:
    rows = sql(
        dsn, "SELECT COUNT(*) FROM harvest_events WHERE type = 'ActivityCompleted'"
    )
    return int(rows[0][0])


def histories(dsn: str) -> dict[str, list[tuple[int, str, str]]]:
    """Every run's committed events: (seq, type, attributes as JSON)."""
    found: dict[str, list[tuple[int, str, str]]] = {}
    with PostgresReader.connect(dsn) as reader:
        for (exec_id,) in sql(dsn, "SELECT exec_id FROM harvest_executions"):
            found[exec_id] = [
                (e.seq, e.type, json.dumps(e.attrs, sort_keys=True))
                for e in reader.load_history(exec_id)
            ]
    return found


def start_runs(dsn: str, workers: Workers, count: int) -> list[str]:
    module = workers.load("pg_fault_worker")
    with PostgresRuntime.connect(dsn) as rt:
        rt.register_workflow(module.three_steps)
        return [str(rt.start_workflow("three_steps", n)) for n in range(count)]


def stop_workers(
    dsn: str, workers: Workers, procs: list[subprocess.Popen[str]]
) -> None:
    """Every worker is still serving; ask them to stop and check they end cleanly."""
    for proc in procs:
        assert proc.poll() is None, f"a worker died: {proc.communicate()}"
    sql(dsn, "CREATE TABLE harvest_test_stop (x INTEGER)")
    for proc in procs:
        done = workers.finish(proc)
        assert done.returncode == 0, done.stderr


def assert_each_run_once(dsn: str, exec_ids: list[str]) -> None:
    """Each run completed with its output; each activity scheduled and completed once."""
    with PostgresReader.connect(dsn) as reader:
        for n, exec_id in enumerate(exec_ids):
            assert reader.describe(exec_id).output.value == n + 3
            history = reader.load_history(exec_id)
            assert [e.type for e in history] == EXPECTED_TYPES
            assert [e.seq for e in history] == list(range(1, len(history) + 1))
            done = [
                a for a in reader.activity_attempts(exec_id) if a.outcome == "COMPLETED"
            ]
            assert len(done) == 3, done


def assert_unchanged(
    before: dict[str, list[tuple[int, str, str]]],
    after: dict[str, list[tuple[int, str, str]]],
) -> None:
    """Every event committed before is still there, the same, at the same place."""
    for exec_id, events in before.items():
        assert after[exec_id][: len(events)] == events, exec_id


def log_text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def wait_for_all_done(
    dsn: str, workers: Workers, runs: int, logs: list[Path], proc: Any = None
) -> None:
    """Wait for every run to complete; on a timeout, fail showing what was left and why."""
    try:
        workers.wait_for(
            lambda: completed(dsn) == runs, f"{runs} runs to complete", proc, DEADLINE
        )
    except pytest.fail.Exception as exc:
        left = sql(
            dsn,
            "SELECT t.exec_id, t.status, t.worker_id, t.attempt, "
            "t.lease_expires_at - clock_timestamp() FROM harvest_tasks t",
        )
        runs_left = sql(
            dsn,
            "SELECT exec_id, state, needs_decision FROM harvest_executions "
            "WHERE state != 'COMPLETED'",
        )
        tails = {p.name: log_text(p)[-3000:] for p in logs}
        pytest.fail(f"{exc}\nruns left: {runs_left}\ntasks: {left}\nlogs: {tails}")


def assert_clean_logs(logs: list[Path]) -> None:
    for path in logs:
        text = log_text(path)
        assert " ERROR " not in text, text
        assert "Traceback" not in text, text


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A server of this test alone: it is stopped and started mid-test."""
    bindir = postgres_bin()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (make system-deps installs it)")
    server = PostgresServer(bindir)
    yield server
    server.stop()


def test_postgres_restarted_under_load_workers_resume_and_no_history_loses_or_repeats_an_event(
    own_server: PostgresServer, workers: Workers, tmp_path: Path
) -> None:
    runs = 45
    dsn = own_server.create_database()
    exec_ids = start_runs(dsn, workers, runs)
    logs = [tmp_path / f"w{i}.log" for i in range(3)]
    procs = [
        workers.spawn(
            "pg_fault_worker",
            dsn,
            f"w{i}",
            logs[i],
            "--lease",
            LEASE,
            "--step-delay",
            # Slow enough that the halt lands before the runs end: they run side
            # by side, so the first and the last complete moments apart.
            "0.2",
        )
        for i in range(3)
    ]
    for proc in procs:  # each worker has connected before the server goes
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    workers.wait_for(
        lambda: activities_done(dsn) >= 3,
        "the first steps to complete",
        timeout=DEADLINE,
    )
    before = histories(dsn)
    at_halt = completed(dsn)

    own_server.halt("fast")  # every connection ends; the folder and socket stay
    try:
        workers.wait_for(
            lambda: all("retrying with backoff" in log_text(p) for p in logs),
            "every worker to notice the server is gone",
            timeout=DEADLINE,
        )
    except pytest.fail.Exception as exc:
        pytest.fail(f"{exc}: { ({p.name: log_text(p)[-2000:] for p in logs}) }")
    for proc in procs:
        assert proc.poll() is None, "a worker died while the server was away"
    own_server.start()

    wait_for_all_done(dsn, workers, runs, logs)
    stop_workers(dsn, workers, procs)

    assert at_halt < runs  # the restart landed under load
    assert_unchanged(before, histories(dsn))
    assert_each_run_once(dsn, exec_ids)
    assert_clean_logs(logs)


def idle_in_transaction(dsn: str) -> list[int]:
    """Backends of this database holding a transaction open.

    A worker's write transaction runs in pipeline mode, whose statements end
    in no Sync until the commit: its backend then reads 'active', not 'idle
    in transaction', while the worker runs workflow code.
    """
    return [
        int(pid)
        for (pid,) in sql(
            dsn,
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND xact_start IS NOT NULL AND state IN ('idle in transaction', 'active') "
            "AND pid != pg_backend_pid()",
        )
    ]


def terminate(dsn: str, pids: list[int] | None = None) -> int:
    """End these backends (default: every other one of this database); how many ended."""
    where = "pid = ANY(%s)" if pids is not None else "pid != pg_backend_pid()"
    args = (pids,) if pids is not None else ()
    rows = sql(
        dsn,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        f"WHERE datname = current_database() AND {where}",
        *args,
    )
    return sum(1 for (ok,) in rows if ok)


def test_a_connection_ended_mid_decision_and_mid_activity_rolls_back_reconnects_and_completes_once(
    pg_dsn: str, workers: Workers, tmp_path: Path
) -> None:
    gates = tmp_path / "gates"
    gates.mkdir()
    log = tmp_path / "worker.log"
    (exec_id,) = start_runs(pg_dsn, workers, 1)
    proc = workers.spawn(
        "pg_fault_worker", pg_dsn, "w0", log, "--lease", LEASE, "--gates", gates
    )

    # Mid-decision: the body blocks inside the decision's open transaction.
    workers.wait_for(lambda: (gates / "deciding").exists(), "the first decision", proc)
    workers.wait_for(
        lambda: len(idle_in_transaction(pg_dsn)) == 1,
        "the decision's transaction to be open",
        proc,
    )
    assert terminate(pg_dsn, idle_in_transaction(pg_dsn)) == 1
    (gates / "decide.go").write_text("go")
    # Rolled back: the worker reconnects and decides again (the body runs
    # again from its history), then claims the first step.
    workers.wait_for(lambda: (gates / "running").exists(), "the first activity", proc)
    assert "retrying with backoff" in log_text(log)
    assert len((gates / "decisions").read_text().split()) >= 2
    with PostgresReader.connect(pg_dsn) as reader:
        assert [e.type for e in reader.load_history(exec_id)] == [
            "WorkflowStarted",
            "ActivityScheduled",
        ]

    # Mid-activity: every connection of the worker ends while the body runs.
    assert terminate(pg_dsn) >= 1
    (gates / "run.go").write_text("go")
    wait_for_all_done(pg_dsn, workers, 1, [log], proc)
    stop_workers(pg_dsn, workers, [proc])

    assert_each_run_once(pg_dsn, [exec_id])
    assert_clean_logs([log])
