"""Crash recovery with real processes: SIGKILL a writer mid-activity, reopen, finish (guide §10).

Every activity body appends a line to a log file each time it runs (see
workers/crash_flows.py), so the logs prove exactly which bodies ran in which
process: recorded activities never run again, and the body that was killed
runs again exactly once, with the same idempotency key.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sqlite3
import warnings
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ManualClock,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Workers


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Where the activity bodies write their logs and the test its flags."""
    path = tmp_path / "logs"
    path.mkdir()
    return path


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """The workflow database file."""
    return tmp_path / "workflows.db"


def kill_while_running(workers: Workers, db: Path, folder: Path, step: str) -> int:
    """Start a pipeline run in a writer, SIGKILL it inside `step`'s body; the writer's pid."""
    (folder / f"block-{step}").touch()
    writer = workers.spawn("crash_writer", "start", db, folder, "pipeline")
    workers.wait_for(
        lambda: (folder / f"running-{step}").exists(),
        f"{step} to start running",
        writer,
    )
    workers.sigkill(writer)
    (folder / f"running-{step}").unlink()
    return writer.pid


def task_rows(db: Path) -> list[dict[str, Any]]:
    """The task rows as a read-only connection sees them (the writer is dead)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT status, attempt, idempotency_key, input FROM harvest_tasks ORDER BY id"
        ).fetchall()
    finally:
        conn.close()
    return [
        {"status": s, "attempt": a, "key": k, "step": json.loads(i)["step"]}
        for s, a, k, i in rows
    ]


def resume_in_process(
    workers: Workers, db: Path, exec_id: str
) -> tuple[RunState, list[str]]:
    """Reopen the file here, register again, drive to the end; the state and event types."""
    flows = workers.load("crash_flows")
    with SqliteRuntime.open(db) as rt:
        flows.register(rt)
        state = asyncio.run(flows.drive(rt, exec_id))
        return state, [e.type for e in rt.load_history(exec_id)]


def runs(folder: Path, step: str) -> list[tuple[str, int, int]]:
    """(idempotency key, attempt, pid) of every run of `step`'s body."""
    path = folder / f"{step}.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return [(run["key"], run["attempt"], run["pid"]) for run in map(json.loads, lines)]


STEPS = ("fetch", "transform-1", "transform-2", "publish")
ALL_DONE = [f"{step} done" for step in STEPS]


@pytest.mark.parametrize(
    "killed",
    [
        pytest.param("fetch", id="first-activity-sync-body"),
        pytest.param("transform-2", id="gather-sibling-async-body"),
        pytest.param("publish", id="last-activity-sync-body"),
    ],
)
def test_a_body_killed_mid_flight_runs_again_once_and_recorded_bodies_never_rerun(
    workers: Workers, db: Path, folder: Path, killed: str
) -> None:
    writer_pid = kill_while_running(workers, db, folder, killed)
    before = STEPS[: STEPS.index(killed)]
    after = STEPS[STEPS.index(killed) + 1 :]

    # Session 1 ran every body up to the killed one, and that one once.
    for step in before:
        assert [pid for _, _, pid in runs(folder, step)] == [writer_pid], step
    [(killed_key, killed_attempt, _)] = runs(folder, killed)
    # The kill left the claim behind: the killed body's task is still RUNNING.
    running = [row for row in task_rows(db) if row["status"] == "RUNNING"]
    assert running == [
        {
            "status": "RUNNING",
            "attempt": killed_attempt,
            "key": killed_key,
            "step": killed,
        }
    ]

    (folder / f"block-{killed}").unlink()
    state, history = resume_in_process(workers, db, (folder / "exec_id").read_text())

    assert state == RunState.Completed(output=ALL_DONE)
    for step in before:
        assert [pid for _, _, pid in runs(folder, step)] == [writer_pid], step
    assert runs(folder, killed) == [
        (killed_key, killed_attempt, writer_pid),
        (killed_key, killed_attempt, os.getpid()),
    ]
    for step in after:
        assert [pid for _, _, pid in runs(folder, step)] == [os.getpid()], step
    assert history.count("ActivityScheduled") == len(STEPS)
    assert history.count("ActivityCompleted") == len(STEPS)
    assert "ActivityFailed" not in history
    assert history[-1] == "WorkflowCompleted"
    assert task_rows(db) == []


def test_a_retried_attempt_killed_mid_body_reruns_with_its_attempt_number_and_key(
    workers: Workers, db: Path, folder: Path
) -> None:
    (folder / "fail-once-publish").touch()
    writer_pid = kill_while_running(workers, db, folder, "publish")
    exec_id = (folder / "exec_id").read_text()

    (folder / "block-publish").unlink()
    state, _ = resume_in_process(workers, db, exec_id)

    assert state == RunState.Completed(output=ALL_DONE)
    [(key, _, _)] = runs(folder, "fetch")
    publish_runs = runs(folder, "publish")
    assert publish_runs == [
        (publish_runs[0][0], 1, writer_pid),  # failed on purpose, then retried
        (publish_runs[0][0], 2, writer_pid),  # killed
        (publish_runs[0][0], 2, os.getpid()),  # the re-run keeps attempt 2 (guide §13)
    ]
    assert publish_runs[0][0] != key  # each activity call has its own key
    with SqliteRuntime.open(db) as rt:
        attempts = rt.activity_attempts(exec_id, "publish")
    # The killed attempt is visible: a LOST row beside the re-run, same number.
    assert [(a.attempt, a.outcome) for a in attempts] == [
        (1, "FAILED"),
        (2, "LOST"),
        (2, "COMPLETED"),
    ]
    lost = attempts[1]
    assert lost.error is not None
    assert lost.error.type == "AttemptLost"
    assert lost.ended_at is not None
    assert attempts[0].ended_at <= lost.started_at <= lost.ended_at
    assert lost.ended_at <= attempts[2].started_at


def test_a_writer_killed_twice_in_the_same_body_still_finishes_with_one_key(
    workers: Workers, db: Path, folder: Path
) -> None:
    first_pid = kill_while_running(workers, db, folder, "transform-2")
    exec_id = (folder / "exec_id").read_text()
    second = workers.spawn("crash_writer", "resume", db, folder, exec_id)
    workers.wait_for(
        lambda: (folder / "running-transform-2").exists(), "the re-run to start", second
    )
    workers.sigkill(second)

    (folder / "block-transform-2").unlink()
    report = workers.run_json("crash_writer", "resume", db, folder, exec_id)

    assert report["state"] == "Completed"
    assert report["output"] == ALL_DONE
    killed_runs = runs(folder, "transform-2")
    assert len(killed_runs) == 3
    assert len({key for key, _, _ in killed_runs}) == 1
    assert [pid for _, _, pid in killed_runs][:2] == [first_pid, second.pid]
    for step in ("fetch", "transform-1"):
        assert [pid for _, _, pid in runs(folder, step)] == [first_pid], step
    assert len(runs(folder, "publish")) == 1
    with SqliteRuntime.open(db) as rt:
        outcomes = [
            (a.activity_id, a.outcome)
            for a in rt.activity_attempts(exec_id, "transform")
        ]
    killed = [i for i, outcome in outcomes if outcome == "LOST"]
    assert len(killed) == 2
    assert len(set(killed)) == 1  # both kills hit transform-2's one activity
    assert [o for i, o in outcomes if i == killed[0]] == ["LOST", "LOST", "COMPLETED"]


@pytest.mark.parametrize("session_one_ends", ["exits", "is-sigkilled"])
def test_a_run_parked_on_a_signal_resumes_in_a_new_process_instead_of_restarting(
    workers: Workers, db: Path, folder: Path, session_one_ends: str
) -> None:
    # Guide §13 (durability): drive to a signal block, drop, reopen, signal, finish.
    if session_one_ends == "exits":
        first = workers.run_json("crash_writer", "start", db, folder, "order")
        first_pid = runs(folder, "reserve")[0][2]
    else:
        writer = workers.spawn("crash_writer", "start", db, folder, "order", "--park")
        workers.wait_for(
            lambda: (folder / "parked").exists(), "the run to park", writer
        )
        first = json.loads(workers.sigkill(writer))
        first_pid = writer.pid
    assert first["state"] == "WaitingSignal"
    assert runs(folder, "ship") == []

    second = workers.run_json(
        "crash_writer",
        "resume",
        db,
        folder,
        first["exec_id"],
        "--signal",
        "approve",
        '"yes"',
    )

    assert second["state"] == "Completed"
    assert second["output"] == {
        "reserved": "reserve done",
        "approval": "yes",
        "shipped": "ship done",
    }
    [(_, _, reserve_pid)] = runs(folder, "reserve")  # once, in session 1 only
    [(_, _, ship_pid)] = runs(folder, "ship")  # once, in session 2 only
    assert reserve_pid == first_pid
    assert ship_pid not in (first_pid, os.getpid())


@workflow
async def three_timers(ctx: WorkflowContext, _: object) -> list[str]:
    """Collects three timers in completion order."""

    async def after(seconds: int, label: str) -> str:
        await ctx.sleep(seconds)
        return label

    return [
        await aw
        for aw in ctx.as_completed([after(1, "a"), after(2, "b"), after(3, "c")])
    ]


async def park_in_as_completed_then_drop_and_resume(db: Path) -> RunState:
    clock = ManualClock()
    rt = SqliteRuntime.open(db, clock=clock)
    rt.register_workflow(three_timers)
    exec_id = rt.start_workflow("three_timers")
    await rt.run_until_blocked(exec_id)
    clock.advance(1)
    assert isinstance(await rt.run_until_blocked(exec_id), RunState.WaitingTimer)
    rt.close()  # drops the instance parked inside the as_completed loop
    gc.collect()
    with SqliteRuntime.open(db, clock=clock) as again:
        again.register_workflow(three_timers)
        clock.advance(5)
        return await again.run_until_blocked(exec_id)


def test_dropping_a_runtime_parked_inside_as_completed_leaves_no_unawaited_coroutine(
    db: Path,
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        state = asyncio.run(park_in_as_completed_then_drop_and_resume(db))
        gc.collect()

    assert state == RunState.Completed(output=["a", "b", "c"])
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []
