"""Listing through SqliteRuntime: start options, per-cycle upserts, successors keep them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ExecutionFilter,
    InvalidFilter,
    InvalidSearchAttribute,
    RunState,
    SqliteRuntime,
    StartOptions,
    Stored,
    WorkflowContext,
    workflow,
)

if TYPE_CHECKING:
    from tests.stores import OpenReader

Open = Callable[..., SqliteRuntime]


@workflow
async def staged(ctx: WorkflowContext, _: Any) -> str:
    ctx.upsert_search_attrs({"stage": "paid", "tier": 2})
    await ctx.wait_for_signal("ship")
    ctx.upsert_search_attrs({"stage": "shipped"})
    return "done"


@workflow
async def untagged(ctx: WorkflowContext, _: Any) -> str:
    ctx.upsert_search_attrs({"stage": "paid", "tier": 2, "rush": True})
    ctx.upsert_search_attrs({"tier": None})
    await ctx.wait_for_signal("ship")
    ctx.upsert_search_attrs({"stage": None, "never": None})
    return "done"


@workflow
async def chain(ctx: WorkflowContext, hops: int) -> int:
    if hops:
        ctx.continue_as_new(hops - 1)
    return await ctx.wait_for_signal("stop")


@workflow
async def nul_tagger(ctx: WorkflowContext, _: Any) -> str:
    try:
        ctx.upsert_search_attrs({"stage": "a\x00b"})
    except InvalidSearchAttribute as exc:
        return str(exc)
    return "stored"


def only(rt: SqliteRuntime, flt: ExecutionFilter) -> list[str]:
    return [str(r.exec_id) for r in rt.list_executions(flt).executions]


async def test_upserts_merge_into_the_row_and_filters_see_them(
    open_rt: Open, open_reader: OpenReader
) -> None:
    rt = open_rt()
    rt.register_workflow(staged)
    started = rt.start_workflow_with_options(
        "staged",
        None,
        StartOptions(
            workflow_id="order-7",
            memo={"owner": "ops"},
            search_attributes={"tenant": "acme"},
        ),
    )
    exec_id = started.exec_id
    await rt.run_until_blocked(exec_id)
    paid = (
        ExecutionFilter()
        .search_attribute("stage", "paid")
        .search_attribute("tier", 2.0)
    )
    assert only(rt, paid) == [str(exec_id)]
    (run,) = rt.list_executions(ExecutionFilter().workflow_id("order-7")).executions
    assert run.memo == Stored.Value({"owner": "ops"})
    assert run.search_attributes == Stored.Value(
        {"tenant": "acme", "stage": "paid", "tier": 2}
    )
    rt.send_signal(exec_id, "ship", None)
    await rt.run_until_blocked(exec_id)
    assert only(rt, ExecutionFilter().search_attribute("stage", "shipped")) == [
        str(exec_id)
    ]
    assert only(rt, paid) == []
    with open_reader() as reader:
        assert reader.describe(exec_id).output == Stored.Value("done")


async def test_an_upsert_of_none_removes_the_key(open_rt: Open) -> None:
    rt = open_rt()
    rt.register_workflow(untagged)
    exec_id = rt.start_workflow_with_options(
        "untagged", None, StartOptions(search_attributes={"tenant": "acme"})
    ).exec_id
    await rt.run_until_blocked(exec_id)
    assert rt.describe(exec_id).search_attributes == Stored.Value(
        {"tenant": "acme", "stage": "paid", "rush": True}
    )
    assert only(rt, ExecutionFilter().search_attribute("tier", None)) == []
    rt.send_signal(exec_id, "ship", None)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="done")
    assert rt.describe(exec_id).search_attributes == Stored.Value(
        {"tenant": "acme", "rush": True}
    )
    assert only(rt, ExecutionFilter().search_attribute("stage", None)) == []


async def test_a_successor_keeps_the_memo_and_search_attributes(open_rt: Open) -> None:
    rt = open_rt()
    rt.register_workflow(chain)
    first = rt.start_workflow_with_options(
        "chain", 1, StartOptions(memo="m", search_attributes={"team": "ops"})
    ).exec_id
    await rt.run_until_idle()
    newest = rt.list_executions(ExecutionFilter().state("RUNNING")).executions[0]
    assert newest.exec_id != first
    assert newest.memo == Stored.Value("m")
    assert newest.search_attributes == Stored.Value({"team": "ops"})


async def test_visit_passes_payloads_and_returns_the_next_cursor(open_rt: Open) -> None:
    rt = open_rt()
    rt.register_workflow(chain)
    for n in range(3):
        rt.start_workflow_with_options("chain", 0, StartOptions(workflow_id=f"c{n}"))
    inputs: list[Any] = []
    cursor = rt.visit_executions(
        ExecutionFilter().limit(2), lambda d: inputs.append(d.input)
    )
    assert inputs == [Stored.Value(0), Stored.Value(0)]
    assert cursor is not None
    assert rt.visit_executions(ExecutionFilter().before(cursor), lambda d: None) is None
    assert rt.counts_by_state()["RUNNING"] == 3


def test_a_wrong_filter_is_invalid_filter(open_rt: Open) -> None:
    with pytest.raises(InvalidFilter):
        open_rt().list_executions("RUNNING")  # type: ignore[arg-type]


@pytest.mark.parametrize("where", ["file", "memory"])
async def test_a_visitor_may_write_through_the_runtime(
    open_rt: Open, where: str
) -> None:
    rt = open_rt() if where == "file" else SqliteRuntime.open_in_memory()
    try:
        rt.register_workflow(chain)
        for n in range(2):
            rt.start_workflow_with_options(
                "chain", 0, StartOptions(workflow_id=f"v{n}")
            )
        await rt.run_until_idle()
        rt.visit_executions(None, lambda d: rt.send_signal(d.exec_id, "stop", 1))
        await rt.run_until_idle()
        assert rt.counts_by_state()["COMPLETED"] == 2
    finally:
        if where == "memory":
            rt.close()


async def test_text_with_nul_is_refused_at_start_and_at_upsert(open_rt: Open) -> None:
    rt = open_rt()
    rt.register_workflow(nul_tagger)
    with pytest.raises(InvalidSearchAttribute, match="NUL"):
        rt.start_workflow_with_options(
            "nul_tagger", None, StartOptions(search_attributes={"tenant": "ac\x00me"})
        )
    assert sum(rt.counts_by_state().values()) == 0  # nothing was written
    exec_id = rt.start_workflow("nul_tagger", None)

    state = await rt.run_until_blocked(exec_id)

    assert isinstance(state, RunState.Completed)
    assert "NUL" in str(state.output)
    assert "SearchAttributesUpserted" not in [e.type for e in rt.load_history(exec_id)]
