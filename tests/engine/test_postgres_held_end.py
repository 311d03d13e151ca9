"""A run's last held writes and its end, sent as one statement on Postgres (store/postgres/deferred.py).

The statement does what the run's own append and SEAL did apart: the
completed task and the run's other tasks, its timers and unkeyed signals
go, keyed signals stay delivered, the runs watching it are flagged, and a
guard that fails still fails the transaction with nothing written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import psycopg
import pytest

from harvest_engine.errors import HarvestInternalError
from tests.engine.parked_postgres import AT, new_task, open_parked, store_of
from tests.engine.test_postgres_held_batch import statements_sent
from tests.engine.test_postgres_held_writes import attempt, count, event

if TYPE_CHECKING:
    from collections.abc import Iterator

    from harvest_engine import PostgresRuntime


@pytest.fixture
def rt(pg_dsn: str) -> Iterator[PostgresRuntime]:
    with open_parked(pg_dsn) as runtime:
        yield runtime


def _one(dsn: str, sql: str, *args: object) -> tuple[object, ...]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(sql, args).fetchone()
    assert row is not None
    return tuple(row)


def _a_run_with_work(rt: PostgresRuntime) -> tuple[str, str, int]:
    """A run with a claimed task, another task, a timer, two signals and a watcher."""
    exec_id, watcher = (
        str(rt.start_workflow("parked")),
        str(rt.start_workflow("parked")),
    )
    store = store_of(rt)
    with store.write() as txn:
        task = txn.add_claimed_task(new_task(exec_id, 1), AT)
        txn.add_task(new_task(exec_id, 2))
        txn.add_timer(exec_id, "t", AT)
        txn.stage_signal(exec_id, "plain", '"a"', None, AT)
        txn.stage_signal(exec_id, "keyed", '"b"', "k1", AT)
        assert txn.watch_runs(watcher, [exec_id])
        txn.update_execution(watcher, needs_decision=0)
        txn.update_execution(exec_id, needs_decision=0)
    return exec_id, watcher, task.id


def test_a_runs_last_completion_and_its_end_are_one_statement(
    rt: PostgresRuntime, pg_dsn: str
) -> None:
    exec_id, watcher, task_id = _a_run_with_work(rt)
    store = store_of(rt)
    with store.write() as txn:
        txn.lock_runs([exec_id], task_ids=[task_id])
        assert txn.delete_task(task_id)
        txn.record_attempt(attempt(exec_id, 1))
        txn.append_events(exec_id, [event(2, "Completed")], needs_decision=1)
        txn.append_events(exec_id, [event(3, "WorkflowCompleted")], needs_decision=0)
        txn.seal(exec_id, "COMPLETED", closed_at=AT, output='"done"')
        with statements_sent() as sent:  # kept cursors' statements too
            txn.memory.flush(store.connection)
    assert len(sent) == 1, sent  # the append, the attempt, the task and the end
    assert [e.type for e in rt.load_history(exec_id)] == [
        "WorkflowStarted",
        "Completed",
        "WorkflowCompleted",
    ]
    assert _one(
        pg_dsn,
        "SELECT state, output, needs_decision FROM harvest_executions WHERE exec_id = %s",
        exec_id,
    ) == ("COMPLETED", '"done"', 0)
    assert count(pg_dsn, "harvest_tasks") == 0
    assert count(pg_dsn, "harvest_timers") == 0
    assert count(pg_dsn, "harvest_activity_attempts") == 1
    assert _one(pg_dsn, "SELECT count(*), min(delivered) FROM harvest_signals") == (
        1,
        1,
    )
    assert count(pg_dsn, "harvest_run_watchers") == 0
    assert _one(
        pg_dsn,
        "SELECT needs_decision FROM harvest_executions WHERE exec_id = %s",
        watcher,
    ) == (1,)


def test_a_held_end_whose_task_was_gone_fails_with_nothing_written(
    rt: PostgresRuntime, pg_dsn: str
) -> None:
    exec_id, _, task_id = _a_run_with_work(rt)
    store = store_of(rt)

    def end_a_run_whose_task_went() -> None:
        with store.write() as txn:
            txn.lock_runs([exec_id], task_ids=[task_id])
            store.connection.execute(  # behind the transaction's back
                "DELETE FROM harvest_tasks WHERE id = %s", (task_id,)
            )
            assert txn.delete_task(task_id)
            txn.record_attempt(attempt(exec_id, 1))
            txn.append_events(exec_id, [event(2, "Completed")], needs_decision=0)
            txn.seal(exec_id, "COMPLETED", closed_at=AT, output='"done"')

    with pytest.raises(HarvestInternalError, match="were gone"):
        end_a_run_whose_task_went()
    assert [e.type for e in rt.load_history(exec_id)] == ["WorkflowStarted"]
    assert _one(
        pg_dsn, "SELECT state FROM harvest_executions WHERE exec_id = %s", exec_id
    ) == ("RUNNING",)
    assert count(pg_dsn, "harvest_tasks") == 2
    assert count(pg_dsn, "harvest_timers") == 1
