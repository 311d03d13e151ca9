"""Pipelined write transactions on Postgres: queued statements, the same all-or-nothing commits.

A write transaction sends its statements without waiting for each answer
(libpq pipeline mode), so a failing statement is seen later than it was
sent: these tests pin that it still rolls the whole transaction back, that
a savepoint still undoes only its own block, that an append that does not
continue the history still writes nothing, and that a write block returns
only once its commit is visible to every other connection.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from harvest_engine import (
    HarvestError,
    ManualClock,
    PostgresRuntime,
)
from harvest_engine.errors import HarvestInternalError
from harvest_engine.events import HistoryEvent
from tests.engine.parked_postgres import AT, new_task, open_parked, store_of

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def rt(pg_dsn: str) -> Iterator[PostgresRuntime]:
    with open_parked(pg_dsn) as runtime:
        yield runtime


def raw(dsn: str, sql: str, *args: Any) -> list[Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql, args or None).fetchall()


def timers(dsn: str) -> list[str]:
    return [r[0] for r in raw(dsn, "SELECT timer_id FROM harvest_timers ORDER BY 1")]


def test_a_write_block_returns_once_its_commit_is_visible_to_other_connections(
    rt: PostgresRuntime, pg_dsn: str
) -> None:
    exec_id = str(rt.start_workflow("parked"))
    with store_of(rt).write() as txn:
        txn.add_timer(exec_id, "t1", AT)
        assert timers(pg_dsn) == []  # not committed yet
    assert timers(pg_dsn) == ["t1"]


def test_a_statement_that_fails_after_it_was_sent_rolls_the_whole_transaction_back(
    rt: PostgresRuntime, pg_dsn: str
) -> None:
    exec_id = str(rt.start_workflow("parked"))
    store = store_of(rt)

    def write_with_a_refused_statement() -> None:
        with store.write() as txn:
            txn.add_timer(exec_id, "t1", AT)
            # A duplicate of the run's first event: refused by the server,
            # whose answer arrives only with the commit.
            store.connection.execute(
                "INSERT INTO harvest_events (exec_id, seq, type, at, attrs) "
                "VALUES (%s, 1, 'Dup', 0, '{}')",
                (exec_id,),
            )
            txn.add_timer(exec_id, "t2", AT)

    with pytest.raises(HarvestError):
        write_with_a_refused_statement()
    assert timers(pg_dsn) == []
    assert [e.type for e in rt.load_history(exec_id)] == ["WorkflowStarted"]
    # The connection is idle again: the next write commits.
    with store.write() as txn:
        txn.add_timer(exec_id, "t3", AT)
    assert timers(pg_dsn) == ["t3"]


def test_an_append_that_does_not_continue_the_history_writes_nothing_of_its_transaction(
    rt: PostgresRuntime, pg_dsn: str
) -> None:
    exec_id = str(rt.start_workflow("parked"))
    store = store_of(rt)
    gap = HistoryEvent(seq=5, type="TimerFired", at=AT, attrs={})

    def append_to(run: str) -> None:
        with store.write() as txn:
            txn.add_timer(exec_id, "t1", AT)
            txn.append_events(run, [gap])

    with pytest.raises(HarvestInternalError, match="does not continue"):
        append_to(exec_id)
    with pytest.raises(HarvestInternalError, match="unknown run"):
        append_to("no-such-run")
    assert timers(pg_dsn) == []
    assert [e.type for e in rt.load_history(exec_id)] == ["WorkflowStarted"]
    assert raw(pg_dsn, "SELECT next_seq FROM harvest_executions") == [(2,)]


def test_a_savepoint_that_fails_undoes_only_its_own_block(
    rt: PostgresRuntime, pg_dsn: str
) -> None:
    exec_id = str(rt.start_workflow("parked"))
    store = store_of(rt)

    def failing_block() -> None:
        with store.write() as txn:
            txn.add_timer(exec_id, "undone", AT)
            raise ValueError("workflow code failed")

    with store.write_together():
        with store.write() as txn:
            txn.add_timer(exec_id, "kept", AT)
        with pytest.raises(ValueError, match="workflow code"):
            failing_block()
        with store.write() as txn:
            txn.add_timer(exec_id, "after", AT + timedelta(seconds=1))
    assert timers(pg_dsn) == ["after", "kept"]


def test_counts_that_need_the_servers_answer_are_right_inside_a_transaction(
    rt: PostgresRuntime,
) -> None:
    store = store_of(rt)
    with store.write() as txn:
        assert not txn.delete_schedule("nightly")
        txn.put_schedule(
            workflow_name="nightly",
            spec="0 3 * * *",
            input="null",
            overlap="SKIP",
            max_active_runs=1,
            next_fire_at=AT,
            paused=False,
            now=AT,
        )
        assert txn.delete_schedule("nightly")
        assert txn.purge_applied_commands(AT, AT, 10) == 0


# -- what a transaction knows without asking (txn_memory) ----------------------------


def event(seq: int, type_: str) -> HistoryEvent:
    return HistoryEvent(seq=seq, type=type_, at=AT, attrs={"n": [seq, (1, 2)]})


def test_events_a_transaction_appended_read_back_as_the_server_would_return_them(
    rt: PostgresRuntime,
) -> None:
    exec_id = str(rt.start_workflow("parked"))
    store = store_of(rt)
    with store.write() as txn:
        txn.append_events(exec_id, [event(2, "A"), event(3, "B")])
        txn.append_events(exec_id, [event(4, "C")])
        from_memory = txn.load_events(exec_id, 2)
        everything = txn.load_events(exec_id, 0)  # seq 1 is the server's
    assert [e.seq for e in everything] == [1, 2, 3, 4]
    assert from_memory == rt.load_history(exec_id)[2:]
    assert from_memory[0].attrs == {"n": [3, [1, 2]]}  # JSON, as stored


def test_a_savepoint_that_rolls_back_takes_its_appended_events_out_of_what_is_read(
    rt: PostgresRuntime,
) -> None:
    exec_id = str(rt.start_workflow("parked"))
    store = store_of(rt)

    def append_then_fail() -> None:
        with store.write() as txn:
            txn.append_events(exec_id, [event(3, "Undone")])
            raise ValueError("workflow code failed")

    with store.write_together() as txn:
        txn.append_events(exec_id, [event(2, "Kept")])
        with pytest.raises(ValueError, match="workflow code"):
            append_then_fail()
        assert [e.type for e in txn.load_events(exec_id, 1)] == ["Kept"]
        txn.append_events(exec_id, [event(3, "Again")])
        assert [e.type for e in txn.load_events(exec_id, 1)] == ["Kept", "Again"]
    assert [e.type for e in rt.load_history(exec_id)][1:] == ["Kept", "Again"]


def test_signals_and_timers_staged_after_the_decisions_lock_are_read_in_the_same_transaction(
    rt: PostgresRuntime, pg_dsn: str
) -> None:
    quiet = str(rt.start_workflow("parked"))
    busy = str(rt.start_workflow("parked"))
    rt.send_signal(busy, "go", 1)  # committed before the lock: seen
    store = store_of(rt)
    with store.write() as txn:
        assert txn.lock_for_decision(quiet)
        assert txn.staged_signals(quiet, 10) == []
        assert txn.due_timers(quiet, AT) == []
        txn.stage_signal(quiet, "go", "2", None, AT)
        txn.add_timer(quiet, "t1", AT)
        assert [s.name for s in txn.staged_signals(quiet, 10)] == ["go"]
        assert [t.timer_id for t in txn.due_timers(quiet, AT)] == ["t1"]
        assert txn.lock_for_decision(busy)
        assert [s.name for s in txn.staged_signals(busy, 10)] == ["go"]


def test_a_claimed_task_inserted_without_an_answer_is_the_row_the_server_stores(
    rt: PostgresRuntime,
) -> None:
    exec_id = str(rt.start_workflow("parked"))
    store = store_of(rt)
    with store.write() as txn:
        made = [txn.add_claimed_task(new_task(exec_id, i), AT) for i in (1, 2)]
        assert txn.tasks_of(exec_id) == made
    assert made[0].id < made[1].id
    assert store.claimed_task_ids([t.id for t in made]) == {t.id for t in made}
    # Another worker's task ids never meet this one's.
    other = PostgresRuntime.connect(store.dsn, clock=ManualClock())
    try:
        with store_of(other).write() as txn:
            theirs = txn.add_claimed_task(new_task(exec_id, 3), AT)
    finally:
        other.close()
    assert theirs.id not in {t.id for t in made}


def test_recording_a_task_locks_and_reads_its_run_and_the_task_together(
    rt: PostgresRuntime,
) -> None:
    exec_id = str(rt.start_workflow("parked"))
    store = store_of(rt)
    with store.write() as txn:
        (task,) = [txn.add_claimed_task(new_task(exec_id, 1), AT)]
    with store.write() as txn:
        assert txn.task(task.id) == task
        assert txn.execution(exec_id) == rt.store.execution(exec_id)
        assert txn.task(task.id + 1000) is None
        txn.delete_task(task.id)
        assert txn.task(task.id) is None


def test_savepoints_left_open_still_undo_only_the_failing_block_and_what_it_nests(
    rt: PostgresRuntime, pg_dsn: str
) -> None:
    # A block that succeeds leaves its savepoint open (no RELEASE): the next
    # one of the same name nests in it, and ROLLBACK TO takes the newest.
    exec_id = str(rt.start_workflow("parked"))
    store = store_of(rt)

    def add(timer_id: str, fail: bool = False, inner: str | None = None) -> None:
        with store.write() as txn:
            txn.add_timer(exec_id, timer_id, AT)
            if inner is not None:
                add(inner)
            if fail:
                raise ValueError("workflow code failed")

    with store.write_together():
        add("first")
        add("second")
        with pytest.raises(ValueError, match="workflow code"):
            add("failed", fail=True, inner="nested in the failed one")
        add("third", inner="nested in the third")
        with pytest.raises(ValueError, match="workflow code"):
            add("failed last", fail=True)
    assert timers(pg_dsn) == sorted(["first", "second", "third", "nested in the third"])
    assert raw(pg_dsn, "SELECT count(*) FROM harvest_executions") == [(1,)]
