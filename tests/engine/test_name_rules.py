"""Names and ids: text of at most 1,000 characters that SQLite can store, or a typed error."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from harvest_engine import (
    ExecutionFilter,
    ExecutionNotFound,
    HarvestError,
    InvalidName,
    PayloadNotJson,
    Schedule,
    SignalWithStart,
    SqliteRuntime,
    StartOptions,
    WorkflowContext,
    WorkflowPanicked,
    WorkflowSchedule,
    workflow,
)
from harvest_engine.names import MAX_NAME_CHARS

Open = Callable[..., SqliteRuntime]

LONG = "n" * (MAX_NAME_CHARS + 1)
HUGE = 2**64
SURROGATE = "ok\ud800"


@workflow
async def waits(ctx: WorkflowContext, _: Any) -> str:
    await ctx.wait_for_signal("go")
    return "done"


@workflow
async def long_mutex(ctx: WorkflowContext, _: Any) -> None:
    async with ctx.mutex("m" * (MAX_NAME_CHARS + 1)):
        pass


def calls(rt: SqliteRuntime, exec_id: Any, bad: Any) -> dict[str, Callable[[], Any]]:
    return {
        "workflow name": lambda: rt.start_workflow(bad),
        "workflow id": lambda: rt.start_workflow_with_id("waits", bad),
        "options id": lambda: rt.start_workflow_with_options(
            "waits", None, StartOptions(workflow_id=bad)
        ),
        "attribute key": lambda: rt.start_workflow_with_options(
            "waits", None, StartOptions(search_attributes={bad: 1})
        ),
        "signal name": lambda: rt.send_signal(exec_id, bad),
        "idempotency key": lambda: rt.send_signal_idempotent(exec_id, "go", 1, bad),
        "by workflow id": lambda: rt.send_signal_by_workflow_id("waits", bad, "go"),
        "signal-with-start": lambda: rt.signal_with_start(
            SignalWithStart(
                workflow_name=bad, workflow_id="w", input=None, signal_name="go"
            )
        ),
        "query name": lambda: asyncio.run(rt.query(exec_id, bad)),
        "update name": lambda: asyncio.run(rt.update(exec_id, bad)),
        "schedule": lambda: WorkflowSchedule(bad, Schedule.every("1h")),
        "pause": lambda: rt.pause_schedule(bad),
        "resume": lambda: rt.resume_schedule(bad),
        "delete": lambda: rt.delete_schedule(bad),
        "filter": lambda: rt.list_executions(ExecutionFilter().workflow_id(bad)),
    }


@pytest.mark.parametrize(
    "bad", [LONG, SURROGATE, HUGE], ids=["long", "surrogate", "2**64"]
)
def test_every_name_and_id_refuses_long_unstorable_or_non_text_values(
    open_rt: Open, bad: Any
) -> None:
    rt = open_rt()
    rt.register_workflow(waits)
    exec_id = rt.start_workflow("waits")
    for what, call in calls(rt, exec_id, bad).items():
        with pytest.raises(HarvestError) as caught:
            call()
        err = caught.value
        assert not isinstance(err, OverflowError), what
        if isinstance(bad, str):
            assert isinstance(err, InvalidName), what
    assert len(rt.list_executions().executions) == 1
    assert rt.list_schedules() == []


def test_the_cap_is_exact_and_the_error_names_the_argument(open_rt: Open) -> None:
    rt = open_rt()
    rt.register_workflow(waits)
    at_cap = "i" * MAX_NAME_CHARS
    exec_id = rt.start_workflow_with_id("waits", at_cap)
    assert rt.describe(exec_id).workflow_id == at_cap
    with pytest.raises(
        InvalidName, match="invalid workflow id: it is 1,001 characters"
    ):
        rt.start_workflow_with_id("waits", at_cap + "i")
    with pytest.raises(InvalidName) as caught:
        rt.start_workflow_with_id("waits", HUGE)
    assert isinstance(caught.value, TypeError)  # what a non-text id raised before


def test_an_id_no_run_could_have_is_execution_not_found(open_rt: Open) -> None:
    rt = open_rt()
    for bad in (SURROGATE, "x" * 100_000, HUGE):
        with pytest.raises(ExecutionNotFound):
            rt.describe(bad)


def test_a_reason_sqlite_cannot_store_is_refused_naming_it(open_rt: Open) -> None:
    rt = open_rt()
    rt.register_workflow(waits)
    exec_id = rt.start_workflow("waits")
    with pytest.raises(PayloadNotJson, match="reason is not JSON: text holds a lone"):
        rt.cancel(exec_id, SURROGATE)
    assert rt.describe(exec_id).state == "RUNNING"


async def test_a_name_over_the_cap_in_workflow_code_is_a_panic_naming_it(
    open_rt: Open,
) -> None:
    rt = open_rt()
    rt.register_workflow(long_mutex)
    exec_id = rt.start_workflow("long_mutex")
    with pytest.raises(WorkflowPanicked) as caught:
        await rt.run_until_blocked(exec_id)
    assert isinstance(caught.value.__cause__, InvalidName)
    assert "mutex key" in str(caught.value.__cause__)
    assert [e.type for e in rt.load_history(exec_id)] == ["WorkflowStarted"]
