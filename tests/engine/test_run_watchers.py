"""A run awaiting a run that is not its child watches it: no decision flag while it waits, woken by its seal.

`await_external_workflow` links the waiter to the run it waits on (the end
of that run's continue-as-new chain); the seal of that run flags the waiter
and drops the links. On Postgres a target whose row another transaction
holds is not linked: the waiter keeps its flag and links at its next
decision, never waiting on that row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine import (
    ExecutionOutcome,
    PostgresRuntime,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)
from harvest_engine.store.postgres.schema import SCHEMA_VERSION as PG_VERSION
from harvest_engine.store.sqlite.schema import SCHEMA_VERSION as SQLITE_VERSION
from tests.schema_versions import (
    postgres_database_at,
    postgres_version,
    sqlite_file_at,
    sqlite_version,
)

if TYPE_CHECKING:
    from pathlib import Path

    from tests.pg_server import PostgresServer

Open = Callable[..., SqliteRuntime]


@workflow
async def target(ctx: WorkflowContext, rounds: int) -> Any:
    got = await ctx.wait_for_signal("go")
    if rounds > 1:
        ctx.continue_as_new(rounds - 1)
    return got


@workflow
async def watcher(ctx: WorkflowContext, exec_id: str) -> Any:
    return await ctx.await_external_workflow(exec_id)


def _register(rt: SqliteRuntime) -> None:
    rt.register_workflow(target)
    rt.register_workflow(watcher)


async def test_a_watcher_is_not_due_while_it_waits_and_its_target_seal_wakes_it(
    open_rt: Open,
) -> None:
    rt = open_rt()
    _register(rt)
    watched = rt.start_workflow("target", 1)
    waiters = [rt.start_workflow("watcher", str(watched)) for _ in range(3)]
    await rt.run_until_idle()
    assert [rt.describe(w).state for w in waiters] == ["RUNNING"] * 3
    # Nothing can move until a signal: no run reads as due (it was "now").
    assert rt.next_wakeup() is None
    rt.send_signal(watched, "go", "done")
    await rt.run_until_idle()
    for waiter in waiters:
        assert rt.outcome(waiter) == ExecutionOutcome.Completed(output="done")
    assert rt.next_wakeup() is None


async def test_a_watcher_follows_its_target_through_continue_as_new(
    open_rt: Open,
) -> None:
    rt = open_rt()
    _register(rt)
    first = rt.start_workflow("target", 2)
    waiter = rt.start_workflow("watcher", str(first))
    await rt.run_until_idle()
    rt.send_signal(first, "go", "not yet")
    await rt.run_until_idle()  # the hand-off's seal wakes it: it watches the successor
    successor = rt.successor(first)
    assert successor is not None
    assert rt.describe(waiter).state == "RUNNING"
    assert rt.next_wakeup() is None
    rt.send_signal(successor, "go", "now")
    await rt.run_until_idle()
    assert rt.outcome(waiter) == ExecutionOutcome.Completed(output="now")


async def test_a_watcher_that_ended_first_is_left_alone_by_the_seal(
    open_rt: Open,
) -> None:
    rt = open_rt()
    _register(rt)
    watched = rt.start_workflow("target", 1)
    waiter = rt.start_workflow("watcher", str(watched))
    await rt.run_until_idle()
    rt.terminate(waiter, "no longer needed")
    rt.send_signal(watched, "go", "late")
    await rt.run_until_idle()
    assert rt.describe(waiter).state == "TERMINATED"
    assert rt.outcome(watched) == ExecutionOutcome.Completed(output="late")
    assert rt.next_wakeup() is None


async def test_on_postgres_a_target_held_by_another_transaction_is_watched_later(
    pg_dsn: str,
) -> None:
    with PostgresRuntime.connect(pg_dsn) as rt:
        _register(rt)
        watched = rt.start_workflow("target", 1)
        await rt.run_until_idle()
        waiter = rt.start_workflow("watcher", str(watched))
        with psycopg.connect(pg_dsn) as holder:
            holder.execute(
                "SELECT 1 FROM harvest_executions WHERE exec_id = %s FOR UPDATE",
                (str(watched),),
            )
            await rt.poll_once()  # decides the waiter, never waits on the row
            assert _flag_and_links(pg_dsn, str(waiter)) == (1, 0)
            holder.rollback()
        await rt.poll_once()  # the flag kept it due: it links now
        assert _flag_and_links(pg_dsn, str(waiter)) == (0, 1)
        rt.send_signal(watched, "go", "done")
        await rt.run_until_idle()
        assert rt.outcome(waiter) == ExecutionOutcome.Completed(output="done")
        assert _flag_and_links(pg_dsn, str(waiter)) == (0, 0)


def _flag_and_links(dsn: str, exec_id: str) -> tuple[int, int]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT needs_decision, (SELECT count(*) FROM harvest_run_watchers "
            "WHERE watcher = %s) FROM harvest_executions WHERE exec_id = %s",
            (exec_id, exec_id),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


async def _a_watcher_woken_by_the_end(rt: SqliteRuntime, value: int) -> None:
    """A watcher waits without being due, and its target's end wakes it with `value`."""
    _register(rt)
    watched = rt.start_workflow("target", 1)
    waiter = rt.start_workflow("watcher", str(watched))
    await rt.run_until_idle()
    assert rt.next_wakeup() is None
    rt.send_signal(watched, "go", value)
    await rt.run_until_idle()
    assert rt.outcome(waiter) == ExecutionOutcome.Completed(output=value)


async def test_a_version_9_file_gains_run_watchers_on_open(tmp_path: Path) -> None:
    path = tmp_path / "v9.db"
    sqlite_file_at(path, 9)
    with SqliteRuntime.open(path) as rt:
        await _a_watcher_woken_by_the_end(rt, 9)
    assert sqlite_version(path) == SQLITE_VERSION == 10


async def test_a_version_6_postgres_database_gains_run_watchers(
    pg_server: PostgresServer,
) -> None:
    dsn = postgres_database_at(pg_server, 6)
    try:
        with PostgresRuntime.connect(dsn) as rt:
            await _a_watcher_woken_by_the_end(rt, 6)
        assert postgres_version(dsn) == PG_VERSION == 7
    finally:
        pg_server.drop_database(dsn)
