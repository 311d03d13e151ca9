"""The HTTP API's target on a store another process serves: commands through a client, reads through a reader."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.client import HarvestClient
from harvest_engine.http.errors import HttpRefusal
from harvest_engine.http.target_base import Target
from harvest_engine.store.postgres.reader import PostgresReader
from harvest_engine.store.sqlite.reader import SqliteReader

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable
    from datetime import datetime
    from pathlib import Path

    from harvest_engine.calls import StartOptions, StartOutcome
    from harvest_engine.codecs import PayloadCodec
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.flow import QueueInfo
    from harvest_engine.schedules import WorkflowSchedule
    from harvest_engine.shaping import BreakerInfo, HeldStart
    from harvest_engine.states import ExecutionId
    from harvest_engine.store.operations import ScheduleRow
    from harvest_engine.store.records import LogLine
    from harvest_engine.workflow.stack import CoroutineStack
    from harvest_engine.workflow.waits import RunWait


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
    def open(
        cls, where: str | Path, *, codec: PayloadCodec | None = None
    ) -> ClientTarget:
        """A client and a reader of a file, or of a Postgres database by its URL.

        Raises:
            NotAHarvestDatabase, SchemaTooNew, CodecRequired: as
                `HarvestClient.open` / `connect` with `codec`.
        """
        postgres = isinstance(where, str) and where.startswith(
            ("postgresql://", "postgres://")
        )
        client = (
            HarvestClient.connect(str(where), codec=codec)
            if postgres
            else HarvestClient.open(where, codec=codec)
        )
        try:
            reader: SqliteReader | PostgresReader = (
                PostgresReader.connect(str(where), codec=codec)
                if postgres
                else SqliteReader.open(where, codec=codec)
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
        """`client.upsert_schedule`."""
        return await self.client.upsert_schedule(schedule)

    async def schedule_switch(self, action: str, workflow_name: str) -> bool:
        """`client.pause_schedule` / `resume_schedule` / `delete_schedule`."""
        switch = {
            "pause": self.client.pause_schedule,
            "resume": self.client.resume_schedule,
            "delete": self.client.delete_schedule,
        }[action]
        return await switch(workflow_name)

    async def trigger_schedule(self, workflow_name: str) -> ExecutionId | None:
        """`client.trigger_schedule`."""
        return await self.client.trigger_schedule(workflow_name)

    async def backfill_schedule(
        self, workflow_name: str, start: datetime, end: datetime
    ) -> list[ExecutionId]:
        """`client.backfill_schedule`."""
        return await self.client.backfill_schedule(workflow_name, start, end)

    async def reset(
        self, exec_id: str, to_event: int | None, reason: str
    ) -> ExecutionId:
        """`client.reset`."""
        return await self.client.reset(exec_id, to_event=to_event, reason=reason)

    async def fork(
        self, exec_id: str, from_step: int, workflow_id: str | None
    ) -> ExecutionId:
        """`client.fork`."""
        return await self.client.fork(
            exec_id, from_step=from_step, workflow_id=workflow_id
        )

    async def pause(self, exec_id: str, reason: str) -> None:
        """`client.pause`."""
        await self.client.pause(exec_id, reason)

    async def unpause(self, exec_id: str) -> None:
        """`client.unpause`."""
        await self.client.unpause(exec_id)

    async def many(
        self, action: str, flt: ExecutionFilter, reason: str, signal: tuple[str, Any]
    ) -> int:
        """`client.cancel_many` and the other bulk calls, run by the serving process."""
        c = self.client
        calls: dict[str, Callable[[], Awaitable[int]]] = {
            "cancel": lambda: c.cancel_many(flt, reason),
            "terminate": lambda: c.terminate_many(flt, reason),
            "signal": lambda: c.signal_many(flt, *signal),
            "reset": lambda: c.reset_many(flt, reason=reason),
            "pause": lambda: c.pause_many(flt, reason),
            "unpause": lambda: c.unpause_many(flt),
        }
        return await calls[action]()

    def queues(self) -> list[QueueInfo]:
        """`client.queues`."""
        return self.client.queues()

    def held_starts(self) -> list[HeldStart]:
        """Refused: held starts live in the serving runtime (HttpRefusal 501)."""
        raise _not_offered("listing held starts")

    def circuit_breakers(self) -> list[BreakerInfo]:
        """Refused: circuit breakers are read by the serving runtime (HttpRefusal 501)."""
        raise _not_offered("listing circuit breakers")


__all__ = ["ClientTarget"]
