"""The progress calls of a HarvestClient: a run's events and streams, read and waited on.

The waiting itself is progress.py's (woken by the serving process's commit,
polling as the fallback); these are the public calls over it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.client import progress, requests
from harvest_engine.client.round_trip import CommandRoundTrip
from harvest_engine.names import check_key
from harvest_engine.store.sqlite.faults import guard_public_methods

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from harvest_engine.durations import Duration
    from harvest_engine.states import ExecutionId


@guard_public_methods()
class ProgressCalls(CommandRoundTrip):
    """Read a run's events and streams, as `Runtime`'s progress calls do in process."""

    def events(self, exec_id: str | ExecutionId) -> dict[str, Any]:
        """Every event the run set with `ctx.set_event`: key to its last value."""
        return self._reader.events(requests.exec_id(exec_id))

    async def get_event(
        self,
        exec_id: str | ExecutionId,
        key: str,
        timeout: Duration | None = None,  # noqa: ASYNC109 - API.md's contract
    ) -> Any:
        """Wait until the run sets event `key`; its value (None when the run ends without it, or at `timeout`)."""
        text = self._reader.describe(requests.exec_id(exec_id)).exec_id
        key = check_key(key, "event key")
        return await progress.get_event(
            self._reader, self._queue, self._wakes, str(text), key, timeout
        )

    def read_stream(
        self, exec_id: str | ExecutionId, key: str, *, offset: int = 0
    ) -> AsyncIterator[tuple[int, Any]]:
        """``async for offset, value in client.read_stream(exec_id, key):`` each value once, in order.

        Starts at `offset` (resume with the last offset seen + 1); ends when
        the stream is closed or the run has ended. The serving process wakes
        the reader right after the commit that wrote a value.
        """
        text = str(self._reader.describe(requests.exec_id(exec_id)).exec_id)
        return progress.read_stream(
            self._reader,
            self._queue,
            self._wakes,
            text,
            check_key(key, "stream key"),
            progress.checked_offset(offset),
        )
