"""What the HTTP API acts on: a runtime in this process, or a served store through a client.

Both targets answer the same calls, so each route is written once. The
reads they share come from an object with the runtime's read methods (the
runtime itself, or a read-only reader beside the client); commands go to
the runtime in process, or as client commands to the process that serves
the store.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from harvest_engine.client import HarvestClient
from harvest_engine.http.errors import HttpRefusal
from harvest_engine.runtime.runtime import Runtime
from harvest_engine.store.postgres.reader import PostgresReader
from harvest_engine.store.sqlite.reader import SqliteReader

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from datetime import datetime
    from pathlib import Path

    from harvest_engine.calls import StartOptions, StartOutcome
    from harvest_engine.events import HistoryEvent
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.schedules import WorkflowSchedule
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


def _needs_code(what: str) -> HttpRefusal:
    return HttpRefusal(
        501,
        "NeedsWorkflowCode",
        f"{what} replays the run with its workflow code, which this server does "
        "not have: mount create_app(runtime) in the process that registers the "
        "workflows",
    )


def _not_offered(what: str) -> HttpRefusal:
    return HttpRefusal(
        501,
        "NotOffered",
        f"{what} is not a client command of this harvest: mount "
        "create_app(runtime) in the serving process for it",
    )


class ClientTarget(Target):
    """A store another process serves: commands through a HarvestClient, reads through a reader."""

    kind = "client"

    def __init__(
        self, client: HarvestClient, reader: SqliteReader | PostgresReader
    ) -> None:
        super().__init__(reader)
        self.client = client
        self.reader = reader

    @classmethod
    def open(cls, where: str | Path) -> ClientTarget:
        """A client and a reader of a file, or of a Postgres database by its URL.

        Raises:
            NotAHarvestDatabase, SchemaTooNew: as `HarvestClient.open` / `connect`.
        """
        postgres = isinstance(where, str) and where.startswith(
            ("postgresql://", "postgres://")
        )
        client = (
            HarvestClient.connect(str(where)) if postgres else HarvestClient.open(where)
        )
        try:
            reader: SqliteReader | PostgresReader = (
                PostgresReader.connect(str(where))
                if postgres
                else SqliteReader.open(where)
            )
        except BaseException:
            client.close()
            raise
        return cls(client, reader)

    def close(self) -> None:
        """Close the client and the reader."""
        self.client.close()
        self.reader.close()

    def health(self) -> dict[str, Any]:
        """Served when a serving process beat within about three seconds."""
        ago = self.client.served_ago()
        return {
            "target": self.kind,
            "served": ago is not None and ago < 3.0,
            "served_ago": ago,
        }

    def logs(self, exec_id: str) -> list[LogLine]:
        """`reader.workflow_logs`."""
        return self.reader.workflow_logs(exec_id)

    def where_waiting(self, exec_id: str) -> tuple[RunWait, ...]:
        """Refused: it needs the workflow code (HttpRefusal 501)."""
        self.reader.describe(exec_id)  # an unknown run is 404 all the same
        raise _needs_code("where-waiting")

    def stack(self, exec_id: str) -> tuple[CoroutineStack, ...]:
        """Refused: it needs the workflow code (HttpRefusal 501)."""
        self.reader.describe(exec_id)
        raise _needs_code("stack")

    async def get_event(self, exec_id: str, key: str, wait: float) -> Any:
        """`client.get_event`."""
        return await self.client.get_event(exec_id, key, wait)

    def read_stream(
        self, exec_id: str, key: str, offset: int
    ) -> AsyncIterator[tuple[int, Any]]:
        """`client.read_stream`."""
        return self.client.read_stream(exec_id, key, offset=offset)

    async def start(self, name: str, input: Any, options: StartOptions) -> StartOutcome:
        """`client.start_workflow_with_options`."""
        return await self.client.start_workflow_with_options(name, input, options)

    async def signal(self, exec_id: str, name: str, payload: Any) -> None:
        """`client.send_signal`."""
        await self.client.send_signal(exec_id, name, payload)

    async def signal_keyed(
        self, exec_id: str, name: str, payload: Any, key: str
    ) -> bool:
        """`client.send_signal_idempotent`."""
        return await self.client.send_signal_idempotent(exec_id, name, payload, key)

    async def query(self, exec_id: str, name: str, arg: Any) -> Any:
        """`client.query`."""
        return await self.client.query(exec_id, name, arg)

    async def update(self, exec_id: str, name: str, arg: Any) -> Any:
        """`client.update`."""
        return await self.client.update(exec_id, name, arg)

    async def cancel(self, exec_id: str, reason: str) -> None:
        """`client.cancel`."""
        await self.client.cancel(exec_id, reason)

    async def terminate(self, exec_id: str, reason: str) -> None:
        """`client.terminate`."""
        await self.client.terminate(exec_id, reason)

    async def upsert_schedule(self, schedule: WorkflowSchedule) -> ScheduleRow:
        """Refused until the client has schedule commands (HttpRefusal 501)."""
        raise _not_offered("upserting a schedule")

    async def schedule_switch(self, action: str, workflow_name: str) -> bool:
        """Refused until the client has schedule commands (HttpRefusal 501)."""
        raise _not_offered(f"{action} of a schedule")

    async def trigger_schedule(self, workflow_name: str) -> ExecutionId | None:
        """Refused until the client has schedule commands (HttpRefusal 501)."""
        raise _not_offered("triggering a schedule")

    async def backfill_schedule(
        self, workflow_name: str, start: datetime, end: datetime
    ) -> list[ExecutionId]:
        """Refused until the client has schedule commands (HttpRefusal 501)."""
        raise _not_offered("backfilling a schedule")


def target_of(target: Runtime | str | Path) -> Target:
    """The target `create_app` was given: a runtime, or a file path / Postgres URL."""
    if isinstance(target, Runtime):
        return RuntimeTarget(target)
    if isinstance(target, HarvestClient):
        raise TypeError(
            "create_app takes a Runtime or the path / URL of a served store, "
            "not a HarvestClient (it opens its own client and reader)"
        )
    return ClientTarget.open(target)


__all__ = ["ClientTarget", "RuntimeTarget", "Target", "target_of"]
