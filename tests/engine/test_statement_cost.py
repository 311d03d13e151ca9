"""The SQL a run costs on SQLite: counted, so a regression shows on any machine.

A 3-activity run driven alone made 90 traced statements before the write
transaction kept its rows (bench/PERF-NOTES.md), 59 after, and 51 once the
rows outlived their commit, a drive stopped probing for the run before its
decision and a decision alone stopped taking a savepoint. A run parked on a
signal, signalled and driven to Completed made 39, then 26 (no existence or
wakeup probes, one write per delivered signal, no history re-read). The
bounds sit at the counts, so losing a saving (the row read once, then kept
from one transaction to the next while current, no SAVEPOINT/RELEASE for a
run alone, the skipped signal/timer/cleanup probes, one row update per
append) fails here. The trace reports an events INSERT twice (its
append-only trigger runs as a program of its own); the bounds count what
the trace reports.
"""

from __future__ import annotations

import asyncio
import collections
from typing import TYPE_CHECKING, cast

from harvest_engine import (
    ActivityContext,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from pathlib import Path

    from harvest_engine.store.sqlite.store import SqliteStore

# What one 3-activity run may make, start to Completed, driven alone.
STATEMENTS_PER_RUN = 50
# The activity runner's one read of the workflow name: the transactions keep
# the row they inserted from one commit to the next (data_version unchanged).
ROW_READS_PER_RUN = 1
ROW_UPDATES_PER_RUN = 8  # one per completion and per decision, the seal's
# What a run parked on a signal may make: start, park, the signal, Completed.
STATEMENTS_PER_SIGNALLED_RUN = 26


@activity
async def plus_one(ctx: ActivityContext, x: int) -> int:
    return x + 1


@workflow
async def three_plus(ctx: WorkflowContext, x: int) -> int:
    for _ in range(3):
        x = await ctx.execute_activity(plus_one, x)
    return x


@workflow
async def parked(ctx: WorkflowContext) -> int:
    return int(await ctx.wait_for_signal("go"))


def _traced_runs(db_path: Path, runs: int) -> collections.Counter[str]:
    rt = SqliteRuntime.open(db_path)
    rt.register_workflow(three_plus)
    rt.register_activity(plus_one)
    seen: collections.Counter[str] = collections.Counter()

    async def drive() -> list[RunState]:
        return [
            await rt.run_until_blocked(rt.start_workflow("three_plus", i))
            for i in range(runs)
        ]

    conn = cast("SqliteStore", rt.store).connection
    try:
        asyncio.run(drive())  # warm: the first run compiles what later ones reuse
        conn.set_trace_callback(lambda sql: seen.update([sql.split("(")[0][:60]]))
        states = asyncio.run(drive())
        conn.set_trace_callback(None)
    finally:
        rt.close()
    assert all(isinstance(s, RunState.Completed) for s in states)
    return seen


def test_a_three_activity_run_stays_under_its_statement_budget(db_path: Path) -> None:
    seen = _traced_runs(db_path, 5)
    per_run = sum(seen.values()) / 5
    assert per_run <= STATEMENTS_PER_RUN, (
        f"a 3-activity run made {per_run:.0f} statements (budget {STATEMENTS_PER_RUN}): "
        "list them with `python -m bench.count_statements latency`"
    )


def test_a_run_row_is_read_once_per_transaction_and_updated_once_per_step(
    db_path: Path,
) -> None:
    seen = _traced_runs(db_path, 5)
    reads = sum(
        n
        for sql, n in seen.items()
        if sql.startswith("SELECT id, exec_id, workflow_name")
    )
    updates = sum(
        n for sql, n in seen.items() if sql.startswith("UPDATE harvest_executions")
    )
    assert reads / 5 <= ROW_READS_PER_RUN
    assert updates / 5 <= ROW_UPDATES_PER_RUN
    # A run with no signal, timer or mutex never reads or cleans those tables.
    assert not [
        sql
        for sql in seen
        if "harvest_signals" in sql
        or "harvest_timers" in sql
        or "harvest_mutexes" in sql
    ]


def _traced_signals(db_path: Path, runs: int) -> list[str]:
    """Every statement of `runs` runs: started, parked, signalled, driven to Completed."""
    rt = SqliteRuntime.open(db_path)
    rt.register_workflow(parked)
    seen: list[str] = []

    async def drive() -> list[RunState]:
        states = []
        for i in range(runs):
            exec_id = rt.start_workflow("parked")
            assert isinstance(
                await rt.run_until_blocked(exec_id), RunState.WaitingSignal
            )
            rt.send_signal(exec_id, "go", i)
            states.append(await rt.run_until_blocked(exec_id))
        return states

    conn = cast("SqliteStore", rt.store).connection
    try:
        asyncio.run(drive())
        conn.set_trace_callback(seen.append)
        states = asyncio.run(drive())
        conn.set_trace_callback(None)
    finally:
        rt.close()
    assert [s.output for s in states if isinstance(s, RunState.Completed)] == [
        0,
        1,
        2,
        3,
        4,
    ]
    return seen


def test_a_signal_round_trip_stays_under_its_statement_budget(db_path: Path) -> None:
    seen = _traced_signals(db_path, 5)
    per_run = len(seen) / 5
    assert per_run <= STATEMENTS_PER_SIGNALLED_RUN, (
        f"a signalled run made {per_run:.0f} statements "
        f"(budget {STATEMENTS_PER_SIGNALLED_RUN}): list them with "
        "`python -m bench.count_statements signal`"
    )


def test_a_signal_round_trip_probes_nothing_the_transactions_already_know(
    db_path: Path,
) -> None:
    seen = _traced_signals(db_path, 5)
    # No existence check before a drive or a signal (their transactions read
    # the row), no ready-task or wakeup probe after a park with nothing to
    # wait for but the signal, and the signal written once when delivered.
    assert not [
        sql for sql in seen if sql.startswith("SELECT 1 FROM harvest_executions")
    ]
    assert not [
        sql for sql in seen if sql.startswith("SELECT id, exec_id, activity_id")
    ]
    assert not [sql for sql in seen if sql.startswith("SELECT MIN(t)")]
    signal_writes = [
        sql.split()[0]
        for sql in seen
        if "harvest_signals" in sql and not sql.startswith("SELECT")
    ]
    assert signal_writes == ["INSERT", "DELETE"] * 5
    # Nothing the start committed is read back: its transaction's row and
    # events outlive the commit (no other connection wrote since), so the
    # park, the signal's check and the drive after it read no history and
    # no row; the drive after the signal starts a fresh instance from the
    # WorkflowStarted the parked one applied.
    assert not [sql for sql in seen if sql.startswith("SELECT seq, type, at")]
    assert not [sql for sql in seen if sql.startswith("SELECT id, exec_id, workflow")]
