"""The HTTP API's target in the process of a runtime: every call is the runtime's own (it has the code)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.http.target_base import Target

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from datetime import datetime

    from harvest_engine.calls import StartOptions, StartOutcome
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.flow import QueueInfo
    from harvest_engine.runtime.runtime import Runtime
    from harvest_engine.schedules import WorkflowSchedule
    from harvest_engine.shaping import BreakerInfo, HeldStart
    from harvest_engine.states import ExecutionId
    from harvest_engine.store.operations import ScheduleRow
    from harvest_engine.store.records import LogLine
    from harvest_engine.workflow.stack import CoroutineStack
    from harvest_engine.workflow.waits import RunWait


class RuntimeTarget(Target):
    """A runtime of this process: every call is the runtime's own (it has the code)."""

    kind = "runtime"

    def __init__(self, rt: Runtime) -> None:
        super().__init__(rt)
        self.rt = rt

    def close(self) -> None:
        """Nothing: the runtime belongs to the caller."""

    def health(self) -> dict[str, Any]:
        """Served: the app runs beside the runtime."""
        return {"target": self.kind, "served": not self.rt.store_closed}

    def logs(self, exec_id: str) -> list[LogLine]:
        """The run's log lines, from the store (after checking the run exists)."""
        self.rt.describe(exec_id)
        return self.rt.store.workflow_logs(exec_id)

    def where_waiting(self, exec_id: str) -> tuple[RunWait, ...]:
        """`rt.where_waiting`."""
        return self.rt.where_waiting(exec_id)

    def stack(self, exec_id: str) -> tuple[CoroutineStack, ...]:
        """`rt.stack`."""
        return self.rt.stack(exec_id)

    async def get_event(self, exec_id: str, key: str, wait: float) -> Any:
        """`rt.get_event`."""
        return await self.rt.get_event(exec_id, key, wait)

    def read_stream(
        self, exec_id: str, key: str, offset: int
    ) -> AsyncIterator[tuple[int, Any]]:
        """`rt.read_stream`."""
        return self.rt.read_stream(exec_id, key, offset=offset)

    async def start(self, name: str, input: Any, options: StartOptions) -> StartOutcome:
        """`rt.start_workflow_with_options`."""
        return self.rt.start_workflow_with_options(name, input, options)

    async def signal(self, exec_id: str, name: str, payload: Any) -> None:
        """`rt.send_signal`."""
        self.rt.send_signal(exec_id, name, payload)

    async def signal_keyed(
        self, exec_id: str, name: str, payload: Any, key: str
    ) -> bool:
        """`rt.send_signal_idempotent`."""
        return self.rt.send_signal_idempotent(exec_id, name, payload, key)

    async def query(self, exec_id: str, name: str, arg: Any) -> Any:
        """`rt.query`."""
        return await self.rt.query(exec_id, name, arg)

    async def update(self, exec_id: str, name: str, arg: Any) -> Any:
        """`rt.update`."""
        return await self.rt.update(exec_id, name, arg)

    async def cancel(self, exec_id: str, reason: str) -> None:
        """`rt.cancel`."""
        self.rt.cancel(exec_id, reason)

    async def terminate(self, exec_id: str, reason: str) -> None:
        """`rt.terminate`."""
        self.rt.terminate(exec_id, reason)

    async def upsert_schedule(self, schedule: WorkflowSchedule) -> ScheduleRow:
        """`rt.upsert_schedule`."""
        return self.rt.upsert_schedule(schedule)

    async def schedule_switch(self, action: str, workflow_name: str) -> bool:
        """`rt.pause_schedule` / `resume_schedule` / `delete_schedule`."""
        switch = {
            "pause": self.rt.pause_schedule,
            "resume": self.rt.resume_schedule,
            "delete": self.rt.delete_schedule,
        }[action]
        return switch(workflow_name)

    async def trigger_schedule(self, workflow_name: str) -> ExecutionId | None:
        """`rt.trigger_schedule`."""
        return self.rt.trigger_schedule(workflow_name)

    async def backfill_schedule(
        self, workflow_name: str, start: datetime, end: datetime
    ) -> list[ExecutionId]:
        """`rt.backfill_schedule`."""
        return self.rt.backfill_schedule(workflow_name, start, end)

    async def reset(
        self, exec_id: str, to_event: int | None, reason: str
    ) -> ExecutionId:
        """`rt.reset`."""
        return self.rt.reset(exec_id, to_event=to_event, reason=reason)

    async def fork(
        self, exec_id: str, from_step: int, workflow_id: str | None
    ) -> ExecutionId:
        """`rt.fork`."""
        return self.rt.fork(exec_id, from_step=from_step, workflow_id=workflow_id)

    async def pause(self, exec_id: str, reason: str) -> None:
        """`rt.pause`."""
        self.rt.pause(exec_id, reason)

    async def unpause(self, exec_id: str) -> None:
        """`rt.unpause`."""
        self.rt.unpause(exec_id)

    async def many(
        self, action: str, flt: ExecutionFilter, reason: str, signal: tuple[str, Any]
    ) -> int:
        """`rt.cancel_many`, `terminate_many`, `signal_many`, `reset_many`, `pause_many`, `unpause_many`."""
        calls: dict[str, Callable[[], int]] = {
            "cancel": lambda: self.rt.cancel_many(flt, reason),
            "terminate": lambda: self.rt.terminate_many(flt, reason),
            "signal": lambda: self.rt.signal_many(flt, *signal),
            "reset": lambda: self.rt.reset_many(flt, reason=reason),
            "pause": lambda: self.rt.pause_many(flt, reason),
            "unpause": lambda: self.rt.unpause_many(flt),
        }
        return calls[action]()

    def queues(self) -> list[QueueInfo]:
        """`rt.queues`."""
        return self.rt.queues()

    def held_starts(self) -> list[HeldStart]:
        """`rt.held_starts`."""
        return self.rt.held_starts()

    def circuit_breakers(self) -> list[BreakerInfo]:
        """`rt.circuit_breakers`."""
        return self.rt.circuit_breakers()


__all__ = ["RuntimeTarget"]
