"""The Python and the statements a queued 3-step run costs on SQLite, counted.

flow_bench's queue workload (issue 26): runs started into a queue of
concurrency 8, plain (thread) activity bodies, served pass by pass until
all complete. Calls (cProfile) and statements (sqlite3's trace) barely
move with the machine's load, unlike the timings; `python -m
bench.flow_counts` prints the same counts for the served workload.
"""

from __future__ import annotations

import asyncio
import collections
import cProfile
import pstats
from typing import TYPE_CHECKING

import pytest

from harvest_engine import (
    ActivityContext,
    Queue,
    SqliteRuntime,
    StartOptions,
    WorkflowContext,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.sqlite_only("counts SQLite's statements and Python calls")

RUNS = 48
# Python calls per queued run, its start included, driven by poll_once
# (measured on main at 70f7c33, before issue 26's lean pass: 2,372; 2,160
# with a plain body's result handed back in one hop (body_threads.py) and
# the transactions and joined writes as plain objects (write_scopes.py);
# 2,067 once a batch of many runs' decisions took no savepoints; 1,993 with
# a pass's plain bodies read by callbacks, no asyncio task each; 1,937 with
# one waiter the bodies wake as they end instead of asyncio.wait a round;
# 1,920 with the engine's monotonic reads past the workflow guard's wrapper).
CALLS_PER_RUN = 1_940
# Statements per queued run, starts included (measured at 70f7c33: 53.6, of
# them 8 SAVEPOINT and RELEASE, one pair per decision; 45.4 without them).
STATEMENTS_PER_RUN = 46


@activity
def step(ctx: ActivityContext, x: int) -> int:
    return x + 1


@workflow
async def three_steps(ctx: WorkflowContext, x: int) -> int:
    for _ in range(3):
        x = await ctx.execute_activity(step, x)
    return x


def _served(db_path: Path) -> tuple[float, collections.Counter[str]]:
    """Python calls per run and the statements by first word, starts included."""
    rt = SqliteRuntime.open(db_path)
    rt.register_workflow(three_steps)
    rt.register_activity(step)
    rt.register_queue(Queue("q8", concurrency=8))
    seen: collections.Counter[str] = collections.Counter()
    conn = rt.store.connection  # type: ignore[attr-defined]
    profiler = cProfile.Profile()

    async def drive() -> list[str]:
        ids = [
            str(
                rt.start_workflow_with_options(
                    "three_steps", i, StartOptions(queue="q8")
                ).exec_id
            )
            for i in range(RUNS)
        ]
        for _ in range(400):
            await rt.poll_once()
            if rt.counts_by_state().get("COMPLETED", 0) == RUNS:
                return ids
        raise AssertionError("the runs did not complete")

    try:
        conn.set_trace_callback(lambda sql: seen.update([sql.split(None, 1)[0]]))
        profiler.enable()
        ids = asyncio.run(drive())
        profiler.disable()
        conn.set_trace_callback(None)
        assert [rt.outcome(i).output for i in ids] == [i + 3 for i in range(RUNS)]
    finally:
        rt.close()
    calls = pstats.Stats(profiler).total_calls  # type: ignore[attr-defined]
    return calls / RUNS, seen


def test_a_queued_run_stays_under_its_python_call_and_statement_budgets(
    db_path: Path,
) -> None:
    per_run, seen = _served(db_path)
    assert per_run <= CALLS_PER_RUN, (
        f"a queued 3-step run made {per_run:.0f} Python calls (budget "
        f"{CALLS_PER_RUN}): profile `python -m bench.flow_counts`"
    )
    assert sum(seen.values()) / RUNS <= STATEMENTS_PER_RUN, seen
    # A batch of many runs' decisions goes without savepoints (commit_batches).
    assert seen["SAVEPOINT"] == seen["RELEASE"] == 0, seen
