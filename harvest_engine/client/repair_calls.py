"""The repair calls of a HarvestClient: reset, fork, pause, unpause and the bulk calls by filter.

Each is one command (wire_repairs.py) the serving process applies once, as
`Runtime.reset` and its siblings do in process. A base of `HarvestClient`
beside `StartCalls`, on the same round trip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads, wire_repairs
from harvest_engine.client import requests
from harvest_engine.client.round_trip import CommandRoundTrip
from harvest_engine.store.sqlite.faults import guard_public_methods

if TYPE_CHECKING:
    from harvest_engine.durations import Duration
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.states import ExecutionId
    from harvest_engine.wire_base import Command

DEFAULT_TIMEOUT = "10s"
BULK_TIMEOUT = "60s"
"""A bulk command works through every matching run before it answers."""


def _reason(reason: object) -> str:
    if not isinstance(reason, str):
        raise TypeError(f"a reason is text, got {type(reason).__name__}")
    text: str = payloads.check_value(reason, "reason")
    return text


@guard_public_methods()
class RepairCalls(CommandRoundTrip):
    """Reset, fork, pause and unpause a run, or act on every run a filter matches."""

    async def reset(
        self,
        exec_id: str | ExecutionId,
        *,
        to_event: int | None = None,
        reason: str,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - the client's convention
        command_id: str | None = None,
    ) -> ExecutionId:
        """`Runtime.reset` in the serving process (it has today's code); the new run's id."""
        if to_event is not None and (
            isinstance(to_event, bool) or not isinstance(to_event, int)
        ):
            raise TypeError(f"to_event is an event seq (an int), got {to_event!r}")
        record = wire_repairs.Reset(
            requests.exec_id(exec_id), _reason(reason), to_event
        )
        result: ExecutionId = await self._call(record, timeout, command_id)
        return result

    async def fork(
        self,
        exec_id: str | ExecutionId,
        *,
        from_step: int,
        workflow_id: str | None = None,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - the client's convention
        command_id: str | None = None,
    ) -> ExecutionId:
        """`Runtime.fork` in the serving process; the new run's id."""
        if isinstance(from_step, bool) or not isinstance(from_step, int):
            raise TypeError(f"from_step is a step number (an int), got {from_step!r}")
        record = wire_repairs.Fork(requests.exec_id(exec_id), from_step, workflow_id)
        result: ExecutionId = await self._call(record, timeout, command_id)
        return result

    async def pause(
        self,
        exec_id: str | ExecutionId,
        reason: str = "",
        *,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - the client's convention
        command_id: str | None = None,
    ) -> None:
        """`Runtime.pause`: the run takes no decision and starts no attempt until unpaused."""
        record = wire_repairs.Pause(requests.exec_id(exec_id), _reason(reason))
        await self._call(record, timeout, command_id)

    async def unpause(
        self,
        exec_id: str | ExecutionId,
        *,
        timeout: Duration = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - the client's convention
        command_id: str | None = None,
    ) -> None:
        """`Runtime.unpause`."""
        await self._call(
            wire_repairs.Unpause(requests.exec_id(exec_id)), timeout, command_id
        )

    async def _many(
        self,
        record: Command,
        timeout: Duration,  # noqa: ASYNC109 - the calls pass theirs on
        command_id: str | None,
    ) -> int:
        result = await self._call(record, timeout, command_id)
        return int(result)

    async def cancel_many(
        self,
        flt: ExecutionFilter,
        reason: str = "",
        *,
        timeout: Duration = BULK_TIMEOUT,  # noqa: ASYNC109 - the client's convention
        command_id: str | None = None,
    ) -> int:
        """`Runtime.cancel_many`: how many runs were asked to cancel."""
        data = wire_repairs.filter_json(flt)
        return await self._many(
            wire_repairs.CancelMany(data, _reason(reason)), timeout, command_id
        )

    async def terminate_many(
        self,
        flt: ExecutionFilter,
        reason: str = "",
        *,
        timeout: Duration = BULK_TIMEOUT,  # noqa: ASYNC109 - the client's convention
        command_id: str | None = None,
    ) -> int:
        """`Runtime.terminate_many`: how many runs ended."""
        data = wire_repairs.filter_json(flt)
        return await self._many(
            wire_repairs.TerminateMany(data, _reason(reason)), timeout, command_id
        )

    async def signal_many(
        self,
        flt: ExecutionFilter,
        name: str,
        payload: Any = None,
        *,
        timeout: Duration = BULK_TIMEOUT,  # noqa: ASYNC109 - the client's convention
        command_id: str | None = None,
    ) -> int:
        """`Runtime.signal_many`: how many runs took the signal."""
        value = payloads.to_json(payload)
        payloads.check(value, "signal payload")
        record = wire_repairs.SignalMany(wire_repairs.filter_json(flt), name, value)
        return await self._many(record, timeout, command_id)

    async def reset_many(
        self,
        flt: ExecutionFilter,
        *,
        reason: str,
        timeout: Duration = BULK_TIMEOUT,  # noqa: ASYNC109 - the client's convention
        command_id: str | None = None,
    ) -> int:
        """`Runtime.reset_many`: how many runs were reset."""
        data = wire_repairs.filter_json(flt)
        return await self._many(
            wire_repairs.ResetMany(data, _reason(reason)), timeout, command_id
        )

    async def pause_many(
        self,
        flt: ExecutionFilter,
        reason: str = "",
        *,
        timeout: Duration = BULK_TIMEOUT,  # noqa: ASYNC109 - the client's convention
        command_id: str | None = None,
    ) -> int:
        """`Runtime.pause_many`: how many runs were paused now."""
        data = wire_repairs.filter_json(flt)
        return await self._many(
            wire_repairs.PauseMany(data, _reason(reason)), timeout, command_id
        )

    async def unpause_many(
        self,
        flt: ExecutionFilter,
        *,
        timeout: Duration = BULK_TIMEOUT,  # noqa: ASYNC109 - the client's convention
        command_id: str | None = None,
    ) -> int:
        """`Runtime.unpause_many`: how many runs were unpaused."""
        data = wire_repairs.filter_json(flt)
        return await self._many(wire_repairs.UnpauseMany(data), timeout, command_id)
