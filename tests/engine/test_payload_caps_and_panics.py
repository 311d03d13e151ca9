"""Payload caps at every ingress and from workflow code; bugs in workflow code and the panic budget."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ActivityContext,
    ApplicationError,
    PayloadTooDeep,
    PayloadTooLarge,
    RunState,
    SqliteRuntime,
    StorageError,
    WorkflowContext,
    WorkflowPanicked,
    activity,
    workflow,
)
from harvest_engine.payloads import MAX_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH
from tests.stores import txn_class_of

if TYPE_CHECKING:
    from pathlib import Path

Open = Callable[..., SqliteRuntime]


def deep(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"next": value}
    return value


@activity
async def noop(ctx: ActivityContext, value: Any) -> str:
    return "ok"


@workflow
async def sends_deep_input(ctx: WorkflowContext, _: Any) -> str:
    try:
        await ctx.execute_activity(noop, deep(MAX_PAYLOAD_DEPTH + 1))
    except PayloadTooDeep as exc:
        return f"caught {exc.what}"  # type: ignore[attr-defined]
    return "not caught"


@workflow
async def returns_deep(ctx: WorkflowContext, _: Any) -> Any:
    return deep(MAX_PAYLOAD_DEPTH + 1)


@workflow
async def buggy(ctx: WorkflowContext, _: Any) -> Any:
    return {"a": 1}["missing"]


@workflow
async def side_effects_over_the_caps(ctx: WorkflowContext, _: Any) -> list[str]:
    caught = []
    for make in (
        lambda: deep(MAX_PAYLOAD_DEPTH + 1),
        lambda: "x" * (MAX_PAYLOAD_BYTES + 1),
    ):
        try:
            await ctx.side_effect(make)
        except (PayloadTooDeep, PayloadTooLarge) as exc:
            caught.append(f"{type(exc).__name__}: {exc}")
    await ctx.wait_for_signal("go")
    return caught


@workflow
async def returns_a_set(ctx: WorkflowContext, _: Any) -> Any:
    return {1, 2}


@workflow
async def fails_with_odd_details(ctx: WorkflowContext, _: Any) -> Any:
    raise ApplicationError("gave up", type="GaveUp", details={1, 2})


def row_counts(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(path)
    tables = [
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
    ]
    counts = {
        t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables
    }
    conn.close()
    return counts


@pytest.fixture
def rt(open_rt: Open) -> SqliteRuntime:
    runtime = open_rt()
    for wf in (
        sends_deep_input,
        returns_deep,
        buggy,
        returns_a_set,
        fails_with_odd_details,
        side_effects_over_the_caps,
    ):
        runtime.register_workflow(wf)
    runtime.register_activity(noop)
    return runtime


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("x" * (MAX_PAYLOAD_BYTES + 1), PayloadTooLarge),
        (deep(MAX_PAYLOAD_DEPTH + 1), PayloadTooDeep),
    ],
)
def test_an_oversized_start_input_is_refused_before_anything_persists(
    rt: SqliteRuntime, db_path: Path, value: Any, error: type[Exception]
) -> None:
    before = row_counts(db_path)
    with pytest.raises(error):
        rt.start_workflow("buggy", value)
    with pytest.raises(error):
        rt.start_workflow_with_id("buggy", "key", value)
    assert row_counts(db_path) == before


def test_a_payload_at_the_depth_cap_is_accepted(rt: SqliteRuntime) -> None:
    rt.start_workflow("buggy", deep(MAX_PAYLOAD_DEPTH - 1))


async def test_workflow_code_gets_payload_too_deep_at_the_call_site(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow("sends_deep_input")
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output="caught activity input"
    )


async def test_a_side_effect_value_over_a_cap_is_refused_with_the_caps_own_error_on_replay_too(
    rt: SqliteRuntime, open_rt: Open
) -> None:
    exec_id = rt.start_workflow("side_effects_over_the_caps")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="go")
    rt.close()
    again = open_rt()  # no cached instance: the body replays the recorded failures
    again.register_workflow(side_effects_over_the_caps)
    again.send_signal(exec_id, "go")
    state = await again.run_until_blocked(exec_id)
    assert state == RunState.Completed(
        output=[
            f"PayloadTooDeep: side effect value nests deeper than {MAX_PAYLOAD_DEPTH} levels",
            f"PayloadTooLarge: side effect value is {MAX_PAYLOAD_BYTES + 3} bytes, "
            f"over the {MAX_PAYLOAD_BYTES}-byte cap",
        ]
    )


async def test_a_too_deep_workflow_result_fails_the_run_non_retryably(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow("returns_deep")
    state = await rt.run_until_blocked(exec_id)
    assert isinstance(state, RunState.Failed)
    assert state.error.type == "PayloadTooDeep"
    assert state.error.non_retryable


async def test_a_bug_leaves_the_run_running_then_the_third_cycle_fails_it_as_panic(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow("buggy")
    for count in (1, 2):
        with pytest.raises(WorkflowPanicked) as caught:
            await rt.run_until_blocked(exec_id)
        assert isinstance(caught.value.__cause__, KeyError)
        assert caught.value.count == count  # type: ignore[attr-defined]
        assert rt.describe(exec_id).state == "RUNNING"
        assert [e.type for e in rt.load_history(exec_id)] == ["WorkflowStarted"]
    state = await rt.run_until_blocked(exec_id)
    assert isinstance(state, RunState.Failed)
    assert state.error.type == "Panic"
    assert "KeyError" in state.error.message


async def test_a_fixed_bug_resumes_the_run_in_the_same_runtime(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow("buggy")
    with pytest.raises(WorkflowPanicked):
        await rt.run_until_blocked(exec_id)

    @workflow(name="buggy")
    async def fixed(ctx: WorkflowContext, _: Any) -> str:
        return "fixed"

    rt.register_workflow(fixed)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="fixed")


async def test_a_result_that_is_not_json_is_a_bug_under_the_panic_budget(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow("returns_a_set")
    for count in (1, 2):
        with pytest.raises(WorkflowPanicked) as caught:
            await rt.run_until_blocked(exec_id)
        assert caught.value.count == count  # type: ignore[attr-defined]
        assert [e.type for e in rt.load_history(exec_id)] == ["WorkflowStarted"]
    state = await rt.run_until_blocked(exec_id)
    assert isinstance(state, RunState.Failed)
    assert state.error.type == "Panic"
    assert "not a JSON value" in state.error.message


async def test_a_failure_whose_details_are_not_json_is_recorded_without_them(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow("fails_with_odd_details")
    state = await rt.run_until_blocked(exec_id)
    assert isinstance(state, RunState.Failed)
    assert state.error.type == "GaveUp"
    assert state.error.message == "gave up (details dropped: a set is not a JSON value)"
    assert state.error.details is None
    assert rt.load_history(exec_id)[-1].type == "WorkflowFailed"


def test_workflow_panicked_pickles_with_its_fields() -> None:
    import pickle

    error = WorkflowPanicked(exec_id="e1", error="KeyError: 'x'", count=1, budget=3)
    again = pickle.loads(pickle.dumps(error))
    assert isinstance(again, WorkflowPanicked)
    assert str(again.exec_id) == "e1"  # type: ignore[attr-defined]
    assert str(again) == str(error)


async def test_a_storage_failure_in_a_decision_is_not_counted_as_a_panic(
    rt: SqliteRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    exec_id = rt.start_workflow("side_effects_over_the_caps", None)
    await rt.run_until_blocked(exec_id)
    rt.send_signal(exec_id, "go", None)
    txn_class, storage_error = txn_class_of(rt)

    def disk_fails(*_: Any) -> None:
        raise storage_error("disk I/O error")

    monkeypatch.setattr(txn_class, "mark_signals_delivered", disk_fails)
    for _ in range(4):  # more drives than the panic budget
        with pytest.raises(StorageError, match="disk I/O error"):
            await rt.run_until_blocked(exec_id)
    monkeypatch.undo()

    assert rt.describe(exec_id).state == "RUNNING"
    assert isinstance(await rt.run_until_blocked(exec_id), RunState.Completed)
