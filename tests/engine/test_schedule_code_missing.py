"""A schedule whose workflow code is missing: refused at upsert, and never a log flood (issue 24 item 5)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from harvest_engine import (
    ManualClock,
    Schedule,
    SqliteRuntime,
    WorkflowContext,
    WorkflowSchedule,
    workflow,
)
from harvest_engine.errors import UnknownWorkflow

Open = Callable[..., SqliteRuntime]


@workflow
async def daily_report(ctx: WorkflowContext, text: str) -> str:
    return f"report {text}"


def test_a_schedule_for_an_unregistered_workflow_is_refused_and_nothing_is_stored(
    open_rt: Open,
) -> None:
    rt = open_rt()
    rt.register_workflow(daily_report)
    with pytest.raises(UnknownWorkflow) as caught:
        rt.upsert_schedule(WorkflowSchedule("daily_reprot", Schedule.every("1h")))
    assert "'daily_reprot' is not registered" in str(caught.value)
    assert "registered: 'daily_report'" in str(caught.value)
    assert rt.list_schedules() == []


async def test_a_due_slot_without_code_is_logged_once_and_fires_once_code_registers(
    open_rt: Open, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    with open_rt() as first:  # the process that had the code stored the schedule
        first.register_workflow(daily_report)
        first.upsert_schedule(
            WorkflowSchedule("daily_report", Schedule.every("15m"), input="x")
        )
    clock.advance(timedelta(minutes=20))  # its slot is due
    rt = open_rt()  # a process without that code serves the file
    rounds = 0
    fire = rt._driver.fire_schedules

    def counted(at: Any) -> Any:
        nonlocal rounds
        rounds += 1
        return fire(at)

    rt._driver.fire_schedules = counted  # type: ignore[method-assign]
    caplog.set_level(logging.WARNING, logger="harvest_engine")
    stop = asyncio.Event()
    server = asyncio.create_task(rt.serve(stop, poll_interval="20ms"))
    try:
        await asyncio.sleep(1.0)
        warned = [r for r in caplog.records if "daily_report" in r.getMessage()]
        assert len(warned) == 1, [r.getMessage() for r in warned]
        assert "not registered" in warned[0].getMessage()
        assert rounds <= 3  # it sleeps: a poll-tick spin makes ~50 rounds a second
        rt.register_workflow(daily_report)  # the code arrives: the slot fires
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 5
        while not rt.list_executions().executions:
            assert loop.time() < deadline, "the due slot never fired"
            await asyncio.sleep(0.01)
    finally:
        stop.set()
        await asyncio.wait_for(server, timeout=10)
    (run,) = rt.list_executions().executions
    assert run.workflow_id.startswith("sched:daily_report:")
