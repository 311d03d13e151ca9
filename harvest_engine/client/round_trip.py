"""The client's command round trip: queue one `wire` record, await its reply row."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads, wire
from harvest_engine.client import requests, waits
from harvest_engine.client.wakes import ClientWakes
from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.errors import CommandTimedOut, HarvestError, NotServed
from harvest_engine.interceptors import (
    ClientCommandCall,
    Interceptors,
    chained,
    checked_headers,
)
from harvest_engine.run_lookup import run_of
from harvest_engine.store.sqlite.client_queue import CommandQueue

if TYPE_CHECKING:
    from harvest_engine.states import ExecutionId
    from harvest_engine.store.postgres.client_queue import PostgresCommandQueue
    from harvest_engine.store.postgres.reader import PostgresReader
    from harvest_engine.store.sqlite.reader import SqliteReader


class CommandRoundTrip:
    """Where a client queues its commands (`path`, its queue) and reads, and the one round trip."""

    def __init__(
        self,
        path: str,
        queue: CommandQueue | PostgresCommandQueue,
        reader: SqliteReader | PostgresReader,
        interceptors: Interceptors | None = None,
    ) -> None:
        self.path = path
        self._queue = queue
        self._reader = reader
        self._interceptors = interceptors or Interceptors()
        # A file's wake channel, opened at the first wait (Postgres has notices).
        self._wakes = ClientWakes(path) if isinstance(queue, CommandQueue) else None

    def _run_id(
        self, exec_id: str | ExecutionId | None, workflow_id: str | None
    ) -> str:
        """The run a call names: its exec id, or `workflow_id`'s RUNNING run, else its newest."""
        return run_of(self._reader, exec_id, workflow_id)

    async def _call(
        self,
        command: wire.Command,
        timeout: Duration,  # noqa: ASYNC109 - the commands pass theirs on
        command_id: str | None = None,
    ) -> Any:
        """Queue one command and await its reply (the result, or its typed error).

        With `command_id` (a retry: `CommandTimedOut.command_id`, or the
        caller's own key), a command already queued under that id is not
        queued again: this call awaits its reply, so it is applied once.
        Client-command interceptors run around it; the headers they leave
        travel in the row (`wire.HEADERS_KEY`).
        """
        seconds = to_timedelta(timeout, what="timeout").total_seconds()
        hooks = self._interceptors.client_command
        if not hooks:
            text = payloads.dumps(command.args())
            return await self._round_trip(command, text, seconds, command_id)
        call = ClientCommandCall(command.KIND, command.args())

        async def final(call: ClientCommandCall) -> Any:
            args = dict(call.args)
            headers = checked_headers(call.headers)
            if headers:
                args[wire.HEADERS_KEY] = headers
            return await self._round_trip(
                command, payloads.dumps(args), seconds, command_id
            )

        return await chained(hooks, final)(call)

    async def _round_trip(
        self,
        command: wire.Command,
        text: str,
        seconds: float,
        command_id: str | None,
    ) -> Any:
        """Queue `text` as the command's row and await its reply."""
        kind = command.KIND
        command_id = (
            uuid.uuid4().hex if command_id is None else requests.command_id(command_id)
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        queued = False

        def submit() -> bool:
            """Queue the row once; True when it was queued just now (not a retry's)."""
            nonlocal queued
            if queued:
                return False
            fresh = self._queue.submit(
                command_id, kind, text, datetime.now(UTC), wire.signalled_run(command)
            )
            queued = True
            return fresh

        while True:
            # Await the reply a second at a time; between, a store nobody
            # serves (no recent heartbeat) ends the wait: NotServed.
            check_at = min(deadline, loop.time() + waits.SERVED_CHECK_SECONDS)
            got = await waits.command_reply(
                self._queue, self._wakes, command_id, submit, check_at
            )
            if got is not None:
                break
            last_beat = waits.not_served(self._queue)
            if last_beat is not None:
                raise NotServed(
                    command_id=command_id,
                    kind=kind,
                    seconds=seconds,
                    path=self.path,
                    last_beat=last_beat,
                )
            if loop.time() >= deadline:
                raise CommandTimedOut(
                    command_id=command_id, kind=kind, seconds=seconds, path=self.path
                )
        if wire.is_refusal(got[1]):
            # A refused command changed nothing: its row goes now, not with
            # the one-day purge of applied commands (a retry under this id
            # is then queued afresh). Failing that, the server's purge takes
            # it within minutes; the reply is what matters here.
            with contextlib.suppress(HarvestError):
                self._queue.settle_refused(command_id)
        return wire.read_reply(type(command), got[1])
