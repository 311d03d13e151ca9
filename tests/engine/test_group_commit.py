"""Group commit (DESIGN "Group commit"): many runs per transaction, each run atomic on its own.

A batched pass decides every run with ready work in one transaction, each
decision in its own savepoint: a run that panics, diverges or hits a cap
rolls back (or ends) alone and is reported, the others commit. Batching
changes how many commits a pass makes, never what a history holds.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ActivityContext,
    ApplicationError,
    ExecutionOutcome,
    HarvestError,
    HistoryCaps,
    ManualClock,
    NonDeterminismDetected,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from pathlib import Path

Open = Callable[..., SqliteRuntime]

DRIFT = {"second": "step"}


@activity
async def step(ctx: ActivityContext, x: int) -> int:
    return x + 1


@activity
async def other_step(ctx: ActivityContext, x: int) -> int:
    return x + 2


@activity
async def refuse(ctx: ActivityContext, x: int) -> int:
    raise ApplicationError("no", type="Refused", non_retryable=True)


@workflow
async def healthy(ctx: WorkflowContext, x: int) -> int:
    return await ctx.execute_activity(step, x)


@workflow
async def buggy(ctx: WorkflowContext, _: Any) -> Any:
    return {"a": 1}["missing"]


@workflow
async def drifting(ctx: WorkflowContext, x: int) -> Any:
    x = await ctx.execute_activity(step, x)
    x = await ctx.execute_activity(DRIFT["second"], x)
    return x + await ctx.wait_for_signal("go")


@workflow
async def fan_out(ctx: WorkflowContext, n: int) -> list[int]:
    return list(
        await asyncio.gather(*(ctx.execute_activity(step, i) for i in range(n)))
    )


@workflow
async def mixed(ctx: WorkflowContext, x: int) -> Any:
    x = await ctx.execute_activity(step, x)
    both = await asyncio.gather(
        ctx.execute_activity(step, x), ctx.execute_activity(other_step, x)
    )
    try:
        await ctx.execute_activity(refuse, x)
    except Exception as exc:  # noqa: BLE001 - the failure is part of the history
        failed = type(exc).__name__
    got = await ctx.wait_for_signal("go")
    return [x, list(both), failed, got]


def runtime(open_rt: Open, path: Path | None = None) -> SqliteRuntime:
    rt = open_rt(path)
    # Batches bounded by count only, so the commit counts below do not
    # depend on how fast this machine is.
    rt.settings.group_commit_seconds = 3600.0
    for wf in (healthy, buggy, drifting, fan_out, mixed):
        rt.register_workflow(wf)
    for act in (step, other_step, refuse):
        rt.register_activity(act)
    return rt


@contextmanager
def commits(rt: SqliteRuntime) -> Iterator[list[str]]:
    """Every COMMIT the runtime's connection runs inside the block."""
    seen: list[str] = []
    conn = rt.store.connection  # type: ignore[attr-defined]
    conn.set_trace_callback(lambda sql: seen.append(sql) if sql == "COMMIT" else None)
    try:
        yield seen
    finally:
        conn.set_trace_callback(None)


def types(rt: SqliteRuntime, exec_id: Any) -> list[str]:
    return [e.type for e in rt.load_history(exec_id)]


@pytest.mark.sqlite_only("counts COMMIT statements with SQLite's trace callback")
async def test_one_pass_commits_the_good_runs_and_reports_a_panic_a_divergence_and_a_cap(
    open_rt: Open, caplog: pytest.LogCaptureFixture
) -> None:
    rt = runtime(open_rt)
    DRIFT["second"] = "step"
    drifter = rt.start_workflow("drifting", 1)
    assert await rt.run_until_blocked(drifter) == RunState.WaitingSignal(name="go")
    drifter_history = types(rt, drifter)
    # The code changes under the recorded history; a replay diverges.
    DRIFT["second"] = "other_step"
    rt.cache.clear()
    rt.send_signal(drifter, "go", 5)
    panicker = rt.start_workflow("buggy")
    capped = rt.start_workflow("fan_out", 20)
    good = [rt.start_workflow("healthy", i) for i in range(3)]
    rt.set_history_caps(HistoryCaps(max_events=12))

    try:
        with commits(rt) as seen, pytest.raises(HarvestError) as caught:
            await rt.poll_once()
    finally:
        DRIFT["second"] = "step"

    # One commit for every decision (good and bad), one for the completions
    # recorded with their runs' next decisions.
    assert len(seen) == 2
    # The pass raises the first failing run's error (the oldest run, the
    # divergent one) and logs every failing run's.
    assert isinstance(caught.value, NonDeterminismDetected)
    reported = {r.getMessage().partition(":")[0] for r in caplog.records}
    assert {f"run {drifter}", f"run {panicker}"} <= reported
    for exec_id, x in zip(good, range(3), strict=True):
        assert rt.outcome(exec_id) == ExecutionOutcome.Completed(output=x + 1)
    # The divergent run rolled back alone: nothing appended, still RUNNING,
    # its signal still staged for a fixed deployment.
    assert types(rt, drifter) == drifter_history
    assert rt.describe(drifter).state == "RUNNING"
    assert [s.name for s in rt.store.staged_signals(str(drifter))] == ["go"]
    # The panic rolled back its cycle and counted it.
    assert types(rt, panicker) == ["WorkflowStarted"]
    assert rt.store.execution(str(panicker)).panic_count == 1  # type: ignore[union-attr]
    # The run over the cap failed with the typed reason, in the same commit.
    outcome = rt.outcome(capped)
    assert isinstance(outcome, ExecutionOutcome.Failed)
    assert outcome.error.type == "HistoryCapReached"
    assert any("WorkflowPanicked" in r.getMessage() for r in caplog.records)


async def test_a_divergent_run_is_evicted_from_the_cache_when_its_savepoint_rolls_back(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    DRIFT["second"] = "step"
    drifter = rt.start_workflow("drifting", 1)
    await rt.run_until_blocked(drifter)
    good = rt.start_workflow("healthy", 1)
    DRIFT["second"] = "other_step"
    rt.cache.clear()
    rt.send_signal(drifter, "go", 5)
    try:
        with pytest.raises(NonDeterminismDetected):
            await rt.poll_once()
    finally:
        DRIFT["second"] = "step"
    assert rt.outcome(good) == ExecutionOutcome.Completed(output=2)
    # The rolled-back run keeps no instance ahead of its file; the good one does not need one.
    assert len(rt.cache) == 0
    assert await rt.run_until_blocked(drifter) == RunState.Completed(output=8)


async def workload(rt: SqliteRuntime) -> list[Any]:
    ids = [rt.start_workflow("healthy", i) for i in range(3)]
    ids += [rt.start_workflow("fan_out", 3), rt.start_workflow("mixed", 1)]
    ids.append(rt.start_workflow("drifting", 2))
    rt.send_signal(ids[-1], "go", 1)
    await rt.run_until_idle()
    alone = rt.start_workflow("mixed", 10)
    await rt.run_until_blocked(alone)
    rt.send_signal(alone, "go", "late")
    rt.send_signal(ids[4], "go", "early")
    await rt.run_until_blocked(alone)
    await rt.run_until_idle()
    return [*ids, alone]


def raw_events(path: Path) -> list[list[tuple[Any, ...]]]:
    """Each run's stored events (seq, type, at, attrs text), runs in start order.

    The random run ids are the one thing two files cannot share: each is
    replaced by its run's start position, in the stored text itself.
    """
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        runs = [
            r[0]
            for r in conn.execute("SELECT exec_id FROM harvest_executions ORDER BY id")
        ]
        histories = [
            conn.execute(
                "SELECT seq, type, at, attrs FROM harvest_events WHERE exec_id = ? "
                "ORDER BY seq",
                (exec_id,),
            ).fetchall()
            for exec_id in runs
        ]
    finally:
        conn.close()

    def anonymous(text: str) -> str:
        for i, exec_id in enumerate(runs):
            text = text.replace(exec_id, f"<run {i}>")
        return text

    return [
        [(seq, kind, at, anonymous(attrs)) for seq, kind, at, attrs in history]
        for history in histories
    ]


async def test_histories_are_byte_for_byte_the_same_with_group_commit_on_and_off(
    tmp_path: Path, clock: ManualClock
) -> None:
    counted: dict[bool, int] = {}
    for batched in (True, False):
        path = tmp_path / f"batched-{batched}.db"
        rt = runtime(lambda p: SqliteRuntime.open(p, clock=clock), path)
        rt.settings.group_commit = batched
        with commits(rt) as seen:
            ids = await workload(rt)
        counted[batched] = len(seen)
        assert all(
            isinstance(rt.outcome(e), ExecutionOutcome.Completed) for e in ids
        ), [rt.outcome(e) for e in ids]
        rt.close()
    on, off = (raw_events(tmp_path / f"batched-{b}.db") for b in (True, False))
    assert on == off
    assert sum(map(len, on)) > 40
    # The same histories from far fewer commits.
    assert counted[True] * 2 < counted[False]


@pytest.mark.sqlite_only("counts COMMIT statements with SQLite's trace callback")
async def test_a_run_driven_alone_records_each_completion_with_its_next_decision(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("fan_out", 1)
    with commits(rt) as seen:
        assert await rt.run_until_blocked(exec_id) == RunState.Completed(output=[1])
    # One commit decides and claims; one records the completion and completes.
    assert len(seen) == 2


async def test_a_claim_carried_to_the_next_pass_is_dropped_when_the_run_was_terminated(
    open_rt: Open,
) -> None:
    ran: list[int] = []

    @activity(name="step")
    async def counting(ctx: ActivityContext, x: int) -> int:
        ran.append(x)
        return x + 1

    rt = runtime(open_rt)
    rt.register_activity(counting)
    exec_id = rt.start_workflow("drifting", 1)
    # The first pass runs step 1 and claims step 2 with the follow-up decision.
    assert await rt.poll_once() is True
    assert ran == [1]
    rt.terminate(exec_id, "stop")
    await rt.run_until_idle()
    assert ran == [1]  # the claimed body of a terminated run never runs
    assert isinstance(rt.outcome(exec_id), ExecutionOutcome.Terminated)


async def test_run_until_blocked_runs_a_claim_an_earlier_pass_carried(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("drifting", 1)
    await rt.poll_once()
    rt.send_signal(exec_id, "go", 10)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output=13)


@pytest.mark.sqlite_only("counts COMMIT statements with SQLite's trace callback")
async def test_a_batch_stops_taking_runs_once_it_has_held_the_thread_for_its_budget(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    rt.settings.group_commit_seconds = 0.0  # every run overruns it at once
    ids = [rt.start_workflow("healthy", i) for i in range(3)]
    with commits(rt) as seen:
        await rt.poll_once()
    # Three decision commits and three record + decide commits instead of two.
    assert len(seen) == 6
    for exec_id, x in zip(ids, range(3), strict=True):
        assert rt.outcome(exec_id) == ExecutionOutcome.Completed(output=x + 1)


async def test_overlapping_passes_decide_each_run_once_not_again_from_a_stale_list(
    open_rt: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Serving starts a pass while an older one awaits bodies, so a run can be
    # on two passes' lists; the pass that comes to it second finds it decided
    # after its list was read and leaves it (a decision there adds nothing).
    rt = runtime(open_rt)
    rt.settings.group_commit_size = 1  # a pass yields between runs
    ids = [rt.start_workflow("healthy", i) for i in range(3)]
    decider = rt._driver.group.decider  # type: ignore[attr-defined]
    decided: list[str] = []
    real = decider.decide

    def counting(exec_id: str, *args: Any, **kwargs: Any) -> Any:
        decided.append(exec_id)
        return real(exec_id, *args, **kwargs)

    monkeypatch.setattr(decider, "decide", counting)
    await asyncio.gather(rt.poll_once(), rt.poll_once())
    # Each run: its first decision, then the one that records its activity.
    assert sorted(decided) == sorted(str(exec_id) for exec_id in ids * 2)
    await rt.run_until_idle()
    for exec_id, x in zip(ids, range(3), strict=True):
        assert rt.outcome(exec_id) == ExecutionOutcome.Completed(output=x + 1)
