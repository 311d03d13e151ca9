"""Patch markers: how `ctx.patched` lets changed workflow code replay old histories.

A run that reaches `ctx.patched("id")` for the first time records a
``MarkerRecorded`` event naming the patch, and takes the new branch. A run
whose history already holds that marker takes the new branch again on
replay. A history that went past the same point without the marker was
written by the old code: `patched` answers False there, so the replay walks
the old branch and matches what was recorded. The answer is fixed once per
run (the first call decides), so a run never mixes the branches.

"Went past the point" is judged from the history alone: while the replay
still has a recorded command (or the run's ending) after the event being
applied, the code that ran there went on and decided more, so it is
reproducing the past. Inputs recorded later (a completion, a signal) do not
count: a decision takes in every stored input before its commands, so code
reached after an earlier input of the same decision is deciding something
new, as on the live drive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.events import COMMAND_EVENTS, TERMINAL_EVENTS
from harvest_engine.workflow.commands import Command

if TYPE_CHECKING:
    from collections.abc import Iterable

    from harvest_engine.events import HistoryEvent

MARKER_EVENT = "MarkerRecorded"


def marker_patch_id(event: HistoryEvent) -> str | None:
    """The patch id a recorded event marks, or None when it is no patch marker."""
    if event.type != MARKER_EVENT:
        return None
    patch_id = event.attrs.get("patch_id")
    return patch_id if isinstance(patch_id, str) else None


def check_patch_id(patch_id: object) -> str:
    """A patch id is non-empty text: anything else is a bug in the calling code."""
    if not isinstance(patch_id, str) or not patch_id.strip():
        raise ValueError(f"a patch id is non-empty text, got {patch_id!r}")
    return patch_id


class PatchBook:
    """One run's patch decisions and what its history says about markers.

    The instance tells the book which events are about to be replayed
    (`expect`) and which it applied (`applied`); workflow code asks it
    through `decide` (for `patched`) and `deprecate` (for
    `deprecate_patch`).
    """

    def __init__(self) -> None:
        self._decided: dict[str, bool] = {}
        # Markers in the events still to be replayed, and markers already
        # applied that no call claimed (the code asks for them later now).
        self._upcoming: set[str] = set()
        self._passed: set[str] = set()
        # The last recorded event the run's code decided (a command or its ending).
        self.decided_until = 0

    def expect(self, events: Iterable[HistoryEvent]) -> None:
        """Note the recorded events the instance is about to replay, in order."""
        for event in events:
            kind = event.type
            if kind in COMMAND_EVENTS or kind in TERMINAL_EVENTS:
                if event.seq > self.decided_until:
                    self.decided_until = event.seq
                if kind == MARKER_EVENT:  # a command event
                    patch_id = marker_patch_id(event)
                    if patch_id is not None:
                        self._upcoming.add(patch_id)

    def applied(self, event: HistoryEvent) -> None:
        """A marker event was applied (matched, or skipped because no call claims it)."""
        patch_id = marker_patch_id(event)
        if patch_id is not None:
            self._upcoming.discard(patch_id)
            self._passed.add(patch_id)

    def decide(self, patch_id: str, *, applied_seq: int) -> tuple[bool, Command | None]:
        """The answer of `patched(patch_id)` and the marker command to emit, if any."""
        if patch_id in self._decided:
            return self._decided[patch_id], None
        command: Command | None = None
        if patch_id in self._upcoming:
            answer = True
            command = marker_command(patch_id)
        elif patch_id in self._passed:
            answer = True
        elif applied_seq < self.decided_until:
            # The old code went on from here and recorded no marker.
            answer = False
        else:
            answer = True
            command = marker_command(patch_id)
        self._decided[patch_id] = answer
        return answer, command

    def deprecate(self, patch_id: str, *, applied_seq: int) -> Command | None:
        """The marker command `deprecate_patch(patch_id)` emits, if any.

        New runs still record the marker (so code that reads
        `patched(patch_id)` can replay them); a history without it replays
        too, because the code keeps only the new branch.
        """
        if patch_id in self._decided:
            return None
        self._decided[patch_id] = True
        if patch_id in self._upcoming or applied_seq >= self.decided_until:
            return marker_command(patch_id)
        return None


def marker_command(patch_id: str) -> Command:
    """The MarkerRecorded command for `patch_id` (nothing waits on it)."""
    return Command(MARKER_EVENT, {"patch_id": patch_id})
