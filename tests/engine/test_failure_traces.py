"""Failures you can debug: every recorded failure carries the user-code traceback, and is logged."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ActivityContext,
    ApplicationError,
    ErrorInfo,
    ManualClock,
    RetryPolicy,
    RunState,
    SqliteRuntime,
    UpdateFailed,
    WorkflowContext,
    WorkflowPanicked,
    WorkflowReplayer,
    activity,
    workflow,
)
from harvest_engine.tracebacks import MAX_TRACE_CHARS

if TYPE_CHECKING:
    from tests.stores import Databases

Open = Callable[..., SqliteRuntime]
THIS_FILE = os.path.basename(__file__)
ROOT = Path(__file__).resolve().parents[2]


def line_of(marker: str) -> int:
    """The line of this file that holds `marker` (a comment at the raising line)."""
    with open(__file__) as source:
        for number, text in enumerate(source, 1):
            if marker in text and "line_of(" not in text:
                return number
    raise AssertionError(marker)


@activity
def charge(ctx: ActivityContext, order: dict[str, Any]) -> int:
    return order["amount"]  # BUG-AMOUNT


def dig(depth: int) -> int:
    if depth == 0:
        raise KeyError("bottom")  # BUG-BOTTOM
    return dig(depth - 1) + 1


@activity
def recurse(ctx: ActivityContext, depth: int) -> int:
    return dig(depth)


@workflow
async def shop(ctx: WorkflowContext, order: dict[str, Any]) -> int:
    return await ctx.execute_activity(
        charge, order, retry=RetryPolicy(max_attempts=2, initial_interval=0.001)
    )


@workflow
async def deep(ctx: WorkflowContext, depth: int) -> int:
    return await ctx.execute_activity(recurse, depth, retry=RetryPolicy(max_attempts=1))


@workflow
async def refuses(ctx: WorkflowContext, _: Any) -> None:
    raise ApplicationError("no stock", type="OutOfStock")  # BUG-WORKFLOW


def on_cancel_request(payload: Any) -> None:
    raise ApplicationError(f"cannot {payload}", type="Refused")  # BUG-HANDLER


@workflow
async def listens(ctx: WorkflowContext, _: Any) -> None:
    ctx.register_signal_handler("stop", on_cancel_request)
    await ctx.await_condition(lambda: False)


def crash(arg: Any) -> Any:
    return {}[arg]  # BUG-UPDATE


@workflow
async def quotes(ctx: WorkflowContext, _: Any) -> None:
    ctx.register_update_handler("crash", None, crash)
    await ctx.wait_for_signal("done")


def missing_key(order: dict[str, Any]) -> Any:
    return order["qty"]  # BUG-PANIC


@workflow
async def panics(ctx: WorkflowContext, order: dict[str, Any]) -> Any:
    return missing_key(order)


def runtime(open_rt: Open, path: Path | None = None) -> SqliteRuntime:
    rt = open_rt(path)
    for wf in (shop, deep, refuses, listens, quotes, panics):
        rt.register_workflow(wf)
    rt.register_activity(charge)
    rt.register_activity(recurse)
    return rt


async def to_the_end(rt: SqliteRuntime, exec_id: Any) -> RunState:
    """Drive a run, passing the retry backoffs on the manual clock, until it ends."""
    clock = rt.clock
    assert isinstance(clock, ManualClock)
    for _ in range(10):
        state = await rt.run_until_blocked(exec_id)
        if state.is_terminal:
            return state
        clock.advance(timedelta(seconds=1))
    raise AssertionError(f"run {exec_id} did not end: {state}")


def assert_points_at_user_code(error: ErrorInfo | None, marker: str) -> str:
    assert error is not None
    trace = error.stack_trace
    assert trace is not None
    assert f'{THIS_FILE}", line {line_of(marker)}' in trace
    assert "harvest_engine" + os.sep not in trace
    assert "asyncio" + os.sep not in trace
    return trace


async def test_a_failed_activity_records_its_traceback_on_the_attempts_and_the_run(
    open_rt: Open, tmp_path: Path
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow_with_id("shop", "K1", {"id": 1})

    failed = await to_the_end(rt, exec_id)

    assert isinstance(failed, RunState.Failed)
    assert_points_at_user_code(failed.error, "BUG-AMOUNT")
    attempts = rt.activity_attempts(exec_id)
    assert [a.attempt for a in attempts] == [1, 2]
    for attempt in attempts:
        trace = assert_points_at_user_code(attempt.error, "BUG-AMOUNT")
        assert trace.rstrip().endswith("KeyError: 'amount'")
    rt.close()
    reopened = runtime(open_rt)
    again = reopened.activity_attempts(exec_id)
    assert [a.error for a in again] == [a.error for a in attempts]
    assert_points_at_user_code(
        ErrorInfo.from_json(reopened.describe(exec_id).error.value),  # type: ignore[union-attr]
        "BUG-AMOUNT",
    )


async def test_each_failed_attempt_logs_a_warning_and_the_failed_run_an_error(
    open_rt: Open, caplog: pytest.LogCaptureFixture
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow_with_id("shop", "K1", {"id": 1})

    with caplog.at_level(logging.INFO, logger="harvest_engine"):
        await to_the_end(rt, exec_id)

    ours = [r for r in caplog.records if r.name.startswith("harvest_engine")]
    warnings = [r for r in ours if r.levelno == logging.WARNING]
    errors = [r for r in ours if r.levelno == logging.ERROR]
    assert len(warnings) == 2
    assert len(errors) == 1
    where = f'{THIS_FILE}", line {line_of("BUG-AMOUNT")}'
    for attempt, record in enumerate(warnings, 1):
        text = record.getMessage()
        assert str(exec_id) in text
        assert "K1" in text
        assert "shop" in text
        assert f"activity charge attempt {attempt} " in text
        assert where in text
        assert "KeyError: 'amount'" in text
    text = errors[0].getMessage()
    assert str(exec_id) in text
    assert "K1" in text
    assert "shop" in text
    assert where in text


async def test_a_failure_in_workflow_code_carries_its_traceback(open_rt: Open) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("refuses", None)

    failed = await rt.run_until_blocked(exec_id)

    assert isinstance(failed, RunState.Failed)
    assert_points_at_user_code(failed.error, "BUG-WORKFLOW")


async def test_a_failing_signal_handler_carries_its_traceback(open_rt: Open) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("listens", None)
    await rt.run_until_blocked(exec_id)
    rt.send_signal(exec_id, "stop", "stop")

    failed = await rt.run_until_blocked(exec_id)

    assert isinstance(failed, RunState.Failed)
    assert failed.error.type == "Refused"
    assert_points_at_user_code(failed.error, "BUG-HANDLER")


async def test_a_failing_update_handler_records_its_traceback(open_rt: Open) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("quotes", None)
    await rt.run_until_blocked(exec_id)

    with pytest.raises(UpdateFailed, match="KeyError"):
        await rt.update(exec_id, "crash", "sku")

    (failed,) = [e for e in rt.load_history(exec_id) if e.type == "UpdateFailed"]
    assert_points_at_user_code(ErrorInfo.from_json(failed.attrs["error"]), "BUG-UPDATE")


async def test_a_run_failed_by_panics_carries_the_traceback(open_rt: Open) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("panics", {"count": 1})
    for _ in range(2):
        with pytest.raises(WorkflowPanicked):
            await rt.run_until_blocked(exec_id)

    failed = await rt.run_until_blocked(exec_id)

    assert isinstance(failed, RunState.Failed)
    assert failed.error.type == "Panic"
    trace = assert_points_at_user_code(failed.error, "BUG-PANIC")
    assert trace.rstrip().endswith("KeyError: 'qty'")


async def test_the_traceback_of_a_deep_recursion_is_bounded_and_keeps_the_innermost_frames(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("deep", 400)

    failed = await rt.run_until_blocked(exec_id)

    assert isinstance(failed, RunState.Failed)
    (attempt,) = rt.activity_attempts(exec_id)
    trace = assert_points_at_user_code(attempt.error, "BUG-BOTTOM")
    assert len(trace) <= MAX_TRACE_CHARS
    assert "earlier frame(s) left out" in trace
    run_trace = failed.error.stack_trace
    assert run_trace is not None
    assert len(run_trace) <= MAX_TRACE_CHARS
    assert f"line {line_of('BUG-BOTTOM')}" in run_trace


async def test_a_history_with_traces_replays_whatever_the_traces_say(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow_with_id("shop", "K1", {"id": 1})
    await to_the_end(rt, exec_id)
    history = rt.load_history(exec_id)
    traced = [e for e in history if "stack_trace" in (e.attrs.get("error") or {})]
    assert [e.type for e in traced] == ["ActivityFailed", "WorkflowFailed"]
    edited = [
        dataclasses.replace(
            e,
            attrs={
                **e.attrs,
                "error": {**e.attrs["error"], "stack_trace": "elsewhere"},
            },
        )
        if e in traced
        else e
        for e in history
    ]

    for events in (history, edited):
        result = WorkflowReplayer([shop]).replay(events)
        assert result.closed
        assert result.events == len(history)


def test_a_failure_stored_without_a_traceback_reads_as_none() -> None:
    old = {"type": "KeyError", "message": "'amount'", "non_retryable": False}

    info = ErrorInfo.from_json(old)

    assert info.stack_trace is None
    assert "stack_trace" not in info.to_json()


def harvest(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "harvest_engine", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )


async def test_show_result_and_attempts_print_the_traceback(
    open_rt: Open, databases: Databases, db_path: Path
) -> None:
    rt = runtime(open_rt)
    exec_id = str(rt.start_workflow_with_id("shop", "K1", {"id": 1}))
    await to_the_end(rt, exec_id)
    rt.close()
    target = str(db_path) if databases.server is None else databases.dsn(db_path)
    where = f'{THIS_FILE}", line {line_of("BUG-AMOUNT")}'

    shown = harvest("show", target, exec_id)
    attempts = harvest("attempts", target, exec_id)
    result = harvest("result", target, exec_id)
    as_json = harvest("attempts", target, exec_id, "--json")

    assert shown.returncode == 0, shown.stderr
    assert "traceback:" in shown.stdout
    assert where in shown.stdout
    assert attempts.returncode == 0, attempts.stderr
    assert attempts.stdout.count(where) == 2
    assert result.returncode == 1
    assert where in result.stderr
    assert "ended FAILED" in result.stderr
    traces = [a["error"]["stack_trace"] for a in json.loads(as_json.stdout)]
    assert len(traces) == 2
    assert all(where in t for t in traces)
