"""Keyed signals and signals by workflow id: dedupe, scope, check order, and floods bounded by the caps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from talking import event_types, file_rows, seal_as

from harvest_engine import (
    BlankWorkflowId,
    ExecutionId,
    ExecutionNotFound,
    ExecutionOutcome,
    HistoryCaps,
    InvalidSignal,
    PayloadTooLarge,
    RunState,
    SignalDelivery,
    SqliteRuntime,
    WorkflowContext,
    WorkflowIdNotFound,
    WorkflowIdReusePolicy,
    WorkflowNotRunning,
    workflow,
)
from harvest_engine.payloads import MAX_PAYLOAD_BYTES

Open = Callable[..., SqliteRuntime]


@workflow
async def approvals(ctx: WorkflowContext, wanted: int) -> list[Any]:
    got: list[Any] = []
    while len(got) < wanted:
        got.append(await ctx.wait_for_signal("approve"))
    return got


@workflow
async def chain(ctx: WorkflowContext, step: int) -> list[Any]:
    value = await ctx.wait_for_signal("go")
    if step < 1:
        ctx.continue_as_new(step + 1)
    return [step, value]


@workflow
async def counter(ctx: WorkflowContext, _: Any) -> int:
    seen = {"n": 0}
    ctx.register_signal_handler("tick", lambda _p: seen.__setitem__("n", seen["n"] + 1))
    await ctx.wait_for_signal("never")
    return seen["n"]


@pytest.fixture
def rt(open_rt: Open) -> SqliteRuntime:
    runtime = open_rt()
    for wf in (approvals, chain, counter):
        runtime.register_workflow(wf)
    return runtime


def received(rt: SqliteRuntime, exec_id: ExecutionId | str) -> list[Any]:
    return [
        e.attrs["payload"]
        for e in rt.load_history(exec_id)
        if e.type == "SignalReceived"
    ]


# -- send_signal_idempotent -------------------------------------------------------


async def test_a_keyed_signal_is_staged_once_and_reaches_the_run_once(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow("approvals", 2)

    assert rt.send_signal_idempotent(exec_id, "approve", "first", "hook-42") is True
    assert rt.send_signal_idempotent(exec_id, "approve", "again", "hook-42") is False
    assert rt.send_signal_idempotent(exec_id, "approve", "second", "hook-43") is True
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output=["first", "second"]
    )
    assert received(rt, exec_id) == ["first", "second"]


async def test_the_key_still_dedupes_after_delivery_and_after_the_run_ends(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow("approvals", 1)
    rt.send_signal_idempotent(exec_id, "approve", 1, "k")
    await rt.run_until_blocked(exec_id)
    assert rt.outcome(exec_id) == ExecutionOutcome.Completed(output=[1])
    before = file_rows(rt)

    # The key probe runs before the state check: a retry is False, not an error.
    assert rt.send_signal_idempotent(exec_id, "approve", 1, "k") is False
    with pytest.raises(WorkflowNotRunning):
        rt.send_signal_idempotent(exec_id, "approve", 1, "a-new-key")
    assert file_rows(rt) == before


async def test_a_seal_keeps_keyed_rows_and_drops_unkeyed_ones(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow("approvals", 5)
    await rt.run_until_blocked(exec_id)
    rt.send_signal_idempotent(exec_id, "approve", "keyed", "k1")
    rt.send_signal(exec_id, "approve", "plain")

    seal_as(rt, exec_id, "TERMINATED", "stopped by the test")

    assert rt.store.staged_signals(str(exec_id)) == []
    assert rt.send_signal_idempotent(exec_id, "approve", "keyed", "k1") is False
    with pytest.raises(WorkflowNotRunning):
        rt.send_signal(exec_id, "approve", "plain")


@pytest.mark.parametrize("seal", ["terminate", "cancel", "replace"])
async def test_the_real_seals_keep_keyed_rows_across_a_reopen(
    open_rt: Open, seal: str
) -> None:
    rt = open_rt()
    rt.register_workflow(approvals)
    exec_id = rt.start_workflow_with_id("approvals", "sealed", 5)
    await rt.run_until_blocked(exec_id)
    rt.send_signal_idempotent(exec_id, "approve", "keyed", "k1")
    rt.send_signal(exec_id, "approve", "plain")
    if seal == "terminate":
        rt.terminate(exec_id, "stopped")
    elif seal == "cancel":
        rt.cancel(exec_id, "stopped")
        assert await rt.run_until_blocked(exec_id) == RunState.Cancelled(
            reason="stopped"
        )
    else:
        rt.start_workflow_with_reuse_policy(
            "approvals", "sealed", 1, WorkflowIdReusePolicy.TERMINATE_IF_RUNNING
        )
    rt.close()
    rt = open_rt()

    assert rt.store.staged_signals(str(exec_id)) == []
    assert rt.send_signal_idempotent(exec_id, "approve", "keyed", "k1") is False
    assert rt.send_signal_by_workflow_id("approvals", "sealed", "approve", 1, "k1") == (
        SignalDelivery(exec_id=exec_id, delivered=False)
    )


async def test_a_key_is_scoped_to_the_run_that_holds_it(rt: SqliteRuntime) -> None:
    first = rt.start_workflow("approvals", 1)
    second = rt.start_workflow("approvals", 1)

    assert rt.send_signal_idempotent(first, "approve", "a", "shared") is True
    assert rt.send_signal_idempotent(second, "approve", "b", "shared") is True


@pytest.mark.parametrize("empty", [None, ""])
async def test_an_empty_key_is_no_key(rt: SqliteRuntime, empty: str | None) -> None:
    exec_id = rt.start_workflow("approvals", 2)

    assert rt.send_signal_idempotent(exec_id, "approve", "a", empty) is True
    assert rt.send_signal_idempotent(exec_id, "approve", "b", empty) is True
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output=["a", "b"])


async def test_a_promise_key_is_refused_and_nothing_is_staged(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow("approvals", 1)
    before = file_rows(rt)

    with pytest.raises(InvalidSignal, match="reserved"):
        rt.send_signal_idempotent(exec_id, "approve", True, "harvest.promise:7")
    with pytest.raises(InvalidSignal):
        rt.send_signal_by_workflow_id(
            "approvals", str(exec_id), "approve", True, "harvest.promise:7"
        )
    assert file_rows(rt) == before


async def test_an_unknown_run_is_execution_not_found(rt: SqliteRuntime) -> None:
    with pytest.raises(ExecutionNotFound):
        rt.send_signal_idempotent(ExecutionId.new(), "approve", True, "k")


async def test_an_unknown_run_is_reported_before_a_bad_signal_name_or_key(
    rt: SqliteRuntime,
) -> None:
    # The row is read in the signal's transaction, after the name and key
    # checks; an unknown run still wins over them, as when it was read first.
    unknown = ExecutionId.new()
    with pytest.raises(ExecutionNotFound) as raised:
        rt.send_signal(unknown, "  ", True)
    assert raised.value.exec_id == unknown
    with pytest.raises(ExecutionNotFound):
        rt.send_signal_idempotent(unknown, "approve", True, "harvest.promise:1")
    exec_id = rt.start_workflow("approvals", 1)
    with pytest.raises(InvalidSignal):
        rt.send_signal(exec_id, "  ", True)


async def test_a_duplicate_is_answered_before_its_payload_is_judged(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow("approvals", 1)
    rt.send_signal_idempotent(exec_id, "approve", "small", "k")

    assert (
        rt.send_signal_idempotent(exec_id, "approve", "x" * MAX_PAYLOAD_BYTES, "k")
        is False
    )
    with pytest.raises(PayloadTooLarge):
        rt.send_signal_idempotent(exec_id, "approve", "x" * MAX_PAYLOAD_BYTES, "k2")


# -- send_signal_by_workflow_id ----------------------------------------------------


async def test_a_signal_by_workflow_id_reaches_the_running_run(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow_with_id("approvals", "order-7", 1)

    delivery = rt.send_signal_by_workflow_id("approvals", "order-7", "approve", "yes")

    assert delivery == SignalDelivery(exec_id=exec_id, delivered=True)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output=["yes"])


async def test_a_signal_by_id_follows_continue_as_new_and_dedupes_across_the_chain(
    rt: SqliteRuntime,
) -> None:
    first = rt.start_workflow_with_id("chain", "c-1", 0)
    assert rt.send_signal_by_workflow_id(
        "chain", "c-1", "go", "a", "k1"
    ) == SignalDelivery(exec_id=first, delivered=True)
    state = await rt.run_until_blocked(first)
    assert isinstance(state, RunState.ContinuedAsNew)
    second = state.next

    # The first run holds k1 (delivered, now sealed): the chain still dedupes it.
    assert rt.send_signal_by_workflow_id(
        "chain", "c-1", "go", "again", "k1"
    ) == SignalDelivery(exec_id=first, delivered=False)
    assert rt.send_signal_by_workflow_id(
        "chain", "c-1", "go", "b", "k2"
    ) == SignalDelivery(exec_id=second, delivered=True)
    assert await rt.run_until_blocked(second) == RunState.Completed(output=[1, "b"])
    # By exec id the key is scoped to the run: the sealed first run refuses a new key.
    with pytest.raises(WorkflowNotRunning):
        rt.send_signal_idempotent(first, "go", "late", "k3")


async def test_by_id_errors(rt: SqliteRuntime) -> None:
    with pytest.raises(BlankWorkflowId):
        rt.send_signal_by_workflow_id("approvals", "  ", "approve", True)
    with pytest.raises(WorkflowIdNotFound):
        rt.send_signal_by_workflow_id("approvals", "nobody", "approve", True)
    done = rt.start_workflow_with_id("approvals", "done", 1)
    rt.send_signal(done, "approve", 1)
    await rt.run_until_blocked(done)
    with pytest.raises(WorkflowNotRunning) as closed:
        rt.send_signal_by_workflow_id("approvals", "done", "approve", True)
    assert closed.value.exec_id == done


async def test_by_id_checks_run_in_the_guides_order(rt: SqliteRuntime) -> None:
    done = rt.start_workflow_with_id("approvals", "done", 1)
    rt.send_signal_idempotent(done, "approve", 1, "k")
    await rt.run_until_blocked(done)
    huge = "x" * MAX_PAYLOAD_BYTES

    # blank id before the key rules
    with pytest.raises(BlankWorkflowId):
        rt.send_signal_by_workflow_id(
            "approvals", "", "approve", True, "harvest.promise:1"
        )
    # key rules before the run lookup
    with pytest.raises(InvalidSignal):
        rt.send_signal_by_workflow_id("approvals", "nobody", "", True)
    # the chain key probe before the run state and the payload cap
    assert rt.send_signal_by_workflow_id("approvals", "done", "approve", huge, "k") == (
        SignalDelivery(exec_id=done, delivered=False)
    )
    # the run state before the payload cap
    with pytest.raises(WorkflowNotRunning):
        rt.send_signal_by_workflow_id("approvals", "done", "approve", huge, "k2")
    running = rt.start_workflow_with_id("approvals", "open", 1)
    with pytest.raises(PayloadTooLarge):
        rt.send_signal_by_workflow_id("approvals", "open", "approve", huge)
    assert rt.store.staged_signals(str(running)) == []


# -- floods ------------------------------------------------------------------------


async def test_a_signal_flood_fails_the_run_at_the_cap_without_loading_past_it(
    rt: SqliteRuntime,
) -> None:
    rt.set_history_caps(HistoryCaps(max_events=20, max_bytes=None))
    exec_id = rt.start_workflow("counter", None)
    await rt.run_until_blocked(exec_id)
    for n in range(200):
        rt.send_signal_idempotent(exec_id, "tick", n, f"t{n}")

    state = await rt.run_until_blocked(exec_id)

    assert isinstance(state, RunState.Failed)
    assert state.error.type == "HistoryCapReached"
    assert event_types(rt, exec_id) == ["WorkflowStarted", "WorkflowFailed"]
    # keyed rows outlive the seal, so a retried tick is still a duplicate
    assert rt.send_signal_idempotent(exec_id, "tick", 0, "t0") is False


async def test_a_flood_of_large_signals_is_loaded_only_up_to_the_byte_cap_and_fails_the_run(
    rt: SqliteRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Guide §8: the history caps bound the ingest, the byte cap included. The
    # byte count is the stored history when a decision starts (§7), so the
    # decision that crosses it commits; the drive goes on and the next
    # cycle fails the run at the cap. No read loads the whole flood.
    from harvest_engine.store.sql.reads import Reads

    rt.set_history_caps(HistoryCaps(max_events=None, max_bytes=10_000))
    exec_id = rt.start_workflow("counter", None)
    await rt.run_until_blocked(exec_id)
    for n in range(100):
        rt.send_signal(exec_id, "tick", f"{n:04d}" + "x" * 996)
    loaded: list[int] = []

    def counting(real: Callable[..., Any]) -> Callable[..., Any]:
        def count(*args: Any) -> Any:
            rows = real(*args)
            loaded.append(len(rows[0]))
            return rows

        return count

    # The read both stores share (the test runs on both).
    monkeypatch.setattr(
        Reads, "staged_signals_read", counting(Reads.staged_signals_read)
    )

    state = await rt.run_until_blocked(exec_id)

    assert isinstance(state, RunState.Failed)
    assert state.error.type == "HistoryCapReached"
    assert max(loaded) <= 11  # about 10,000 bytes of 1,000-byte payloads, never 100
    assert event_types(rt, exec_id)[-1] == "WorkflowFailed"
    assert len(received(rt, exec_id)) < 12


async def test_the_pollers_take_a_run_over_its_byte_cap_with_signals_staged_to_the_cap(
    rt: SqliteRuntime,
) -> None:
    rt.set_history_caps(HistoryCaps(max_events=None, max_bytes=10_000))
    exec_id = rt.start_workflow("approvals", 1_000)
    await rt.run_until_blocked(exec_id)
    for _ in range(30):
        rt.send_signal(exec_id, "approve", "x" * 1_000)

    # The first cycle crosses the cap (allowed) and marks the run for another
    # decision, which meets the cap with the rest of the flood still staged.
    await rt.run_until_idle()

    state = rt.outcome(exec_id)
    assert isinstance(state, ExecutionOutcome.Failed)
    assert state.error.type == "HistoryCapReached"


async def test_continue_as_new_moves_an_undelivered_keyed_row_to_the_successor(
    rt: SqliteRuntime,
) -> None:
    first = rt.start_workflow_with_id("chain", "c-2", 0)
    await rt.run_until_blocked(first)
    # Room for three signals: the hand-off replays three, the fourth is backlog.
    rt.set_history_caps(HistoryCaps(max_events=4, max_bytes=None))
    for n, key in enumerate(["k0", None, "k2", "k3"]):
        rt.send_signal_idempotent(first, "go", n, key)

    state = await rt.run_until_blocked(first)

    assert isinstance(state, RunState.ContinuedAsNew)
    successor = state.next
    assert received(rt, first) == [0, 1, 2]
    assert [s.idempotency_key for s in rt.store.staged_signals(str(successor))] == [
        "k3"
    ]
    # The key moved with its row: the old run no longer holds it.
    with pytest.raises(WorkflowNotRunning):
        rt.send_signal_idempotent(first, "go", 3, "k3")
    assert rt.send_signal_idempotent(successor, "go", 3, "k3") is False
    assert rt.send_signal_by_workflow_id(
        "chain", "c-2", "go", 3, "k3"
    ) == SignalDelivery(exec_id=successor, delivered=False)
    rt.set_history_caps(HistoryCaps())
    assert await rt.run_until_blocked(successor) == RunState.Completed(output=[1, 3])
