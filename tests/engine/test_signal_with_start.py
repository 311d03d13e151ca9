"""Signal-with-start: one transaction, terminal priors, replace semantics, keys deduped across a chain."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from talking import file_rows, request_cancel, run_count, seal_as

from harvest_engine import (
    BlankWorkflowId,
    ExecutionOutcome,
    InvalidSignal,
    ManualClock,
    PayloadTooLarge,
    RunState,
    SignalWithStart,
    SignalWithStartOutcome,
    SqliteRuntime,
    StorageError,
    UnknownWorkflow,
    WorkflowAlreadyStarted,
    WorkflowContext,
    WorkflowIdReusePolicy,
    workflow,
)
from harvest_engine.payloads import MAX_PAYLOAD_BYTES
from tests.stores import txn_class_of

Open = Callable[..., SqliteRuntime]
P = WorkflowIdReusePolicy


@workflow
async def order(ctx: WorkflowContext, payload: Any) -> Any:
    approved = await ctx.wait_for_signal("approve")
    if approved == "wait-again":
        return [payload, await ctx.wait_for_signal("approve")]
    return [payload, approved]


@workflow
async def session(ctx: WorkflowContext, turn: int) -> Any:
    message = await ctx.wait_for_signal("say")
    if turn < 1:
        ctx.continue_as_new(turn + 1)
    return [turn, message]


@pytest.fixture
def rt(open_rt: Open) -> SqliteRuntime:
    runtime = open_rt()
    runtime.register_workflow(order)
    runtime.register_workflow(session)
    return runtime


def request(**overrides: Any) -> SignalWithStart:
    values: dict[str, Any] = {
        "workflow_name": "order",
        "workflow_id": "order-7",
        "input": {"sku": "A1"},
        "signal_name": "approve",
        "signal_payload": True,
    }
    values.update(overrides)
    return SignalWithStart(**values)


async def test_with_no_run_it_starts_one_and_the_next_drive_delivers_the_signal(
    rt: SqliteRuntime,
) -> None:
    out = rt.signal_with_start(request())

    assert out.started_fresh
    assert out.signal_delivered
    assert await rt.run_until_blocked(out.exec_id) == RunState.Completed(
        output=[{"sku": "A1"}, True]
    )
    assert rt.describe(out.exec_id).workflow_id == "order-7"


async def test_the_request_reads_in_the_guides_field_order(rt: SqliteRuntime) -> None:
    out = rt.signal_with_start(
        SignalWithStart(
            "order",
            "order-7",
            {"sku": "A1"},
            P.ALLOW_DUPLICATE,
            "approve",
            True,
            "hook-42",
        )
    )

    assert out.started_fresh
    assert out.signal_delivered


async def test_a_running_run_is_signalled_and_its_input_is_ignored(
    rt: SqliteRuntime,
) -> None:
    first = rt.signal_with_start(request(signal_payload="wait-again"))
    await rt.run_until_blocked(first.exec_id)

    second = rt.signal_with_start(
        request(input="x" * MAX_PAYLOAD_BYTES, signal_payload="ok")
    )

    assert second == SignalWithStartOutcome(
        exec_id=first.exec_id, started_fresh=False, signal_delivered=True
    )
    assert await rt.run_until_blocked(first.exec_id) == RunState.Completed(
        output=[{"sku": "A1"}, "ok"]
    )
    assert run_count(rt) == 1


@pytest.mark.parametrize(
    "policy", [P.ALLOW_DUPLICATE, P.ALLOW_DUPLICATE_FAILED_ONLY, P.REJECT_DUPLICATE]
)
async def test_a_running_run_is_signalled_whatever_the_policy_but_terminate_if_running(
    rt: SqliteRuntime, policy: P
) -> None:
    running = rt.signal_with_start(request(signal_payload="wait-again"))

    out = rt.signal_with_start(request(reuse_policy=policy, signal_payload="ok"))

    assert out == SignalWithStartOutcome(
        exec_id=running.exec_id, started_fresh=False, signal_delivered=True
    )


async def test_terminate_if_running_replaces_the_running_run(rt: SqliteRuntime) -> None:
    prior = rt.signal_with_start(request(signal_payload="wait-again"))
    await rt.run_until_blocked(prior.exec_id)

    out = rt.signal_with_start(
        request(reuse_policy=P.TERMINATE_IF_RUNNING, signal_payload=2)
    )

    assert out.started_fresh
    assert out.signal_delivered
    last = rt.load_history(prior.exec_id)[-1]
    assert (last.type, last.attrs["reason"]) == (
        "WorkflowCancelled",
        "terminated by signal-with-start",
    )
    assert rt.outcome(prior.exec_id) == ExecutionOutcome.Terminated(
        state="CONTINUED_AS_NEW"
    )
    assert await rt.run_until_blocked(out.exec_id) == RunState.Completed(
        output=[{"sku": "A1"}, 2]
    )


async def test_a_completed_prior_is_replaced_and_its_result_stays_in_its_history(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    prior = rt.signal_with_start(request())
    await rt.run_until_blocked(prior.exec_id)
    closed_at = rt.describe(prior.exec_id).closed_at
    clock.advance("1m")

    out = rt.signal_with_start(request(input={"sku": "B2"}, signal_payload="second"))

    assert out.started_fresh
    assert out.signal_delivered
    assert rt.outcome(prior.exec_id) == ExecutionOutcome.Terminated(
        state="CONTINUED_AS_NEW"
    )
    assert rt.successor(prior.exec_id) == out.exec_id
    assert (
        rt.describe(prior.exec_id).closed_at == closed_at
    )  # a reseal does not move it
    last = rt.load_history(prior.exec_id)[-1]
    assert (last.type, last.attrs["output"]) == (
        "WorkflowCompleted",
        [{"sku": "A1"}, True],
    )
    assert await rt.run_until_blocked(prior.exec_id) == RunState.ContinuedAsNew(
        next=out.exec_id
    )
    assert await rt.run_until_blocked(out.exec_id) == RunState.Completed(
        output=[{"sku": "B2"}, "second"]
    )


async def test_a_running_run_with_a_pending_cancel_counts_as_cancelled(
    rt: SqliteRuntime,
) -> None:
    prior = rt.signal_with_start(request(signal_payload="wait-again"))
    await rt.run_until_blocked(prior.exec_id)
    request_cancel(rt, prior.exec_id, "user gave up")

    out = rt.signal_with_start(request(signal_payload="fresh"))

    assert out.started_fresh
    assert out.exec_id != prior.exec_id
    last = rt.load_history(prior.exec_id)[-1]
    assert (last.type, last.attrs["reason"]) == (
        "WorkflowCancelled",
        "terminated by signal-with-start",
    )
    assert rt.outcome(prior.exec_id) == ExecutionOutcome.Terminated(
        state="CONTINUED_AS_NEW"
    )


async def test_a_pending_cancel_under_reject_duplicate_refuses_and_writes_nothing(
    rt: SqliteRuntime,
) -> None:
    prior = rt.signal_with_start(request(signal_payload="wait-again"))
    await rt.run_until_blocked(prior.exec_id)
    request_cancel(rt, prior.exec_id, "user gave up")
    before = file_rows(rt)

    with pytest.raises(WorkflowAlreadyStarted) as refused:
        rt.signal_with_start(request(reuse_policy=P.REJECT_DUPLICATE))
    assert refused.value.exec_id == prior.exec_id
    assert file_rows(rt) == before


@pytest.mark.parametrize(
    ("policy", "starts"),
    [
        (P.ALLOW_DUPLICATE, True),
        (P.ALLOW_DUPLICATE_FAILED_ONLY, False),
        (P.REJECT_DUPLICATE, False),
        (P.TERMINATE_IF_RUNNING, True),
    ],
)
async def test_a_completed_prior_follows_the_start_matrix(
    rt: SqliteRuntime, policy: P, starts: bool
) -> None:
    prior = rt.signal_with_start(request())
    await rt.run_until_blocked(prior.exec_id)
    before = file_rows(rt)

    if not starts:
        with pytest.raises(WorkflowAlreadyStarted):
            rt.signal_with_start(request(reuse_policy=policy))
        assert file_rows(rt) == before  # no start, no stage, no reseal
        assert rt.outcome(prior.exec_id) == ExecutionOutcome.Completed(
            output=[{"sku": "A1"}, True]
        )
        return
    out = rt.signal_with_start(request(reuse_policy=policy))
    assert out.started_fresh
    assert out.signal_delivered


async def test_a_terminated_prior_frees_the_id_and_stays_terminated(
    rt: SqliteRuntime,
) -> None:
    prior = rt.signal_with_start(request(signal_payload="wait-again"))
    await rt.run_until_blocked(prior.exec_id)
    seal_as(rt, prior.exec_id, "TERMINATED", "stopped")

    out = rt.signal_with_start(request(reuse_policy=P.REJECT_DUPLICATE))

    assert out.started_fresh
    assert rt.outcome(prior.exec_id) == ExecutionOutcome.Terminated(state="TERMINATED")


async def test_a_key_is_deduped_across_every_run_of_the_id(rt: SqliteRuntime) -> None:
    first = rt.signal_with_start(
        request(
            workflow_name="session",
            workflow_id="s-1",
            input=0,
            signal_name="say",
            signal_payload="hi",
            idempotency_key="m-1",
        )
    )
    state = await rt.run_until_blocked(first.exec_id)
    assert isinstance(state, RunState.ContinuedAsNew)
    before = file_rows(rt)

    retry = rt.signal_with_start(
        request(
            workflow_name="session",
            workflow_id="s-1",
            input=0,
            signal_name="say",
            signal_payload="hi",
            idempotency_key="m-1",
        )
    )

    assert retry == SignalWithStartOutcome(
        exec_id=first.exec_id, started_fresh=False, signal_delivered=False
    )
    assert file_rows(rt) == before
    nxt = rt.signal_with_start(
        request(
            workflow_name="session",
            workflow_id="s-1",
            input=0,
            signal_name="say",
            signal_payload="bye",
            idempotency_key="m-2",
        )
    )
    assert nxt == SignalWithStartOutcome(
        exec_id=state.next, started_fresh=False, signal_delivered=True
    )
    assert await rt.run_until_blocked(state.next) == RunState.Completed(
        output=[1, "bye"]
    )
    # After the chain ended, a retry still starts nothing.
    again = rt.signal_with_start(
        request(
            workflow_name="session",
            workflow_id="s-1",
            input=0,
            signal_name="say",
            signal_payload="bye",
            idempotency_key="m-2",
        )
    )
    assert again.signal_delivered is False
    assert again.started_fresh is False
    assert run_count(rt) == 2


async def test_the_input_cap_applies_only_when_a_run_starts(rt: SqliteRuntime) -> None:
    before = file_rows(rt)

    with pytest.raises(PayloadTooLarge):
        rt.signal_with_start(request(input="x" * MAX_PAYLOAD_BYTES))
    assert file_rows(rt) == before


async def test_a_refused_request_writes_nothing(rt: SqliteRuntime) -> None:
    prior = rt.signal_with_start(request(signal_payload="wait-again"))
    await rt.run_until_blocked(prior.exec_id)
    before = file_rows(rt)

    with pytest.raises(BlankWorkflowId):
        rt.signal_with_start(request(workflow_id=" "))
    with pytest.raises(InvalidSignal):
        rt.signal_with_start(request(signal_name=""))
    with pytest.raises(InvalidSignal):
        rt.signal_with_start(request(idempotency_key="harvest.promise:1"))
    with pytest.raises(PayloadTooLarge):
        rt.signal_with_start(request(signal_payload="x" * MAX_PAYLOAD_BYTES))
    with pytest.raises(UnknownWorkflow):
        rt.signal_with_start(request(workflow_name="unregistered"))
    assert file_rows(rt) == before


async def test_an_error_after_the_replace_rolls_back_the_replace_and_the_start(
    rt: SqliteRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    prior = rt.signal_with_start(request(signal_payload="wait-again"))
    await rt.run_until_blocked(prior.exec_id)
    before = file_rows(rt)

    txn_class, storage_error = txn_class_of(rt)

    def disk_full(*_args: Any, **_kwargs: Any) -> bool:
        raise storage_error("database or disk is full")

    monkeypatch.setattr(txn_class, "stage_signal", disk_full)
    with pytest.raises(StorageError, match="disk is full"):
        rt.signal_with_start(request(reuse_policy=P.TERMINATE_IF_RUNNING))
    monkeypatch.undo()

    assert file_rows(rt) == before
    assert rt.outcome(prior.exec_id) == ExecutionOutcome.Running()
    assert run_count(rt) == 1


@pytest.mark.parametrize(
    ("policy", "starts"),
    [
        (P.ALLOW_DUPLICATE, True),
        (P.ALLOW_DUPLICATE_FAILED_ONLY, True),
        (P.REJECT_DUPLICATE, False),
        (P.TERMINATE_IF_RUNNING, True),
    ],
)
async def test_a_cancelled_prior_follows_the_start_matrix_and_is_resealed(
    rt: SqliteRuntime, policy: P, starts: bool
) -> None:
    prior = rt.signal_with_start(request(signal_payload="wait-again"))
    await rt.run_until_blocked(prior.exec_id)
    seal_as(rt, prior.exec_id, "CANCELLED", "user gave up")

    if not starts:
        with pytest.raises(WorkflowAlreadyStarted):
            rt.signal_with_start(request(reuse_policy=policy))
        assert rt.outcome(prior.exec_id) == ExecutionOutcome.Terminated(
            state="CANCELLED"
        )
        return
    out = rt.signal_with_start(request(reuse_policy=policy))
    assert out.started_fresh
    assert out.signal_delivered
    assert rt.outcome(prior.exec_id) == ExecutionOutcome.Terminated(
        state="CONTINUED_AS_NEW"
    )
    assert rt.successor(prior.exec_id) == out.exec_id


async def test_a_running_run_past_its_deadline_counts_as_timed_out(
    open_rt: Open, clock: ManualClock
) -> None:
    @workflow(name="order", execution_timeout="1h")
    async def timed_order(ctx: WorkflowContext, payload: Any) -> Any:
        return [payload, await ctx.wait_for_signal("approve")]

    rt = open_rt()
    rt.register_workflow(timed_order)
    prior = rt.signal_with_start(request(signal_name="other"))
    await rt.run_until_blocked(prior.exec_id)
    clock.advance("2h")  # its next drive would time it out

    out = rt.signal_with_start(request())

    assert out.started_fresh
    assert out.exec_id != prior.exec_id
    assert rt.outcome(prior.exec_id) == ExecutionOutcome.Terminated(
        state="CONTINUED_AS_NEW"
    )
    assert await rt.run_until_blocked(out.exec_id) == RunState.Completed(
        output=[{"sku": "A1"}, True]
    )
