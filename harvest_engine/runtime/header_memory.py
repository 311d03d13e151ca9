"""HeaderMemory: the stored headers this process knows without a read (interceptors only).

A run's start headers are written once, with the run, and never change, so
the first read of a run's is kept. An activity's headers are known to the
decision that scheduled it, so a body this process runs next takes them
from here instead of reading them back. Both memories are bounded: past
MEMORY entries each starts over (a miss is one read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

MEMORY = 4096


class HeaderMemory:
    """Start headers by run; headers of activities just scheduled, by (run, activity id)."""

    def __init__(self) -> None:
        self._starts: dict[str, dict[str, str]] = {}
        self._activities: dict[tuple[str, int], dict[str, str]] = {}

    def start(self, exec_id: str, read: Callable[[], dict[str, str]]) -> dict[str, str]:
        """The run's start headers: remembered, else `read()` once."""
        found = self._starts.get(exec_id)
        if found is None:
            found = read()
            if len(self._starts) >= MEMORY:
                self._starts.clear()
            self._starts[exec_id] = found
        return dict(found)

    def scheduled(
        self, exec_id: str, activity_id: int, headers: dict[str, str]
    ) -> None:
        """A decision of this process stored `headers` with an activity it scheduled."""
        if len(self._activities) >= MEMORY:
            self._activities.clear()
        self._activities[(exec_id, activity_id)] = dict(headers)

    def take_activity(self, exec_id: str, activity_id: int) -> dict[str, str] | None:
        """An activity's headers if this process scheduled it (each taken once), else None."""
        return self._activities.pop((exec_id, activity_id), None)
