"""HarvestClient: talk to the runs of a file that another process serves, without its lock or code.

Commands (start, signal, cancel, terminate, query, update, ...) are rows in
the file's command queue: the client writes one row in one short
transaction, the serving process (`await rt.serve()`) applies it exactly
once and writes the reply, and the client awaits the reply by watching
`data_version` (on Postgres: hearing the reply's NOTIFY, waits.py). Reads (`outcome`, `describe`, `list_executions`,
`load_history`) come straight from the file through a read-only connection.
The client writes nothing but its command rows.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from harvest_engine import wire
from harvest_engine.client import requests, waits
from harvest_engine.client.progress_calls import ProgressCalls
from harvest_engine.client.repair_calls import RepairCalls
from harvest_engine.client.schedule_calls import ScheduleCalls
from harvest_engine.client.starting import DEFAULT_TIMEOUT, StartCalls
from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.interceptors import Interceptors
from harvest_engine.states import ErrorInfo, ExecutionId, ExecutionOutcome
from harvest_engine.store.sqlite.client_queue import CommandQueue
from harvest_engine.store.sqlite.faults import guard_public_methods
from harvest_engine.store.sqlite.reader import SqliteReader

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path
    from types import TracebackType

    from harvest_engine.calls import SignalDelivery
    from harvest_engine.codecs import PayloadCodec
    from harvest_engine.events import HistoryEvent
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.flow import QueueInfo
    from harvest_engine.interceptors import Interceptor
    from harvest_engine.store.postgres.client_queue import PostgresCommandQueue
    from harvest_engine.store.postgres.reader import PostgresReader
    from harvest_engine.store.records import ExecutionDetail, ExecutionPage


@guard_public_methods()
class HarvestClient(StartCalls, ScheduleCalls, ProgressCalls, RepairCalls):
    """A client of a served harvest file, in any process (see the module docstring).

    Like the runtime and the reader, every public call raises typed errors
    only (`StorageError`, `DatabaseCorrupt`, ...), never the driver's.

    Open it with `HarvestClient.open(path)`, as a context manager or with
    `close()`. Every command is awaited and takes `timeout=` (default
    ``"10s"``): `CommandTimedOut` (with `command_id`) when no serving process
    answered in time; the command stays queued and is applied once one does.
    When no process has served the store lately (its heartbeat is stale) the
    wait ends within about a second with `NotServed`, a `CommandTimedOut`;
    `withdraw(command_id)` removes a command that was not applied. To retry
    it, repeat the same call with ``command_id=`` that id (or pass your own
    id from the first try): a command id queues one command, and
    every call with it awaits that command's reply, so it is applied once
    (within the day applied commands are kept). An id that names a
    different command raises ValueError and queues nothing.

    Every call that names a run takes its exec id or, instead,
    ``workflow_id=`` (the business id it was started with): the RUNNING run
    of that id, else the newest (`WorkflowIdNotFound` when none has it).
    """

    def __init__(
        self,
        path: str,
        reader: SqliteReader | PostgresReader,
        queue: CommandQueue | PostgresCommandQueue,
        interceptors: Iterable[Interceptor] = (),
    ) -> None:
        """Use `HarvestClient.open(path)` or `HarvestClient.connect(dsn)`."""
        super().__init__(path, queue, reader, Interceptors(interceptors))
        self.closed = False

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        interceptors: Iterable[Interceptor] = (),
        codec: PayloadCodec | None = None,
    ) -> HarvestClient:
        """Open a client of the harvest file at `path` (no lock is taken; nothing is written).

        `interceptors` hook each command (`Interceptor.client_command`).

        Raises:
            NotAHarvestDatabase: no such file, not harvest's, or a schema too
                old for commands (open it once with SqliteRuntime).
            SchemaTooNew: written by a newer harvest.
            CodecRequired: its payloads are encoded and `codec` is not their codec.
        """
        reader = SqliteReader.open(path, codec=codec)
        try:
            queue = CommandQueue.open(path, codec=codec)
        except BaseException:
            reader.close()
            raise
        return cls(str(path), reader, queue, interceptors)

    @classmethod
    def connect(
        cls,
        dsn: str,
        *,
        interceptors: Iterable[Interceptor] = (),
        codec: PayloadCodec | None = None,
    ) -> HarvestClient:
        """A client of a Postgres database that PostgresRuntime workers serve.

        `interceptors` hook each command (`Interceptor.client_command`).

        Raises:
            NotAHarvestDatabase: a wrong DSN, an unreachable server, a missing
                database, or one without a harvest schema.
            SchemaTooNew: written by a newer harvest.
            Unsupported: psycopg (the `postgres` extra) is not installed.
        """
        from harvest_engine.store.postgres.reader import (  # noqa: PLC0415
            PostgresReader,
        )

        reader = PostgresReader.connect(dsn, codec=codec)
        try:
            from harvest_engine.store.postgres.client_queue import (  # noqa: PLC0415
                PostgresCommandQueue,
            )

            queue = PostgresCommandQueue.connect(dsn, codec=codec)
        except BaseException:
            reader.close()
            raise
        return cls(reader.path, reader, queue, interceptors)

    def close(self) -> None:
        """Close the client's connections (safe to call twice)."""
        if not self.closed:
            self.closed = True
            if self._wakes is not None:
                self._wakes.close()
            self._queue.close()
            self._reader.close()

    def __enter__(self) -> HarvestClient:
        """Use the client in a `with` block; it closes at the end."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the client."""
        self.close()

    # -- talking to runs ------------------------------------------------------------

    async def send_signal(
        self,
        exec_id: str | ExecutionId | None = None,
        name: str = "",
        payload: Any = None,
        *,
        workflow_id: str | None = None,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - API.md's contract
        command_id: str | None = None,
    ) -> None:
        """Stage a signal for a RUNNING run (by exec id, or ``workflow_id=``)."""
        await self._call(
            requests.signal(self._run_id(exec_id, workflow_id), name, payload),
            timeout,
            command_id,
        )

    async def send_signal_idempotent(
        self,
        exec_id: str | ExecutionId | None = None,
        name: str = "",
        payload: Any = None,
        key: str | None = None,
        *,
        workflow_id: str | None = None,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - API.md's contract
        command_id: str | None = None,
    ) -> bool:
        """Stage a keyed signal; False when this run already holds `key`."""
        run = self._run_id(exec_id, workflow_id)
        args = requests.signal_idempotent(run, name, payload, key)
        result: bool = await self._call(args, timeout, command_id)
        return result

    async def send_signal_by_workflow_id(
        self,
        workflow_name: str,
        workflow_id: str,
        name: str,
        payload: Any = None,
        key: str | None = None,
        *,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - API.md's contract
        command_id: str | None = None,
    ) -> SignalDelivery:
        """Signal the RUNNING run of (workflow_name, workflow_id); where it went."""
        args = requests.signal_by_workflow_id(
            workflow_name, workflow_id, name, payload, key
        )
        result: SignalDelivery = await self._call(args, timeout, command_id)
        return result

    async def cancel(
        self,
        exec_id: str | ExecutionId | None = None,
        reason: str = "",
        *,
        workflow_id: str | None = None,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - API.md's contract
        command_id: str | None = None,
    ) -> None:
        """Request a cooperative cancel of a RUNNING run; its running bodies are cancelled."""
        run = self._run_id(exec_id, workflow_id)
        await self._call(
            wire.Cancel(*requests.ending(run, reason)), timeout, command_id
        )

    async def terminate(
        self,
        exec_id: str | ExecutionId | None = None,
        reason: str = "",
        *,
        workflow_id: str | None = None,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - API.md's contract
        command_id: str | None = None,
    ) -> None:
        """End a RUNNING run TERMINATED at once; its running bodies are cancelled."""
        run = self._run_id(exec_id, workflow_id)
        await self._call(
            wire.Terminate(*requests.ending(run, reason)), timeout, command_id
        )

    async def query(
        self,
        exec_id: str | ExecutionId | None = None,
        name: str = "",
        arg: Any = None,
        *,
        workflow_id: str | None = None,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - API.md's contract
        command_id: str | None = None,
    ) -> Any:
        """Answer query `name(arg)` in the serving process (it has the code); writes no event."""
        run = self._run_id(exec_id, workflow_id)
        return await self._call(requests.query(run, name, arg), timeout, command_id)

    async def update(
        self,
        exec_id: str | ExecutionId | None = None,
        name: str = "",
        arg: Any = None,
        *,
        workflow_id: str | None = None,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - API.md's contract
        command_id: str | None = None,
    ) -> Any:
        """Run update `name(arg)` in the serving process; its result."""
        run = self._run_id(exec_id, workflow_id)
        return await self._call(requests.update(run, name, arg), timeout, command_id)

    def withdraw(self, command_id: str) -> bool:
        """Remove a queued command no serving process applied yet; False once applied.

        For a command that timed out (`CommandTimedOut.command_id`, or
        `NotServed`'s) and should not run after all. An applied command keeps
        its row and reply (its effect happened), and so does a command being
        applied right now: False. False too for an id nothing is queued under.
        """
        return self._queue.withdraw(requests.command_id(command_id))

    def command_applied(self, command_id: str) -> bool | None:
        """Whether the command of this id was applied; None when none is queued under it."""
        got = self._queue.reply(requests.command_id(command_id))
        return None if got is None else got[0]

    def served_ago(self) -> float | None:
        """Seconds since a serving process last beat (about once a second); None when none serves.

        For a window that says whether the store is still served: a beat
        older than about three seconds means no process serves it now. On a
        file, None also once the serving process closed or died (no process
        holds its lock); on Postgres the last worker's beat just ages.
        """
        return self._queue.served_ago()

    # -- reading --------------------------------------------------------------------

    def outcome(
        self,
        exec_id: str | ExecutionId | None = None,
        *,
        workflow_id: str | None = None,
    ) -> ExecutionOutcome:
        """The stored outcome of one run, read from the file."""
        detail = self._reader.describe(self._run_id(exec_id, workflow_id))
        if detail.state != "ENQUEUED":
            return outcome_of(detail)
        wait = self._reader.flow_reads().wait_of(str(detail.exec_id))
        return outcome_of(detail, "" if wait is None else wait.queue)

    def describe(
        self,
        exec_id: str | ExecutionId | None = None,
        *,
        workflow_id: str | None = None,
    ) -> ExecutionDetail:
        """One run with its payloads as Stored values."""
        return self._reader.describe(self._run_id(exec_id, workflow_id))

    def list_executions(self, flt: ExecutionFilter | None = None) -> ExecutionPage:
        """One page of runs, newest first, without payloads."""
        return self._reader.list_executions(flt)

    def load_history(
        self,
        exec_id: str | ExecutionId | None = None,
        *,
        workflow_id: str | None = None,
    ) -> list[HistoryEvent]:
        """Every recorded event of the run, in order."""
        return self._reader.load_history(self._run_id(exec_id, workflow_id))

    def queues(self) -> list[QueueInfo]:
        """Every queue: its limits, slots held, waiting runs or attempts, oldest wait."""
        return self._reader.flow_reads().queue_infos()

    def data_version(self) -> int:
        """A number that changes whenever another process commits to the file."""
        return self._reader.data_version()

    async def result(
        self,
        exec_id: str | ExecutionId | None = None,
        *,
        workflow_id: str | None = None,
        timeout: Duration | None = None,  # noqa: ASYNC109 - API.md's contract
    ) -> ExecutionOutcome:
        """Wait for the run's end, following continue-as-new and retry successors.

        Returns the outcome of the last run of the chain. With `timeout`,
        raises TimeoutError when the chain has not ended in time.
        """
        loop = asyncio.get_running_loop()
        deadline = (
            None
            if timeout is None
            else loop.time() + to_timedelta(timeout, what="timeout").total_seconds()
        )
        current, detail = await waits.run_end(
            self._reader,
            self._queue,
            self._wakes,
            self._run_id(exec_id, workflow_id),
            deadline,
        )
        if detail is None:
            raise TimeoutError(f"run {current} has not ended within {timeout}")
        return outcome_of(detail)


def outcome_of(detail: ExecutionDetail, queue: str = "") -> ExecutionOutcome:
    """The ExecutionOutcome of a described run (the runtime's `outcome`, from a reader).

    `queue` names the queue of a run waiting ENQUEUED.
    """
    if detail.state == "RUNNING":
        return ExecutionOutcome.Running()
    if detail.state == "ENQUEUED":
        return ExecutionOutcome.Enqueued(queue=queue)
    if detail.state == "COMPLETED":
        return ExecutionOutcome.Completed(output=detail.output.value)
    if detail.state == "FAILED":
        return ExecutionOutcome.Failed(error=ErrorInfo.from_json(detail.error.value))
    return ExecutionOutcome.Terminated(state=detail.state)
