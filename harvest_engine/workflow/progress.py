"""RunProgress: what a run's code has said of its progress so far (stream positions, current details).

Workflow code's events and stream values are commands (EventSet,
StreamWritten, StreamClosed): recorded live, matched on replay. What they
need to be deterministic lives here: the next position of each stream and
the streams already closed, rebuilt by every replay from the same calls.
The current details are no event: the decision that changed them writes
them to the run's row (`take_details`), and a replay that sets them again
writes the same text once more.
"""

from __future__ import annotations

from harvest_engine import payloads
from harvest_engine.names import check_key


class RunProgress:
    """Stream positions, closed streams and the current details of one run's instance."""

    def __init__(self) -> None:
        self.positions: dict[str, int] = {}
        self.closed: set[str] = set()
        self.details: str | None = None
        self._details_changed = False

    def next_position(self, key: str, *, closing: bool) -> int:
        """The position of the stream's next row; ValueError once it is closed."""
        key = check_key(key, "stream key")
        if key in self.closed:
            raise ValueError(f"stream {key!r} is closed")
        position = self.positions.get(key, 0)
        self.positions[key] = position + 1
        if closing:
            self.closed.add(key)
        return position

    def set_details(self, text: str) -> None:
        """Note new current details (written with the decision)."""
        self.details = str(payloads.check_value(str(text), "details"))
        self._details_changed = True

    def take_details(self) -> tuple[bool, str | None]:
        """(whether the details changed since the last take, their text)."""
        changed, self._details_changed = self._details_changed, False
        return changed, self.details

    def details_unwritten(self) -> None:
        """The decision that wrote the details rolled back: the next one writes them."""
        self._details_changed = True


def step_summary(text: object) -> str:
    """A step's label (`execute_activity(..., summary=)`, `ctx.sleep(..., summary=)`)."""
    if not isinstance(text, str):
        raise TypeError(f"a step summary is text, got {type(text).__name__}")
    return str(payloads.check_value(text, "step summary"))
