"""What workflow code reads about its own run: memo, search attributes, history length.

All plain calls; each answers what the run had at that point of its code, on
a live drive and on every replay after a reopen alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harvest_engine import (
    ExecutionOutcome,
    RunState,
    SqliteRuntime,
    StartOptions,
    Stored,
    WorkflowContext,
    WorkflowPanicked,
    workflow,
)

Open = Callable[..., SqliteRuntime]


@workflow
async def annotates(ctx: WorkflowContext, _: Any = None) -> list[Any]:
    seen = [ctx.memo()]
    ctx.upsert_memo({"stage": "checking", "owner": None, "tries": 1})
    seen.append(ctx.memo())
    await ctx.wait_for_signal("go")
    ctx.upsert_memo({"stage": "done"})
    seen.append(ctx.memo())
    return seen


@workflow
async def tags(ctx: WorkflowContext, _: Any = None) -> list[Any]:
    seen = [ctx.search_attributes()]
    ctx.upsert_search_attrs({"tier": 2})
    seen.append(ctx.search_attributes())
    await ctx.wait_for_signal("go")
    ctx.upsert_search_attrs({"tenant": None})
    seen.append(ctx.search_attributes())
    return seen


@workflow
async def counts(ctx: WorkflowContext, _: Any = None) -> list[int]:
    lengths = [ctx.history_length()]
    await ctx.side_effect(lambda: 1)
    lengths.append(ctx.history_length())
    await ctx.wait_for_signal("go")
    lengths.append(ctx.history_length())
    return lengths


@workflow
async def hands_over(ctx: WorkflowContext, n: int) -> Any:
    if n > 0:
        return [ctx.memo(), ctx.search_attributes()]
    ctx.upsert_memo({"round": 1})
    ctx.upsert_search_attrs({"stage": "second"})
    ctx.continue_as_new(n + 1)


def opened(open_rt: Open) -> SqliteRuntime:
    rt = open_rt()
    for wf in (annotates, tags, counts, hands_over):
        rt.register_workflow(wf)
    return rt


async def park_then_finish_after_a_reopen(
    open_rt: Open, name: str, options: StartOptions | None = None
) -> tuple[SqliteRuntime, str, ExecutionOutcome]:
    rt = opened(open_rt)
    if options is None:
        exec_id = str(rt.start_workflow(name))
    else:
        exec_id = str(rt.start_workflow_with_options(name, None, options).exec_id)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="go")
    rt.close()
    rt = opened(open_rt)
    rt.send_signal(exec_id, "go")
    await rt.run_until_blocked(exec_id)
    return rt, exec_id, rt.outcome(exec_id)


async def test_upsert_memo_merges_removes_none_keys_and_replays_the_same(
    open_rt: Open,
) -> None:
    options = StartOptions(memo={"owner": "ana", "note": "rush"})

    rt, exec_id, outcome = await park_then_finish_after_a_reopen(
        open_rt, "annotates", options
    )

    assert outcome == ExecutionOutcome.Completed(
        output=[
            {"owner": "ana", "note": "rush"},
            {"note": "rush", "stage": "checking", "tries": 1},
            {"note": "rush", "stage": "done", "tries": 1},
        ]
    )
    assert rt.describe(exec_id).memo == Stored.Value(
        {"note": "rush", "stage": "done", "tries": 1}
    )
    upserts = [e.attrs for e in rt.load_history(exec_id) if e.type == "MemoUpserted"]
    assert upserts == [
        {"patch": {"stage": "checking", "owner": None, "tries": 1}},
        {"patch": {"stage": "done"}},
    ]


async def test_the_memo_is_visible_in_describe_while_the_run_waits(
    open_rt: Open,
) -> None:
    rt = opened(open_rt)
    exec_id = rt.start_workflow("annotates")

    await rt.run_until_blocked(exec_id)

    assert rt.describe(exec_id).memo == Stored.Value({"stage": "checking", "tries": 1})


async def test_a_memo_that_is_not_an_object_reads_under_value(open_rt: Open) -> None:
    rt, exec_id, outcome = await park_then_finish_after_a_reopen(
        open_rt, "annotates", StartOptions(memo="plain")
    )

    assert isinstance(outcome, ExecutionOutcome.Completed)
    assert outcome.output[0] == {"value": "plain"}
    assert rt.describe(exec_id).memo == Stored.Value(
        {"value": "plain", "stage": "done", "tries": 1}
    )


async def test_search_attributes_show_the_start_ones_and_the_code_upserts(
    open_rt: Open,
) -> None:
    options = StartOptions(search_attributes={"tenant": "acme"})

    _, _, outcome = await park_then_finish_after_a_reopen(open_rt, "tags", options)

    assert outcome == ExecutionOutcome.Completed(
        output=[{"tenant": "acme"}, {"tenant": "acme", "tier": 2}, {"tier": 2}]
    )


async def test_history_length_counts_the_events_at_that_point_on_replay_too(
    open_rt: Open,
) -> None:
    rt, exec_id, outcome = await park_then_finish_after_a_reopen(open_rt, "counts")

    # WorkflowStarted; then SideEffectRecorded; then SignalReceived.
    assert outcome == ExecutionOutcome.Completed(output=[1, 2, 3])
    history = rt.load_history(exec_id)
    assert [e.type for e in history[:3]] == [
        "WorkflowStarted",
        "SideEffectRecorded",
        "SignalReceived",
    ]


async def test_a_successor_starts_with_the_memo_and_attributes_upserted_just_before(
    open_rt: Open,
) -> None:
    rt = opened(open_rt)
    first = rt.start_workflow("hands_over", 0)

    state = await rt.run_until_blocked(first)

    assert isinstance(state, RunState.ContinuedAsNew)
    assert await rt.run_until_blocked(state.next) == RunState.Completed(
        output=[{"round": 1}, {"stage": "second"}]
    )
    assert rt.describe(state.next).memo == Stored.Value({"round": 1})


@pytest.mark.parametrize("patch", [["a"], {1: "x"}, {"": 1}])
async def test_a_memo_patch_that_is_not_a_text_keyed_dict_is_a_bug(
    open_rt: Open, patch: Any
) -> None:
    @workflow(name="bad_memo")
    async def bad_memo(ctx: WorkflowContext, _: Any = None) -> None:
        ctx.upsert_memo(patch)

    rt = opened(open_rt)
    rt.register_workflow(bad_memo)
    exec_id = rt.start_workflow("bad_memo")

    with pytest.raises(WorkflowPanicked):
        await rt.run_until_blocked(exec_id)
    assert rt.describe(exec_id).memo == Stored.Null()
    assert "MemoUpserted" not in [e.type for e in rt.load_history(exec_id)]
