"""The client's reach: a run named by its workflow id, and the schedule operations, on both stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ExecutionNotFound,
    ManualClock,
    QueryNotFound,
    Schedule,
    ScheduleNotFound,
    UnknownWorkflow,
    WorkflowContext,
    WorkflowIdNotFound,
    WorkflowSchedule,
    workflow,
)
from tests.engine.served_store import ServedStore, served_store

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@workflow
async def waiter(ctx: WorkflowContext, _: Any) -> str:
    return str(await ctx.wait_for_signal("go"))


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServedStore]:
    clock = ManualClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
    for found in served_store(request, tmp_path, clock=clock):
        found.rt.register_workflow(waiter)
        yield found


def command_rows(served: ServedStore) -> int:
    return int(served.rows("SELECT COUNT(*) FROM harvest_commands")[0][0])


async def test_a_workflow_id_names_its_running_run_else_its_newest(
    served: ServedStore,
) -> None:
    with served.client() as client:
        async with served.serving():
            first = await client.start_workflow_with_id("waiter", "K1", None)
            await client.send_signal(workflow_id="K1", name="go", payload="one")
            assert (await client.result(workflow_id="K1")).output == "one"  # type: ignore[attr-defined]
            second = await client.start_workflow_with_id("waiter", "K1", None)
            assert second != first
            # The RUNNING run wins over the older one that ended.
            assert client.describe(workflow_id="K1").exec_id == second
            with pytest.raises(QueryNotFound) as asked:
                await client.query(workflow_id="K1", name="nope")
            assert asked.value.exec_id == second  # type: ignore[attr-defined]
        async with served.serving():
            await client.terminate(workflow_id="K1", reason="enough")
        # None RUNNING now: the newest.
        assert client.describe(workflow_id="K1").state == "TERMINATED"
        assert client.describe(workflow_id="K1").exec_id == second
        assert client.outcome(workflow_id="K1") == client.outcome(second)
        assert client.load_history(workflow_id="K1")[-1].type == "WorkflowCancelled"


async def test_a_bad_run_name_is_typed_and_queues_nothing(
    served: ServedStore,
) -> None:
    with served.client() as client:
        before = command_rows(served)
        with pytest.raises(WorkflowIdNotFound, match="no run has workflow id 'K9'"):
            await client.cancel(workflow_id="K9")
        with pytest.raises(TypeError, match="not both"):
            await client.send_signal("run-1", "go", workflow_id="K1")
        with pytest.raises(TypeError, match="name a run"):
            await client.terminate()
        with pytest.raises(ExecutionNotFound):
            client.describe("  ")
        assert command_rows(served) == before


async def test_schedules_are_operated_through_the_client(served: ServedStore) -> None:
    hourly = WorkflowSchedule(
        "waiter", Schedule.every("1h"), input=1, overlap="allow_all", max_active_runs=5
    )
    with served.client() as client:
        async with served.serving():
            row = await client.upsert_schedule(hourly)
            assert (row.workflow_name, row.paused, row.overlap) == (
                "waiter",
                False,
                "allow_all",
            )
            assert await client.pause_schedule("waiter") is True
            assert client.list_schedules()[0].paused is True
            assert await client.resume_schedule("waiter") is True
            assert client.list_schedules()[0].paused is False
            triggered = await client.trigger_schedule("waiter")
            assert triggered is not None
            assert client.describe(triggered).workflow_name == "waiter"
            start = datetime(2026, 2, 1, 0, 0, tzinfo=UTC)
            started = await client.backfill_schedule(
                "waiter", start, start + timedelta(hours=2)
            )
            assert len(started) == 3  # 00:00, 01:00, 02:00
            again = await client.backfill_schedule(
                "waiter", start, start + timedelta(hours=2)
            )
            assert again == []  # those slots have their runs
            assert await client.delete_schedule("waiter") is True
            assert await client.delete_schedule("waiter") is False
            assert await client.pause_schedule("waiter") is False
            with pytest.raises(ScheduleNotFound):
                await client.trigger_schedule("waiter")
            with pytest.raises(UnknownWorkflow):
                await client.upsert_schedule(
                    WorkflowSchedule("unregistered", Schedule.every("1h"))
                )
        assert client.list_schedules() == []


async def test_bad_schedule_input_is_typed_and_queues_nothing(
    served: ServedStore,
) -> None:
    with served.client() as client:
        before = command_rows(served)
        with pytest.raises(ValueError, match="aware datetime"):
            await client.backfill_schedule(
                "waiter", datetime(2026, 1, 1), datetime(2026, 1, 2)
            )
        later = datetime(2026, 1, 2, tzinfo=UTC)
        with pytest.raises(ValueError, match="before its start"):
            await client.backfill_schedule("waiter", later, later - timedelta(1))
        with pytest.raises(TypeError, match="WorkflowSchedule"):
            await client.upsert_schedule("waiter")  # type: ignore[arg-type]
        with pytest.raises(Exception, match="blank"):
            await client.pause_schedule(" ")
        assert command_rows(served) == before


async def test_a_result_not_ready_in_time_raises_timeout_error(
    served: ServedStore,
) -> None:
    """`result(timeout=)` says TimeoutError (as documented), not a storage failure."""
    with served.client() as client:
        async with served.serving():
            await client.start_workflow_with_id("waiter", "slow", None)
            with pytest.raises(TimeoutError) as waited:
                await client.result(workflow_id="slow", timeout=0.05)
            assert "has not ended" in str(waited.value)
