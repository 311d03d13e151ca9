"""Updates: schema, validator, both events in one transaction, timeouts, caps, never re-run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from talking import event_types, file_rows, request_cancel

from harvest_engine import (
    ActivityContext,
    ApplicationError,
    ExecutionId,
    ExecutionNotFound,
    ExecutionOutcome,
    HistoryCaps,
    ManualClock,
    NonDeterminismDetected,
    PayloadTooDeep,
    RunState,
    SqliteRuntime,
    UpdateFailed,
    UpdateHistoryCapReached,
    UpdateInputInvalid,
    UpdateRejected,
    UpdateTimedOut,
    WorkflowContext,
    WorkflowNotRunning,
    WorkflowReplayer,
    activity,
    update,
    workflow,
)
from harvest_engine.payloads import MAX_PAYLOAD_DEPTH
from harvest_engine.runtime.deciding import cancel

Open = Callable[..., SqliteRuntime]

# How often each update handler body ran (a handler must run once per update).
ran: dict[str, int] = {}


@dataclass
class Quote:
    price: int
    currency: str = "EUR"


@activity
def lookup(ctx: ActivityContext, sku: str) -> int:
    return 10


@workflow
async def order(ctx: WorkflowContext, _: Any) -> dict[str, Any]:
    state: dict[str, Any] = {"price": 5, "notes": []}
    ctx.register_query("price", lambda: state["price"])

    def positive(quote: Quote) -> None:
        if quote.price <= 0:
            raise ValueError("must be positive")

    async def requote(quote: Quote) -> dict[str, Any]:
        ran["requote"] = ran.get("requote", 0) + 1
        state["price"] = quote.price  # stays in the update's own replay
        return {"old": 5, "new": quote.price, "currency": quote.currency}

    async def fail(_: Any) -> None:
        raise ApplicationError("no stock", type="OutOfStock", details={"sku": "A1"})

    async def crash(_: Any) -> None:
        raise KeyError("bug")

    async def deep(_: Any) -> Any:
        value: Any = 0
        for _i in range(MAX_PAYLOAD_DEPTH + 1):
            value = [value]
        return value

    async def calls_activity(_: Any) -> Any:
        return await ctx.execute_activity(lookup, "A1")

    async def waits_for_signal(_: Any) -> Any:
        return await ctx.wait_for_signal("never")

    async def cancel_reason(_: Any) -> Any:
        return ctx.cancellation_reason()

    ctx.register_update_handler("requote", positive, requote)
    ctx.register_update_handler("fail", None, fail)
    ctx.register_update_handler("crash", None, crash)
    ctx.register_update_handler("deep", None, deep)
    ctx.register_update_handler("calls_activity", None, calls_activity)
    ctx.register_update_handler("waits_for_signal", None, waits_for_signal)
    ctx.register_update_handler("cancel_reason", None, cancel_reason)
    note = await ctx.wait_for_signal("finish")
    return {"price": state["price"], "note": note}


@update(workflow="order")
async def discount(ctx: WorkflowContext, percent: int) -> str:
    return f"{ctx.info().workflow_id}: {percent}% off"


@update(workflow="order", name="requote")
def declared_requote(ctx: WorkflowContext, arg: Any) -> str:
    return "the declarative handler"


def register(rt: SqliteRuntime) -> SqliteRuntime:
    rt.register_workflow(order)
    rt.register_activity(lookup)
    rt.register_update(discount)
    rt.register_update(declared_requote)
    return rt


@pytest.fixture
def rt(open_rt: Open) -> SqliteRuntime:
    ran.clear()
    return register(open_rt())


async def waiting_run(rt: SqliteRuntime) -> ExecutionId:
    exec_id = rt.start_workflow_with_id("order", "order-7", None)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="finish")
    return exec_id


async def test_an_update_returns_its_result_and_records_both_events_in_order(
    rt: SqliteRuntime,
) -> None:
    exec_id = await waiting_run(rt)

    result = await rt.update(exec_id, "requote", {"price": 7})

    assert result == {"old": 5, "new": 7, "currency": "EUR"}
    admitted, completed = rt.load_history(exec_id)[-2:]
    assert (admitted.type, completed.type) == ("UpdateAdmitted", "UpdateCompleted")
    assert admitted.attrs["name"] == completed.attrs["name"] == "requote"
    assert admitted.attrs["input"] == {"price": 7}
    assert admitted.attrs["update_id"] == completed.attrs["update_id"]
    assert completed.attrs["result"] == result


async def test_the_update_does_not_drive_the_run(rt: SqliteRuntime) -> None:
    exec_id = await waiting_run(rt)
    rt.send_signal(exec_id, "finish", "staged")
    staged = rt.store.staged_signals(str(exec_id))

    await rt.update(exec_id, "requote", {"price": 7})

    assert rt.store.staged_signals(str(exec_id)) == staged
    assert "SignalReceived" not in event_types(rt, exec_id)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output={"price": 5, "note": "staged"}
    )


async def test_state_the_handler_writes_does_not_reach_the_body(
    rt: SqliteRuntime,
) -> None:
    exec_id = await waiting_run(rt)

    await rt.update(exec_id, "requote", {"price": 99})

    assert await rt.query(exec_id, "price") == 5
    rt.send_signal(exec_id, "finish", "done")
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output={"price": 5, "note": "done"}
    )


async def test_a_recorded_update_is_never_run_again_by_replay(open_rt: Open) -> None:
    ran.clear()
    rt = register(open_rt())
    exec_id = await waiting_run(rt)
    await rt.update(exec_id, "requote", {"price": 7})
    assert ran == {"requote": 1}

    await rt.query(exec_id, "price")
    rt.cache.clear()
    await rt.run_until_blocked(exec_id)
    rt.close()
    rt = register(open_rt())
    await rt.query(exec_id, "price")
    rt.send_signal(exec_id, "finish", "after the reopen")
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output={"price": 5, "note": "after the reopen"}
    )

    assert ran == {"requote": 1}
    WorkflowReplayer([order]).replay(rt.load_history(exec_id))


async def test_an_invalid_input_and_a_rejection_write_nothing(
    rt: SqliteRuntime,
) -> None:
    exec_id = await waiting_run(rt)
    before = file_rows(rt)

    with pytest.raises(UpdateInputInvalid, match="price"):
        await rt.update(exec_id, "requote", {"price": "seven"})
    with pytest.raises(UpdateInputInvalid, match="required field 'price'"):
        await rt.update(exec_id, "requote", {"currency": "EUR"})
    with pytest.raises(UpdateInputInvalid, match="unknown field"):
        await rt.update(exec_id, "requote", {"price": 1, "colour": "red"})
    with pytest.raises(UpdateInputInvalid):
        await rt.update(exec_id, "discount", "ten")
    with pytest.raises(UpdateRejected, match="must be positive"):
        await rt.update(exec_id, "requote", {"price": -1})
    with pytest.raises(UpdateRejected, match="no update handler 'nope'"):
        await rt.update(exec_id, "nope", None)

    assert file_rows(rt) == before
    assert ran == {}


async def test_a_failing_handler_records_update_failed(rt: SqliteRuntime) -> None:
    exec_id = await waiting_run(rt)

    with pytest.raises(UpdateFailed, match="no stock"):
        await rt.update(exec_id, "fail", None)
    with pytest.raises(UpdateFailed, match="KeyError"):
        await rt.update(exec_id, "crash", None)
    with pytest.raises(UpdateFailed, match="deeper than"):
        await rt.update(exec_id, "deep", None)

    history = rt.load_history(exec_id)
    failures = [e for e in history if e.type == "UpdateFailed"]
    assert [e.attrs["name"] for e in failures] == ["fail", "crash", "deep"]
    assert failures[0].attrs["error"]["type"] == "OutOfStock"
    assert failures[0].attrs["error"]["details"] == {"sku": "A1"}
    assert failures[2].attrs["error"]["type"] == "PayloadTooDeep"
    assert event_types(rt, exec_id).count("UpdateAdmitted") == 3
    assert rt.outcome(exec_id) == ExecutionOutcome.Running()


async def test_a_durable_command_or_an_endless_wait_is_update_timed_out(
    rt: SqliteRuntime,
) -> None:
    exec_id = await waiting_run(rt)
    before = file_rows(rt)

    with pytest.raises(UpdateTimedOut, match="ActivityScheduled"):
        await rt.update(exec_id, "calls_activity", None)
    with pytest.raises(UpdateTimedOut, match="no replay resolves"):
        await rt.update(exec_id, "waits_for_signal", None)

    assert file_rows(rt) == before
    assert rt.store.pending_tasks(str(exec_id)) == []


async def test_a_handler_past_the_five_second_limit_is_update_timed_out(
    open_rt: Open, clock: ManualClock
) -> None:
    @workflow
    async def slow(ctx: WorkflowContext, _: Any) -> None:
        async def takes(seconds: float) -> str:
            clock.advance(seconds)  # the runtime's clock moves while it runs
            return "finished"

        ctx.register_update_handler("takes", None, takes)
        await ctx.wait_for_signal("never")

    rt = open_rt()
    rt.register_workflow(slow)
    exec_id = rt.start_workflow("slow", None)
    await rt.run_until_blocked(exec_id)

    assert await rt.update(exec_id, "takes", 4.5) == "finished"
    before = file_rows(rt)
    with pytest.raises(UpdateTimedOut, match="5s limit"):
        await rt.update(exec_id, "takes", 6)
    assert file_rows(rt) == before


async def test_an_update_that_would_reach_a_cap_fails_the_run_at_the_cap(
    rt: SqliteRuntime,
) -> None:
    exec_id = await waiting_run(rt)
    events = len(rt.load_history(exec_id))
    rt.set_history_caps(HistoryCaps(max_events=events + 2, max_bytes=None))

    with pytest.raises(UpdateHistoryCapReached):
        await rt.update(exec_id, "requote", {"price": 7})

    assert "UpdateAdmitted" not in event_types(rt, exec_id)
    assert event_types(rt, exec_id)[-1] == "WorkflowFailed"
    state = await rt.run_until_blocked(exec_id)
    assert isinstance(state, RunState.Failed)
    assert state.error.type == "HistoryCapReached"


async def test_an_update_reaching_a_cap_ends_a_run_with_a_pending_cancel_cancelled(
    rt: SqliteRuntime,
) -> None:
    # Guide §7 "Both paths": an update that reaches a history cap ends a run
    # with a pending cancel CANCELLED, not FAILED.
    exec_id = await waiting_run(rt)
    request_cancel(rt, exec_id, "user stopped the session")
    events = len(rt.load_history(exec_id))
    rt.set_history_caps(HistoryCaps(max_events=events + 2, max_bytes=None))

    with pytest.raises(UpdateHistoryCapReached):
        await rt.update(exec_id, "requote", {"price": 7})

    assert "UpdateAdmitted" not in event_types(rt, exec_id)
    assert rt.outcome(exec_id) == ExecutionOutcome.Terminated(state="CANCELLED")
    assert rt.load_history(exec_id)[-1].attrs == {"reason": "user stopped the session"}
    assert await rt.run_until_blocked(exec_id) == RunState.Cancelled(
        reason="user stopped the session"
    )


async def test_an_update_reaching_the_cleanup_budget_ends_the_cancelled_run_cancelled(
    rt: SqliteRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Guide §7 "Both paths": the cleanup budget counts an update's events too.
    exec_id = await waiting_run(rt)
    request_cancel(rt, exec_id, "user stopped the session")
    monkeypatch.setattr(
        cancel, "CLEANUP_BUDGET", 4
    )  # room for one update (2 events), not two

    assert await rt.update(exec_id, "requote", {"price": 7}) == {
        "old": 5,
        "new": 7,
        "currency": "EUR",
    }
    with pytest.raises(UpdateHistoryCapReached):
        await rt.update(exec_id, "requote", {"price": 8})

    assert event_types(rt, exec_id).count("UpdateAdmitted") == 1
    assert rt.outcome(exec_id) == ExecutionOutcome.Terminated(state="CANCELLED")
    assert await rt.run_until_blocked(exec_id) == RunState.Cancelled(
        reason="user stopped the session"
    )


async def test_declarative_updates_work_and_the_body_handler_wins(
    rt: SqliteRuntime,
) -> None:
    exec_id = await waiting_run(rt)

    assert await rt.update(exec_id, "discount", 10) == "order-7: 10% off"
    assert await rt.update(exec_id, "requote", {"price": 3}) == {
        "old": 5,
        "new": 3,
        "currency": "EUR",
    }


async def test_an_update_replays_with_the_pending_cancel(rt: SqliteRuntime) -> None:
    exec_id = await waiting_run(rt)
    request_cancel(rt, exec_id, "user stopped the session")

    assert await rt.update(exec_id, "cancel_reason", None) == "user stopped the session"


async def test_update_targets_must_exist_and_run(rt: SqliteRuntime) -> None:
    exec_id = await waiting_run(rt)
    rt.send_signal(exec_id, "finish", "done")
    await rt.run_until_blocked(exec_id)
    before = file_rows(rt)

    with pytest.raises(WorkflowNotRunning):
        await rt.update(exec_id, "requote", {"price": 7})
    with pytest.raises(ExecutionNotFound):
        await rt.update(ExecutionId.new(), "requote", {"price": 7})
    assert file_rows(rt) == before


async def test_a_too_deep_input_is_refused_before_anything(rt: SqliteRuntime) -> None:
    exec_id = await waiting_run(rt)
    before = file_rows(rt)
    deep: Any = 1
    for _ in range(MAX_PAYLOAD_DEPTH + 1):
        deep = [deep]

    with pytest.raises(PayloadTooDeep):
        await rt.update(exec_id, "requote", deep)
    assert file_rows(rt) == before


async def test_an_update_of_a_run_whose_code_diverged_is_non_determinism_and_writes_nothing(
    open_rt: Open, clock: ManualClock
) -> None:
    async def echo(value: Any) -> Any:
        return value

    @workflow(name="naps")
    async def naps(ctx: WorkflowContext, _: Any) -> None:
        ctx.register_update_handler("echo", None, echo)
        await ctx.sleep("1s")
        await ctx.wait_for_signal("never")

    @workflow(name="naps")
    async def naps_changed(ctx: WorkflowContext, _: Any) -> None:
        ctx.register_update_handler("echo", None, echo)
        await ctx.side_effect(lambda: 1)  # today's code records a side effect there
        await ctx.wait_for_signal("never")

    rt = open_rt()
    rt.register_workflow(naps)
    exec_id = rt.start_workflow("naps", None)
    await rt.run_until_blocked(exec_id)
    clock.advance("2s")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="never")
    rt.close()
    changed = open_rt()
    changed.register_workflow(naps_changed)
    before = file_rows(changed)

    with pytest.raises(NonDeterminismDetected):
        await changed.update(exec_id, "echo", 1)
    assert file_rows(changed) == before


async def test_updates_work_across_a_reopen(open_rt: Open) -> None:
    rt = register(open_rt())
    exec_id = await waiting_run(rt)
    first = await rt.update(exec_id, "requote", {"price": 7})
    rt.close()

    rt = register(open_rt())
    second = await rt.update(exec_id, "requote", {"price": 8, "currency": "USD"})

    assert (first["new"], second["new"], second["currency"]) == (7, 8, "USD")
    assert event_types(rt, exec_id).count("UpdateCompleted") == 2
    rt.send_signal(exec_id, "finish", "ok")
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output={"price": 5, "note": "ok"}
    )
    WorkflowReplayer([order]).replay(rt.load_history(exec_id))
