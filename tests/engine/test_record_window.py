"""The record window: bodies of a pass that finish a little apart share one commit.

Plain bodies run in threads and finish apart; recording the first alone
and the rest a moment later costs a commit each (on Postgres a WAL flush
each). A finished body's record waits up to `record_window_seconds` for the
others still running.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from harvest_engine import (
    ActivityContext,
    ExecutionOutcome,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from pathlib import Path


@activity
def nap(ctx: ActivityContext, seconds: float) -> float:
    """A plain body (run in a thread) that takes `seconds`."""
    time.sleep(seconds)
    return seconds


@workflow
async def one_nap(ctx: WorkflowContext, seconds: float) -> float:
    return await ctx.execute_activity(nap, seconds)


def _record_commits(tmp_path: Path, window: float) -> int:
    """Commits of the pass that runs a quick body and a 50 ms body side by side."""
    rt = SqliteRuntime.open(tmp_path / f"w{window}.db")
    try:
        rt.settings.record_window_seconds = window
        rt.register_workflow(one_nap)
        rt.register_activity(nap)
        ids = [rt.start_workflow("one_nap", s) for s in (0.0, 0.05)]
        seen: list[str] = []
        conn = rt.store.connection  # type: ignore[attr-defined]
        conn.set_trace_callback(
            lambda sql: seen.append(sql) if sql == "COMMIT" else None
        )
        try:
            # One pass: decides both (one commit), runs both bodies side by
            # side, records them with the runs' ends.
            asyncio.run(rt.poll_once())
        finally:
            conn.set_trace_callback(None)
        assert [rt.outcome(i) for i in ids] == [
            ExecutionOutcome.Completed(0.0),
            ExecutionOutcome.Completed(0.05),
        ]
        return len(seen)
    finally:
        rt.close()


def test_bodies_finishing_apart_share_one_commit(tmp_path: Path) -> None:
    assert _record_commits(tmp_path, window=2.0) == 2


def test_no_window_records_each_as_it_finishes(tmp_path: Path) -> None:
    assert _record_commits(tmp_path, window=0.0) == 3
