"""Starts: the workflow-id reuse-policy matrix, StartOptions, and caps before anything persists."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from talking import event_types, file_rows, run_count, seal_as

from harvest_engine import (
    ActivityContext,
    ApplicationError,
    ExecutionId,
    ExecutionOutcome,
    InvalidSearchAttribute,
    ManualClock,
    PayloadTooDeep,
    PayloadTooLarge,
    RunState,
    SignalWithStart,
    SignalWithStartOutcome,
    SqliteRuntime,
    StartOptions,
    StartOutcome,
    Stored,
    UnknownWorkflow,
    WorkflowAlreadyStarted,
    WorkflowContext,
    WorkflowIdReusePolicy,
    activity,
    workflow,
)
from harvest_engine.payloads import MAX_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH

Open = Callable[..., SqliteRuntime]
P = WorkflowIdReusePolicy
KEY = "order-7"


@workflow(execution_timeout="1h")
async def order(ctx: WorkflowContext, payload: Any) -> Any:
    verdict = await ctx.wait_for_signal("finish")
    if verdict == "fail":
        raise ApplicationError("asked to fail", type="Asked", non_retryable=True)
    return {"input": payload, "verdict": verdict}


@workflow
async def sleeper(ctx: WorkflowContext, _: Any) -> str:
    await ctx.sleep("1h")
    return "woke"


@pytest.fixture
def rt(open_rt: Open) -> SqliteRuntime:
    runtime = open_rt()
    runtime.register_workflow(order)
    runtime.register_workflow(sleeper)
    return runtime


async def make_prior(rt: SqliteRuntime, clock: ManualClock, state: str) -> str:
    """A run of ("order", KEY) that ends up in `state`."""
    exec_id = rt.start_workflow_with_id("order", KEY, {"n": 1})
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="finish")
    if state == "COMPLETED":
        rt.send_signal(exec_id, "finish", "ok")
    elif state == "FAILED":
        rt.send_signal(exec_id, "finish", "fail")
    elif state == "TIMED_OUT":
        clock.advance("2h")
    elif state in ("CANCELLED", "TERMINATED"):
        seal_as(rt, exec_id, state, f"made {state.lower()} by the test")
    if state in ("COMPLETED", "FAILED", "TIMED_OUT"):
        await rt.run_until_blocked(exec_id)
    assert rt.describe(exec_id).state == state
    return str(exec_id)


# The matrix of the starts.py docstring and the README, row by row.
MATRIX: dict[str, dict[P, str]] = {
    "RUNNING": {
        P.ALLOW_DUPLICATE: "attach",
        P.ALLOW_DUPLICATE_FAILED_ONLY: "attach",
        P.REJECT_DUPLICATE: "refused",
        P.TERMINATE_IF_RUNNING: "replace",
    },
    "COMPLETED": {
        P.ALLOW_DUPLICATE: "fresh",
        P.ALLOW_DUPLICATE_FAILED_ONLY: "refused",
        P.REJECT_DUPLICATE: "refused",
        P.TERMINATE_IF_RUNNING: "fresh",
    },
    "FAILED": {
        P.ALLOW_DUPLICATE: "fresh",
        P.ALLOW_DUPLICATE_FAILED_ONLY: "fresh",
        P.REJECT_DUPLICATE: "refused",
        P.TERMINATE_IF_RUNNING: "fresh",
    },
    "TIMED_OUT": {
        P.ALLOW_DUPLICATE: "fresh",
        P.ALLOW_DUPLICATE_FAILED_ONLY: "fresh",
        P.REJECT_DUPLICATE: "refused",
        P.TERMINATE_IF_RUNNING: "fresh",
    },
    "CANCELLED": {
        P.ALLOW_DUPLICATE: "fresh",
        P.ALLOW_DUPLICATE_FAILED_ONLY: "fresh",
        P.REJECT_DUPLICATE: "refused",
        P.TERMINATE_IF_RUNNING: "fresh",
    },
    "TERMINATED": {
        P.ALLOW_DUPLICATE: "fresh",
        P.ALLOW_DUPLICATE_FAILED_ONLY: "fresh",
        P.REJECT_DUPLICATE: "fresh",
        P.TERMINATE_IF_RUNNING: "fresh",
    },
}
CASES = [
    (prior, policy, want)
    for prior, row in MATRIX.items()
    for policy, want in row.items()
]


@pytest.mark.parametrize(
    ("prior_state", "policy", "want"), CASES, ids=[f"{p}-{q.name}" for p, q, _ in CASES]
)
async def test_the_reuse_policy_matrix(
    rt: SqliteRuntime, clock: ManualClock, prior_state: str, policy: P, want: str
) -> None:
    prior = await make_prior(rt, clock, prior_state)
    before = file_rows(rt)

    if want == "refused":
        with pytest.raises(WorkflowAlreadyStarted) as refused:
            rt.start_workflow_with_reuse_policy("order", KEY, {"n": 2}, policy)
        assert refused.value.exec_id == ExecutionId(prior)
        assert refused.value.policy == policy.name
        assert file_rows(rt) == before
        return

    out = rt.start_workflow_with_reuse_policy("order", KEY, {"n": 2}, policy)
    assert isinstance(out, StartOutcome)
    if want == "attach":
        assert out == StartOutcome(exec_id=out.exec_id, started_fresh=False)
        assert str(out.exec_id) == prior
        assert file_rows(rt) == before  # the new input is discarded
        return
    assert out.started_fresh
    assert str(out.exec_id) != prior
    assert rt.describe(out.exec_id).input == Stored.Value({"n": 2})
    if want == "replace":
        assert rt.outcome(prior) == ExecutionOutcome.Terminated(
            state="CONTINUED_AS_NEW"
        )
        assert event_types(rt, prior)[-1] == "WorkflowCancelled"
        assert rt.successor(prior) == out.exec_id
    else:
        assert (
            rt.describe(prior).state == prior_state
        )  # a plain fresh start leaves it alone


@pytest.mark.parametrize("policy", list(P), ids=[p.name for p in P])
async def test_with_no_prior_every_policy_starts_fresh(
    rt: SqliteRuntime, policy: P
) -> None:
    out = rt.start_workflow_with_reuse_policy("order", KEY, None, policy)

    assert out.started_fresh
    assert rt.describe(out.exec_id).workflow_id == KEY


@pytest.mark.parametrize("policy", list(P), ids=[p.name for p in P])
@pytest.mark.parametrize("blank", ["", "   ", "\t"])
async def test_a_blank_workflow_id_has_no_reuse_key_so_every_start_is_fresh(
    rt: SqliteRuntime, policy: P, blank: str
) -> None:
    first = rt.start_workflow_with_reuse_policy("order", blank, 1, policy)
    second = rt.start_workflow_with_reuse_policy("order", blank, 2, policy)

    assert first.started_fresh
    assert second.started_fresh
    assert first.exec_id != second.exec_id
    assert rt.describe(first.exec_id).workflow_id == str(first.exec_id)


async def test_terminate_if_running_replaces_the_run_in_one_transaction(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    prior = rt.start_workflow_with_reuse_policy(
        "sleeper", "nap", None, P.ALLOW_DUPLICATE
    )
    assert await rt.run_until_blocked(prior.exec_id) == RunState.WaitingTimer()
    assert rt.store.timers(str(prior.exec_id))

    fresh = rt.start_workflow_with_reuse_policy(
        "sleeper", "nap", None, P.TERMINATE_IF_RUNNING
    )

    assert fresh.started_fresh
    history = rt.load_history(prior.exec_id)
    assert history[-1].type == "WorkflowCancelled"
    assert history[-1].attrs["reason"] == "terminated by a TERMINATE_IF_RUNNING start"
    assert rt.store.timers(str(prior.exec_id)) == []  # the seal dropped its open rows
    assert rt.outcome(prior.exec_id) == ExecutionOutcome.Terminated(
        state="CONTINUED_AS_NEW"
    )
    assert await rt.run_until_blocked(prior.exec_id) == RunState.ContinuedAsNew(
        next=fresh.exec_id
    )
    # The fresh run's timer counts from its first drive (guide §7).
    assert await rt.run_until_blocked(fresh.exec_id) == RunState.WaitingTimer()
    clock.advance("2h")
    assert await rt.run_until_blocked(fresh.exec_id) == RunState.Completed(
        output="woke"
    )


async def test_start_with_id_attaches_like_allow_duplicate_and_discards_the_new_input(
    rt: SqliteRuntime,
) -> None:
    first = rt.start_workflow_with_id("order", KEY, {"n": 1})
    again = rt.start_workflow_with_id("order", KEY, {"n": 99})
    policy = rt.start_workflow_with_reuse_policy(
        "order", KEY, {"n": 100}, P.ALLOW_DUPLICATE
    )

    assert again == first == policy.exec_id
    assert not policy.started_fresh
    assert rt.describe(first).input == Stored.Value({"n": 1})
    assert run_count(rt) == 1


async def test_a_retried_webhook_does_not_repeat_side_effects(open_rt: Open) -> None:
    charged: list[str] = []

    @activity
    def charge(ctx: ActivityContext, amount: int) -> str:
        charged.append(ctx.idempotency_key())
        return f"charged {amount}"

    @workflow
    async def checkout(ctx: WorkflowContext, amount: int) -> str:
        await ctx.wait_for_signal("paid")
        return str(await ctx.execute_activity(charge, amount))

    rt = open_rt()
    rt.register_workflow(checkout)
    rt.register_activity(charge)
    # Delivered twice while the run is open: the start attaches, the key dedupes.
    for _ in range(2):
        exec_id = rt.start_workflow_with_id("checkout", "cart-1", 500)
        rt.send_signal_idempotent(exec_id, "paid", True, "evt-1")
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output="charged 500"
    )
    # Delivered again after the run ended: signal-with-start probes the key
    # across every run of the id, so it starts nothing and stages nothing.
    again = rt.signal_with_start(
        SignalWithStart(
            "checkout",
            "cart-1",
            500,
            signal_name="paid",
            signal_payload=True,
            idempotency_key="evt-1",
        )
    )
    await rt.run_until_idle()

    assert again == SignalWithStartOutcome(
        exec_id=exec_id, started_fresh=False, signal_delivered=False
    )
    assert len(charged) == 1
    assert event_types(rt, exec_id).count("SignalReceived") == 1
    assert run_count(rt) == 1


async def test_a_policy_can_be_named_by_its_text(rt: SqliteRuntime) -> None:
    rt.start_workflow_with_id("order", KEY, None)

    with pytest.raises(WorkflowAlreadyStarted):
        rt.start_workflow_with_reuse_policy("order", KEY, None, "reject_duplicate")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown workflow id reuse policy"):
        rt.start_workflow_with_reuse_policy("order", KEY, None, "SOMETIMES")  # type: ignore[arg-type]


async def test_an_oversized_or_too_deep_input_is_refused_before_anything_persists(
    rt: SqliteRuntime,
) -> None:
    running = rt.start_workflow_with_id("order", KEY, None)
    before = file_rows(rt)
    deep: Any = 0
    for _ in range(MAX_PAYLOAD_DEPTH + 1):
        deep = [deep]

    for policy in P:
        with pytest.raises(PayloadTooLarge):
            rt.start_workflow_with_reuse_policy(
                "order", KEY, "x" * MAX_PAYLOAD_BYTES, policy
            )
        with pytest.raises(PayloadTooDeep):
            rt.start_workflow_with_reuse_policy("order", "other", deep, policy)

    assert file_rows(rt) == before
    assert rt.outcome(running) == ExecutionOutcome.Running()


async def test_an_unregistered_workflow_is_refused_before_anything_persists(
    rt: SqliteRuntime,
) -> None:
    before = file_rows(rt)

    with pytest.raises(UnknownWorkflow):
        rt.start_workflow_with_reuse_policy("nope", KEY, None, P.TERMINATE_IF_RUNNING)
    assert file_rows(rt) == before


# -- StartOptions --------------------------------------------------------------------


async def test_options_store_the_memo_and_the_first_search_attributes(
    rt: SqliteRuntime,
) -> None:
    out = rt.start_workflow_with_options(
        "order",
        {"id": 7},
        StartOptions(
            workflow_id=KEY,
            memo={"owner": "ops"},
            search_attributes={"tenant": "acme", "tier": 2},
        ),
    )

    detail = rt.describe(out.exec_id)
    assert out.started_fresh
    assert detail.workflow_id == KEY
    assert detail.memo == Stored.Value({"owner": "ops"})
    assert detail.search_attributes == Stored.Value({"tenant": "acme", "tier": 2})


async def test_a_start_that_returns_an_existing_run_leaves_its_memo_and_attributes(
    rt: SqliteRuntime,
) -> None:
    first = rt.start_workflow_with_options(
        "order",
        1,
        StartOptions(workflow_id=KEY, memo="first", search_attributes={"a": 1}),
    )
    again = rt.start_workflow_with_options(
        "order",
        2,
        StartOptions(workflow_id=KEY, memo="second", search_attributes={"a": 2}),
    )

    assert again == StartOutcome(exec_id=first.exec_id, started_fresh=False)
    detail = rt.describe(first.exec_id)
    assert detail.memo == Stored.Value("first")
    assert detail.search_attributes == Stored.Value({"a": 1})


async def test_options_apply_their_reuse_policy(rt: SqliteRuntime) -> None:
    rt.start_workflow_with_options("order", 1, StartOptions(workflow_id=KEY))

    with pytest.raises(WorkflowAlreadyStarted):
        rt.start_workflow_with_options(
            "order", 2, StartOptions(workflow_id=KEY, reuse_policy=P.REJECT_DUPLICATE)
        )


async def test_options_without_an_id_start_a_run_keyed_by_its_own_id(
    rt: SqliteRuntime,
) -> None:
    out = rt.start_workflow_with_options("order", 1, StartOptions())

    detail = rt.describe(out.exec_id)
    assert out.started_fresh
    assert detail.workflow_id == str(out.exec_id)
    assert detail.memo == Stored.Null()
    assert detail.search_attributes == Stored.Null()


async def test_a_bad_memo_or_attribute_set_persists_nothing(rt: SqliteRuntime) -> None:
    before = file_rows(rt)
    deep: Any = "leaf"
    for _ in range(MAX_PAYLOAD_DEPTH + 1):
        deep = {"d": deep}

    with pytest.raises(PayloadTooDeep):
        rt.start_workflow_with_options(
            "order", 1, StartOptions(workflow_id=KEY, memo=deep)
        )
    with pytest.raises(PayloadTooLarge):
        rt.start_workflow_with_options(
            "order", 1, StartOptions(workflow_id=KEY, memo="m" * MAX_PAYLOAD_BYTES)
        )
    with pytest.raises(InvalidSearchAttribute):
        rt.start_workflow_with_options(
            "order",
            1,
            StartOptions(workflow_id=KEY, search_attributes=["not", "a", "map"]),  # type: ignore[arg-type]
        )
    assert file_rows(rt) == before
