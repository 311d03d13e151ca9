"""What every target of the HTTP API answers: the reads it shares, and the calls the routes make.

Both targets (target_runtime.py, target_client.py) answer the same calls, so
each route is written once. The reads they share come from an object with
the runtime's read methods (the runtime itself, or a read-only reader beside
the client).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from datetime import datetime

    from harvest_engine.calls import StartOptions, StartOutcome
    from harvest_engine.events import HistoryEvent
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.flow import QueueInfo
    from harvest_engine.schedules import WorkflowSchedule
    from harvest_engine.shaping import BreakerInfo, HeldStart
    from harvest_engine.states import ExecutionId
    from harvest_engine.store.operations import LedgerTotals, ScheduleRow
    from harvest_engine.store.records import (
        ActivityAttempt,
        ExecutionDetail,
        ExecutionPage,
        LedgerRow,
        LogLine,
    )
    from harvest_engine.workflow.stack import CoroutineStack
    from harvest_engine.workflow.waits import RunWait


class Reads(Protocol):
    """The reads a runtime and a reader both offer, under the same names."""

    def describe(self, exec_id: str) -> ExecutionDetail: ...  # noqa: D102
    def list_executions(self, flt: ExecutionFilter | None = None) -> ExecutionPage: ...  # noqa: D102
    def load_history(self, exec_id: str) -> list[HistoryEvent]: ...  # noqa: D102
    def activity_attempts(  # noqa: D102
        self, exec_id: str, name: str | None = None
    ) -> list[ActivityAttempt]: ...
    def llm_ledger(self, exec_id: str) -> list[LedgerRow]: ...  # noqa: D102
    def llm_totals(self, exec_id: str) -> LedgerTotals: ...  # noqa: D102
    def counts_by_state(self) -> dict[str, int]: ...  # noqa: D102
    def events(self, exec_id: str) -> dict[str, Any]: ...  # noqa: D102
    def list_schedules(self) -> list[ScheduleRow]: ...  # noqa: D102


class Target(ABC):
    """The calls the routes make; `reads` answers the plain reads.

    Args:
        reads: the runtime, or a reader of the store.
    """

    kind: ClassVar[str]
    """``"runtime"`` or ``"client"``: what health reports."""

    def __init__(self, reads: Reads) -> None:
        self.reads = reads

    @abstractmethod
    def close(self) -> None:
        """Release what the target opened itself (a runtime it was given stays open)."""

    @abstractmethod
    def health(self) -> dict[str, Any]:
        """Whether the store is served: what a health probe reports."""

    @abstractmethod
    def logs(self, exec_id: str) -> list[LogLine]:
        """The run's stored log lines (ExecutionNotFound for an unknown run)."""

    @abstractmethod
    def where_waiting(self, exec_id: str) -> tuple[RunWait, ...]:
        """What the run is blocked on (needs the workflow code)."""

    @abstractmethod
    def stack(self, exec_id: str) -> tuple[CoroutineStack, ...]:
        """Where the run's coroutines are suspended (needs the workflow code)."""

    @abstractmethod
    async def get_event(self, exec_id: str, key: str, wait: float) -> Any:
        """Event `key` once set (None when the run ends without it or after `wait` seconds)."""

    @abstractmethod
    def read_stream(
        self, exec_id: str, key: str, offset: int
    ) -> AsyncIterator[tuple[int, Any]]:
        """The stream's (offset, value) pairs from `offset` on (run, key, offset checked now)."""

    @abstractmethod
    async def start(self, name: str, input: Any, options: StartOptions) -> StartOutcome:
        """Start a run (`start_workflow_with_options`)."""

    @abstractmethod
    async def signal(self, exec_id: str, name: str, payload: Any) -> None:
        """Stage a signal for a RUNNING run."""

    @abstractmethod
    async def signal_keyed(
        self, exec_id: str, name: str, payload: Any, key: str
    ) -> bool:
        """Stage a keyed signal; False when the run already holds the key."""

    @abstractmethod
    async def query(self, exec_id: str, name: str, arg: Any) -> Any:
        """Answer a query at the run's frontier."""

    @abstractmethod
    async def update(self, exec_id: str, name: str, arg: Any) -> Any:
        """Run an update; its result."""

    @abstractmethod
    async def cancel(self, exec_id: str, reason: str) -> None:
        """Request a cooperative cancel."""

    @abstractmethod
    async def terminate(self, exec_id: str, reason: str) -> None:
        """End the run TERMINATED at once."""

    @abstractmethod
    async def upsert_schedule(self, schedule: WorkflowSchedule) -> ScheduleRow:
        """Store a schedule."""

    @abstractmethod
    async def schedule_switch(self, action: str, workflow_name: str) -> bool:
        """Pause, resume or delete a schedule; False when there is none."""

    @abstractmethod
    async def trigger_schedule(self, workflow_name: str) -> ExecutionId | None:
        """Start one run of a schedule now (None when its overlap policy skips it)."""

    @abstractmethod
    async def backfill_schedule(
        self, workflow_name: str, start: datetime, end: datetime
    ) -> list[ExecutionId]:
        """Start a run for each slot from `start` to `end`."""

    @abstractmethod
    async def reset(
        self, exec_id: str, to_event: int | None, reason: str
    ) -> ExecutionId:
        """Start the run again from a decision boundary; the new run's id."""

    @abstractmethod
    async def fork(
        self, exec_id: str, from_step: int, workflow_id: str | None
    ) -> ExecutionId:
        """A new run that keeps the first `from_step - 1` steps' results; its id."""

    @abstractmethod
    async def pause(self, exec_id: str, reason: str) -> None:
        """Stop the run deciding until `unpause`."""

    @abstractmethod
    async def unpause(self, exec_id: str) -> None:
        """Let a paused run go on."""

    @abstractmethod
    async def many(
        self, action: str, flt: ExecutionFilter, reason: str, signal: tuple[str, Any]
    ) -> int:
        """`<action>_many` over the runs `flt` matches (signal: its name and payload); how many."""

    @abstractmethod
    def queues(self) -> list[QueueInfo]:
        """Each flow queue: its limits, and the runs or attempts it holds and keeps waiting."""

    @abstractmethod
    def held_starts(self) -> list[HeldStart]:
        """The debounced and batched starts waiting for their window."""

    @abstractmethod
    def circuit_breakers(self) -> list[BreakerInfo]:
        """Each activity circuit breaker that has seen a failure."""


__all__ = ["Reads", "Target"]
