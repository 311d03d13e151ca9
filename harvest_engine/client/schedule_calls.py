"""The schedule calls of a HarvestClient: upsert, pause, resume, delete, trigger, backfill, list.

Each change is one command the serving process applies (it has the
workflow code, so an unknown workflow is refused there, typed); the list
is read straight from the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine import wire
from harvest_engine.client import requests
from harvest_engine.client.round_trip import CommandRoundTrip
from harvest_engine.errors import ScheduleNotFound
from harvest_engine.store.sqlite.faults import guard_public_methods

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.durations import Duration
    from harvest_engine.schedules import WorkflowSchedule
    from harvest_engine.states import ExecutionId
    from harvest_engine.store.operations import ScheduleRow

DEFAULT_TIMEOUT = "10s"


@guard_public_methods()
class ScheduleCalls(CommandRoundTrip):
    """Operate a served store's schedules, as `Runtime`'s schedule calls do in process."""

    async def upsert_schedule(
        self,
        schedule: WorkflowSchedule,
        *,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - the client's contract
        command_id: str | None = None,
    ) -> ScheduleRow:
        """Store a schedule (keyed by workflow name); the stored row.

        The same spec keeps its next slot and its pause. Raises
        UnknownWorkflow when the serving process has no such workflow.
        """
        await self._call(requests.upsert_schedule(schedule), timeout, command_id)
        return self._schedule_row(schedule.workflow_name)

    async def pause_schedule(
        self,
        workflow_name: str,
        *,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - the client's contract
        command_id: str | None = None,
    ) -> bool:
        """Stop a schedule's fires; False when there is no such schedule."""
        record = wire.PauseSchedule(requests.schedule_name(workflow_name))
        return bool(await self._call(record, timeout, command_id))

    async def resume_schedule(
        self,
        workflow_name: str,
        *,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - the client's contract
        command_id: str | None = None,
    ) -> bool:
        """Fire again from the next slot after now; False when there is no such schedule."""
        record = wire.ResumeSchedule(requests.schedule_name(workflow_name))
        return bool(await self._call(record, timeout, command_id))

    async def delete_schedule(
        self,
        workflow_name: str,
        *,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - the client's contract
        command_id: str | None = None,
    ) -> bool:
        """Remove a schedule (its runs keep running); False when there was none."""
        record = wire.DeleteSchedule(requests.schedule_name(workflow_name))
        return bool(await self._call(record, timeout, command_id))

    async def trigger_schedule(
        self,
        workflow_name: str,
        *,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - the client's contract
        command_id: str | None = None,
    ) -> ExecutionId | None:
        """Start one run of the schedule now; None when its overlap policy skips it.

        Raises ScheduleNotFound when there is no such schedule.
        """
        record = wire.TriggerSchedule(requests.schedule_name(workflow_name))
        result: ExecutionId | None = await self._call(record, timeout, command_id)
        return result

    async def backfill_schedule(
        self,
        workflow_name: str,
        start: datetime,
        end: datetime,
        *,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - the client's contract
        command_id: str | None = None,
    ) -> list[ExecutionId]:
        """Start a run for each slot from `start` to `end` (aware, both included), oldest first.

        A slot that already has a run is not started again. Raises
        ScheduleNotFound, or ValueError for naive times, a reversed range or
        more than 1,000 slots; nothing is started then.
        """
        record = requests.backfill_schedule(workflow_name, start, end)
        result: list[ExecutionId] = await self._call(record, timeout, command_id)
        return result

    def list_schedules(self) -> list[ScheduleRow]:
        """Every stored schedule, by workflow name (read from the store)."""
        return self._reader.list_schedules()

    def _schedule_row(self, workflow_name: str) -> ScheduleRow:
        for row in self._reader.list_schedules():
            if row.workflow_name == workflow_name:
                return row
        raise ScheduleNotFound(workflow_name=workflow_name)  # deleted meanwhile
