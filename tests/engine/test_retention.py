"""purge_terminal: batches of 256, every row of a run, RUNNING never, the close time only."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from seeding import T0, seed_run

from harvest_engine import (
    ExecutionFilter,
    ManualClock,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)
from harvest_engine.store.rows import LedgerEntry
from harvest_engine.store.sql.retention import RUN_TABLES, SQLITE_RETENTION

Open = Callable[..., SqliteRuntime]


@workflow
async def quick(ctx: WorkflowContext, _: Any) -> str:
    ctx.log("done soon")
    return "ok"


def rows_of(rt: SqliteRuntime, exec_id: str) -> dict[str, int]:
    conn = rt.store.connection  # type: ignore[attr-defined]
    return {
        table: conn.execute(
            f"SELECT COUNT(*) FROM {table} WHERE exec_id = ?", (exec_id,)
        ).fetchone()[0]
        for table in RUN_TABLES
    }


@pytest.mark.sqlite_only(
    "reads and damages the tables with SQLite SQL (query plans, dynamic typing)"
)
def test_a_purge_removes_every_row_of_an_old_terminal_run(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = open_rt()
    store: Any = rt.store
    old = seed_run(store, state="COMPLETED", closed_at=T0 - timedelta(days=40))
    at = T0 - timedelta(days=40)
    with store.write() as txn:
        txn.stage_signal(old, "s", "1", "key-1", at)
        txn.add_timer(old, "t", at)
        txn.add_ledger([LedgerEntry(old, "a", 1, "m", 1, 1, None, at)])
        txn.append_log_lines(old, [(1, at, "line")], None)
    assert sum(rows_of(rt, old).values()) > 4
    assert rt.purge_terminal("30d") == 1
    assert rows_of(rt, old) == dict.fromkeys(RUN_TABLES, 0)


def test_running_and_recent_runs_stay(open_rt: Open, clock: ManualClock) -> None:
    rt = open_rt()
    store: Any = rt.store
    running = seed_run(store, started_at=T0 - timedelta(days=90))
    recent = seed_run(store, state="FAILED", closed_at=T0 - timedelta(days=29))
    old = seed_run(store, state="CANCELLED", closed_at=T0 - timedelta(days=31))
    assert rt.purge_terminal(timedelta(days=30)) == 1
    left = {str(r.exec_id) for r in rt.list_executions(ExecutionFilter()).executions}
    assert left == {running, recent}
    assert old not in left


async def test_the_window_counts_from_the_close_time_on_the_runtime_clock(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = open_rt()
    rt.register_workflow(quick)
    exec_id = rt.start_workflow("quick")
    await rt.run_until_blocked(exec_id)
    clock.advance("6d")
    assert rt.purge_terminal("7d") == 0
    clock.advance("2d")
    assert rt.purge_terminal("7d") == 1
    assert rt.list_executions().executions == []


def test_a_window_longer_than_the_calendar_removes_nothing(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = open_rt()
    kept = seed_run(rt.store, state="COMPLETED", closed_at=T0 - timedelta(days=400))  # type: ignore[arg-type]
    assert rt.purge_terminal("1000000d") == 0
    assert [str(r.exec_id) for r in rt.list_executions().executions] == [kept]


@pytest.mark.sqlite_only(
    "reads and damages the tables with SQLite SQL (query plans, dynamic typing)"
)
def test_ten_thousand_runs_go_in_batches_of_256(
    open_rt: Open, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = open_rt()
    conn = rt.store.connection  # type: ignore[attr-defined]
    closed = int((T0 - timedelta(days=400)).timestamp() * 1_000_000)
    with rt.store.write():
        conn.executemany(
            "INSERT INTO harvest_executions (exec_id, workflow_name, workflow_id, state, "
            "input, started_at, closed_at) VALUES (?, 'bulk', ?, 'COMPLETED', 'null', ?, ?)",
            [(f"run-{i}", f"run-{i}", closed, closed + i) for i in range(10_000)],
        )
        conn.executemany(
            "INSERT INTO harvest_events (exec_id, seq, type, at, attrs) "
            "VALUES (?, 1, 'WorkflowStarted', ?, '{}')",
            [(f"run-{i}", closed) for i in range(10_000)],
        )
    transactions: list[int] = []
    original_write = rt.store.write

    def counting_write() -> Any:
        transactions.append(1)
        return original_write()

    monkeypatch.setattr(rt.store, "write", counting_write)
    assert rt.purge_terminal("1d") == 10_000
    # 39 full batches and one of 16: one short transaction each.
    assert len(transactions) == 10_000 // 256 + 1
    assert conn.execute("SELECT COUNT(*) FROM harvest_events").fetchone()[0] == 0


@pytest.mark.sqlite_only(
    "reads and damages the tables with SQLite SQL (query plans, dynamic typing)"
)
def test_each_batch_seeks_on_indexes(open_rt: Open) -> None:
    conn = open_rt().store.connection  # type: ignore[attr-defined]
    plan = " ".join(
        str(r[-1])
        for r in conn.execute(
            f"EXPLAIN QUERY PLAN {SQLITE_RETENTION.select_batch}", (0, 256)
        )
    )
    assert "harvest_executions_closed" in plan
    for table in RUN_TABLES:
        detail = " ".join(
            str(r[-1])
            for r in conn.execute(
                f"EXPLAIN QUERY PLAN DELETE FROM {table} WHERE exec_id IN (?, ?)",
                ("a", "b"),
            )
        )
        assert "SCAN" not in detail, (table, detail)


@pytest.mark.sqlite_only(
    "reads and damages the tables with SQLite SQL (query plans, dynamic typing)"
)
def test_a_damaged_close_time_is_skipped(open_rt: Open) -> None:
    rt = open_rt()
    store: Any = rt.store
    bad = seed_run(store, state="COMPLETED", closed_at=T0 - timedelta(days=99))
    with store.write():
        store.connection.execute(
            "UPDATE harvest_executions SET closed_at = 'long ago' WHERE exec_id = ?",
            (bad,),
        )
    assert rt.purge_terminal(0) == 0


async def test_closed_at_comes_from_the_real_clock_even_under_as_of(
    open_rt: Callable[..., SqliteRuntime], clock: ManualClock
) -> None:
    rt = open_rt()
    rt.register_workflow(quick)
    exec_id = rt.start_workflow("quick")
    week_ahead = clock.now() + timedelta(days=7)
    assert isinstance(
        await rt.run_until_blocked_as_of(exec_id, week_ahead), RunState.Completed
    )
    detail = rt.describe(exec_id)
    assert detail.closed_at == clock.now()
    assert rt.load_history(exec_id)[-1].at == week_ahead  # the drive's own clock
    clock.advance("2d")
    assert rt.purge_terminal("1d") == 1
