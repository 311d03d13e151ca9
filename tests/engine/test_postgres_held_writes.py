"""Writes a Postgres transaction holds back and sends with a run's next ones (store/postgres/deferred.py).

A task's delete, an attempt's row and an append of `needs_decision` wait
for the transaction's next statement and travel in one statement per run:
these tests pin that the guards of the separate statements hold (a task
gone fails the transaction with nothing written) and that a joined write's
savepoint, itself sent only before the block's first statement, still
undoes the block alone: what was written before it travels before it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import psycopg
import pytest

from harvest_engine.errors import HarvestInternalError
from harvest_engine.events import HistoryEvent
from harvest_engine.store.rows import AttemptRecord
from tests.engine.parked_postgres import AT, new_task, open_parked, store_of

if TYPE_CHECKING:
    from collections.abc import Iterator

    from harvest_engine import PostgresRuntime


@pytest.fixture
def rt(pg_dsn: str) -> Iterator[PostgresRuntime]:
    with open_parked(pg_dsn) as runtime:
        yield runtime


def count(dsn: str, table: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608
    assert row is not None
    return int(row[0])


def event(seq: int, type_: str) -> HistoryEvent:
    return HistoryEvent(seq=seq, type=type_, at=AT, attrs={"seq": seq})


def attempt(exec_id: str, activity_id: int) -> AttemptRecord:
    return AttemptRecord(
        exec_id=exec_id,
        activity_id=activity_id,
        activity_name="shout",
        attempt=1,
        started_at=AT,
        ended_at=AT,
        outcome="COMPLETED",
        error=None,
    )


def test_a_failing_block_undoes_its_own_writes_and_keeps_those_held_before_it(
    rt: PostgresRuntime, pg_dsn: str
) -> None:
    exec_id = str(rt.start_workflow("parked"))
    store = store_of(rt)
    with store.write() as txn:
        (task,) = [txn.add_claimed_task(new_task(exec_id, 1), AT)]

    def decision_that_fails(*, sends: bool) -> None:
        with store.write() as inner:
            inner.append_events(exec_id, [event(3, "Undone")], needs_decision=0)
            if sends:
                # A statement sends the held writes: the completion's first,
                # then the block's savepoint, then the block's own.
                inner.add_timer(exec_id, "undone", AT)
            raise ValueError("workflow code failed")

    with store.write_together() as txn:
        txn.lock_runs([exec_id], task_ids=[task.id])
        assert txn.delete_task(task.id)  # held: the task was locked above
        txn.record_attempt(attempt(exec_id, 1))
        txn.append_events(exec_id, [event(2, "Completed")], needs_decision=1)
        for sends in (False, True):
            with pytest.raises(ValueError, match="workflow code"):
                decision_that_fails(sends=sends)
        txn.append_events(exec_id, [event(3, "Next")], needs_decision=0)
    assert [e.type for e in rt.load_history(exec_id)] == [
        "WorkflowStarted",
        "Completed",
        "Next",
    ]
    assert count(pg_dsn, "harvest_tasks") == 0
    assert count(pg_dsn, "harvest_activity_attempts") == 1
    assert count(pg_dsn, "harvest_timers") == 0


def test_a_held_delete_of_a_task_gone_meanwhile_fails_the_transaction_with_nothing_written(
    rt: PostgresRuntime, pg_dsn: str
) -> None:
    exec_id = str(rt.start_workflow("parked"))
    store = store_of(rt)
    with store.write() as txn:
        (task,) = [txn.add_claimed_task(new_task(exec_id, 1), AT)]

    def complete_a_task_gone_meanwhile() -> None:
        with store.write() as txn:
            txn.lock_runs([exec_id], task_ids=[task.id])
            # Behind the transaction's back (a bug's shape): the task goes.
            store.connection.execute(
                "DELETE FROM harvest_tasks WHERE id = %s", (task.id,)
            )
            assert txn.delete_task(task.id)
            txn.record_attempt(attempt(exec_id, 1))
            txn.append_events(exec_id, [event(2, "Completed")], needs_decision=1)

    with pytest.raises(HarvestInternalError, match="were gone"):
        complete_a_task_gone_meanwhile()
    assert [e.type for e in rt.load_history(exec_id)] == ["WorkflowStarted"]
    assert count(pg_dsn, "harvest_tasks") == 1
    assert count(pg_dsn, "harvest_activity_attempts") == 0


def test_a_store_read_inside_the_transaction_sees_its_held_writes(
    rt: PostgresRuntime,
) -> None:
    exec_id = str(rt.start_workflow("parked"))
    store = store_of(rt)
    with store.write() as txn:
        txn.append_events(exec_id, [event(2, "Held")], needs_decision=1)
        # The store's own reads share the transaction's connection.
        row = store.execution(exec_id)
        assert row is not None
        assert row.next_seq == 3
        assert [e.type for e in store.load_events(exec_id)][1:] == ["Held"]
