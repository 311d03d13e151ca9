"""Pipelined write transactions on Postgres: queued statements, the same all-or-nothing commits.

A write transaction sends its statements without waiting for each answer
(libpq pipeline mode), so a failing statement is seen later than it was
sent: these tests pin that it still rolls the whole transaction back, that
a savepoint still undoes only its own block, that an append that does not
continue the history still writes nothing, and that a write block returns
only once its commit is visible to every other connection.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from harvest_engine import (
    HarvestError,
    ManualClock,
    PostgresRuntime,
    WorkflowContext,
    workflow,
)
from harvest_engine.errors import HarvestInternalError
from harvest_engine.events import HistoryEvent
from harvest_engine.store.postgres.store import PostgresStore

if TYPE_CHECKING:
    from collections.abc import Iterator

AT = datetime(2030, 1, 1, tzinfo=UTC)


@workflow
async def parked(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("go")


@pytest.fixture
def rt(pg_dsn: str) -> Iterator[PostgresRuntime]:
    runtime = PostgresRuntime.connect(pg_dsn, clock=ManualClock())
    runtime.register_workflow(parked)
    yield runtime
    runtime.close()


def store_of(rt: PostgresRuntime) -> PostgresStore:
    store = rt.store
    assert isinstance(store, PostgresStore)
    return store


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
        assert txn.purge_applied_commands(AT, 10) == 0
