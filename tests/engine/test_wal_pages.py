"""The WAL pages a commit writes: counted, so a regression shows on any machine.

Each page a durable commit writes costs the WAL about 10 us here (issue 13;
a commit of 1 page 0.125 ms, of 8 pages 0.198 ms). Before schema v4 and the
deferred decision marks, one activity of a long history committed 8 pages
when no b-tree split (the run's row and its needs_decision index entry made
and unmade, its events, the task row with a ready-index entry for a task
that was never PENDING and its exec index, an attempt row and its index); a
3-activity run's commits were 7, 6, 8, 8, 10 and a signal's two were 4 and
7. Now an activity writes the run's row, its events, the task row and its
exec index, and the clustered attempt log: 5 pages. With the 1 KiB pages of
a new file a b-tree split (of the events, mostly) adds pages to about one
commit in three: over 100 activities the mean is 8.1 pages (bench's
workload: 10.9 before). The pages are read from the WAL frames
(wal_frames.py) and named by b-tree with `dbstat`; the counts are the same
on every run (one run, a manual clock), so the budgets sit at them.
"""

from __future__ import annotations

import collections
import statistics
from typing import TYPE_CHECKING

import pytest
from wal_frames import commits, named_commits

from harvest_engine import (
    ActivityContext,
    ManualClock,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.sqlite_only("reads SQLite's WAL frames")

# Pages per commit of a 3-activity run driven alone: the start, the first
# decision, two completions with their decisions, the last one with the seal
# (7 pages, and 3 of an events split that falls into it here).
THREE_ACTIVITY_RUN = [7, 5, 5, 5, 10]
# A run parked on a signal: the signal's commit, then its decision and seal.
SIGNAL = [4, 7]
# One activity of a long history, driven alone (completion and decision).
PAGES_PER_ACTIVITY = 5
ACTIVITY_BTREES = {
    "harvest_executions",
    "harvest_events",
    "harvest_tasks",
    "harvest_tasks_exec",
    "harvest_activity_attempts",
}
# With the b-tree splits and file growth of a 100-activity run (8.08 now).
MEAN_PAGES_PER_ACTIVITY = 8.1


@activity
async def plus_one(ctx: ActivityContext, x: int) -> int:
    return x + 1


@workflow
async def k_plus(ctx: WorkflowContext, k: int) -> int:
    x = 0
    for _ in range(k):
        x = await ctx.execute_activity(plus_one, x)
    return x


@workflow
async def parked(ctx: WorkflowContext) -> int:
    return int(await ctx.wait_for_signal("go"))


def opened(db_path: Path, clock: ManualClock) -> SqliteRuntime:
    rt = SqliteRuntime.open(db_path, clock=clock)
    rt.register_workflow(k_plus)
    rt.register_workflow(parked)
    rt.register_activity(plus_one)
    # Every frame stays in the WAL until the test reads it.
    rt.store.connection.execute("PRAGMA wal_autocheckpoint = 0")  # type: ignore[attr-defined]
    return rt


async def test_a_three_activity_run_driven_alone_commits_its_budget_of_pages(
    db_path: Path, clock: ManualClock
) -> None:
    rt = opened(db_path, clock)
    try:
        before = len(commits(db_path))
        exec_id = rt.start_workflow("k_plus", 3)
        assert await rt.run_until_blocked(exec_id) == RunState.Completed(output=3)
        written = named_commits(db_path, before)
    finally:
        rt.close()
    assert [len(pages) for pages in written] == THREE_ACTIVITY_RUN, written
    # The first decision unmarks the new run (the start's mark was needed);
    # a completion decided in its own commit leaves the decide index alone.
    completions = written[1:-1]
    assert "harvest_executions_decide" in written[1]
    for pages in completions[1:]:
        assert set(pages) == ACTIVITY_BTREES, pages
    assert not any("harvest_executions_decide" in pages for pages in written[2:])


async def test_a_signal_and_the_decision_it_wakes_commit_their_budget_of_pages(
    db_path: Path, clock: ManualClock
) -> None:
    rt = opened(db_path, clock)
    try:
        exec_id = rt.start_workflow("parked")
        assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="go")
        before = len(commits(db_path))
        rt.send_signal(exec_id, "go", 7)
        assert await rt.run_until_blocked(exec_id) == RunState.Completed(output=7)
        written = named_commits(db_path, before)
    finally:
        rt.close()
    assert [len(pages) for pages in written] == SIGNAL


async def test_an_activity_of_a_long_history_commits_five_pages(
    db_path: Path, clock: ManualClock
) -> None:
    rt = opened(db_path, clock)
    try:
        before = len(commits(db_path))
        exec_id = rt.start_workflow("k_plus", 100)
        assert await rt.run_until_blocked(exec_id) == RunState.Completed(output=100)
        written = named_commits(db_path, before)
    finally:
        rt.close()
    activities = written[
        2:-1
    ]  # after the start and the first decision, before the seal
    assert len(activities) == 99
    sizes = collections.Counter(len(pages) for pages in activities)
    assert sizes.most_common(1)[0][0] == PAGES_PER_ACTIVITY, sizes
    assert statistics.mean(len(p) for p in activities) <= MEAN_PAGES_PER_ACTIVITY
    # Splits and growth add pages of the same b-trees (and the header page).
    for pages in activities:
        assert set(pages) <= ACTIVITY_BTREES | {"sqlite_schema"}, pages
        assert set(pages) >= ACTIVITY_BTREES, pages
