"""ProgressCalls: the calls of a WorkflowContext that tell the world how far the run is.

Events (`set_event`: the last value per key), streams (`write_stream`,
`close_stream`: values in order) and the current details. Each event and
stream call is a plain call that records one command (EventSet,
StreamWritten, StreamClosed): live the decision writes it and its row in
one transaction, on replay the recorded event matches it. Readers outside
the run (`rt.get_event`, `client.read_stream`, ...) see only what committed.
"""

from __future__ import annotations

from typing import Any

from harvest_engine.names import check_key
from harvest_engine.workflow.commands import Command
from harvest_engine.workflow.context_runs import OtherRunsCalls
from harvest_engine.workflow.targets import checked_value


class ProgressCalls(OtherRunsCalls):
    """Events, streams and current details of `WorkflowContext`."""

    def set_event(self, key: str, value: Any) -> None:
        """Publish `value` under `key` (durable; a later call replaces it).

        Read from outside with `rt.get_event(exec_id, key)`,
        `client.get_event(...)` or `events(exec_id)`.
        """
        checked = checked_value(value, "event value")
        attrs = {"key": check_key(key, "event key"), "value": checked}
        self._machine.commands.emit(Command("EventSet", attrs))

    def write_stream(self, key: str, value: Any) -> None:
        """Append `value` to stream `key` (durable; read in order by `read_stream`).

        Raises:
            ValueError: the stream was closed.
        """
        checked = checked_value(value, "stream value")
        position = self._machine.progress.next_position(key, closing=False)
        self._machine.commands.emit(
            Command(
                "StreamWritten", {"key": key, "position": position, "value": checked}
            )
        )

    def close_stream(self, key: str) -> None:
        """Close stream `key`: its readers end after the values written so far.

        Raises:
            ValueError: the stream was closed already.
        """
        position = self._machine.progress.next_position(key, closing=True)
        self._machine.commands.emit(
            Command("StreamClosed", {"key": key, "position": position})
        )

    def set_current_details(self, text: str) -> None:
        """Say what the run is doing now; durable on its row (describe's `current_details`).

        Written with the decision that made the call, so it survives a
        restart; it is no history event, and a replay that says it again
        writes the same text.
        """
        self._machine.progress.set_details(text)
