"""CommandEmitter: the numbered commands a run's code emits, each with the future its answer settles.

WorkflowContext's durable calls land here: each numbers its command in
emission order (which replay reproduces), queues it to be recorded (live,
`flush`) or matched (replay, `feed`), and files the future the answering
event settles in the run's `Pending`. WorkflowInstance owns one and
consumes its queue.
"""

from __future__ import annotations

import collections
import uuid
from typing import TYPE_CHECKING, Any

from harvest_engine.workflow.child_options import refusal_error
from harvest_engine.workflow.commands import (
    SOLO_COMMANDS,
    Command,
    solo_violation,
)

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable
    from datetime import datetime

    from harvest_engine.events import HistoryEvent
    from harvest_engine.workflow.loop import DeterministicLoop
    from harvest_engine.workflow.pending import Pending
    from harvest_engine.workflow.versioning import PatchBook

# Child run ids derive from the parent's id and the command number, so a
# replay computes the same id the live cycle recorded.
_CHILD_NAMESPACE = uuid.UUID("6f1c9e57-8d0a-4c1e-9a53-2b7d4e0c5a11")


class CommandEmitter:
    """What workflow code calls (through WorkflowContext): numbered commands and their futures."""

    def __init__(
        self,
        exec_id: str,
        loop: DeterministicLoop,
        pending: Pending,
        patches: PatchBook,
    ) -> None:
        self._exec_id = exec_id
        self._loop = loop
        self._pending = pending
        self._patches = patches
        # Emitted, not yet recorded (live) or matched (replay), in order.
        self.emitted: collections.deque[Command] = collections.deque()
        # Awaits since the last recorded command that emit nothing (solo rules).
        self.marks: list[str] = []
        self._command_ids = 0
        # The id of the activity `schedule_activity` scheduled last (a handle's).
        self.last_activity_id = 0
        self._log_lines: list[tuple[int, datetime, str]] = []
        self._log_count = 0

    def next_command_id(self) -> int:
        """Commands are numbered in emission order, which replay reproduces."""
        self._command_ids += 1
        return self._command_ids

    def next_timer_id(self) -> str:
        """A timer id for an anonymous timer."""
        return f"harvest.t{self.next_command_id()}"

    def emit(self, command: Command) -> None:
        """Queue a command to be recorded (live) or matched (replay)."""
        self.emitted.append(command)

    def schedule_activity(self, attrs: dict[str, Any]) -> asyncio.Future[Any]:
        """Emit ActivityScheduled; the future resolves with its completion."""
        activity_id = self.next_command_id()
        self.last_activity_id = activity_id
        future = self._loop.create_future()
        self._pending.activities[activity_id] = future
        self.emit(
            Command("ActivityScheduled", {"activity_id": activity_id, **attrs}, future)
        )
        return future

    def forget_activity(self, activity_id: int) -> None:
        """A cancelled handle no longer waits for the activity's completion or failure."""
        self._pending.activities.pop(activity_id, None)

    def start_timer(self, attrs: dict[str, Any]) -> asyncio.Future[Any]:
        """Emit TimerStarted; the future resolves with TimerOutcome.FIRED."""
        future = self._loop.create_future()
        self._pending.timers[attrs["timer_id"]] = future
        self.emit(Command("TimerStarted", attrs, future))
        return future

    def arm_timer(
        self, timer_id: str, fire_at: datetime, future: asyncio.Future[Any]
    ) -> None:
        """Ask for the durable row of a started timer (armed at the first await).

        `fire_at` counts from the decision cycle's clock (`Machine.clock`),
        also in a first drive long after the start; a row already armed keeps
        its fire time, so a replay that meets the same await again changes
        nothing.
        """
        self._pending.timer_arms.append((timer_id, fire_at, future))

    def cancel_timer(self, timer_id: str) -> None:
        """Emit TimerCancelled; the timer no longer waits for its TimerFired."""
        self.emit(Command("TimerCancelled", {"timer_id": timer_id}))
        self._pending.forget_timer(timer_id)

    def schedule_local_activity(self, attrs: dict[str, Any]) -> asyncio.Future[Any]:
        """Emit LocalActivityScheduled; the future resolves with its completion."""
        activity_id = self.next_command_id()
        future = self._loop.create_future()
        self._pending.activities[activity_id] = future
        self._pending.local_ids.add(activity_id)
        self.emit(
            Command(
                "LocalActivityScheduled", {"activity_id": activity_id, **attrs}, future
            )
        )
        return future

    def start_child(
        self, attrs: dict[str, Any], *, attached: bool
    ) -> tuple[str, asyncio.Future[Any] | None]:
        """Emit ChildWorkflowStarted; the child's id and a future.

        Attached: the future of the child's result (failed at once when the
        start is refused). Detached: the future of the recorded start, whose
        attrs say whether it was refused - by a held workflow id, its queue,
        or the child workflow's own quota, which only the registry knows.
        The code resumes within the same decision (the start answers it).
        """
        command_id = self.next_command_id()
        child = str(uuid.uuid5(_CHILD_NAMESPACE, f"{self._exec_id}:{command_id}"))
        future: asyncio.Future[Any] | None = None
        on_recorded: Callable[[HistoryEvent], None] | None = None
        if attached:
            children = self._pending.children
            future = self._loop.create_future()
            children[command_id] = (child, future)

            def refused(event: HistoryEvent) -> None:
                error = refusal_error(str(attrs["workflow_name"]), event.attrs)
                if error is None:
                    return
                entry = children.pop(command_id, None)
                if entry is not None and not entry[1].done():
                    entry[1].set_exception(error)

            on_recorded = refused
        else:
            future = self._loop.create_future()
        self.emit(
            Command(
                "ChildWorkflowStarted",
                {"command_id": command_id, "child": child, **attrs},
                future,
                on_recorded=on_recorded,
                answered=not attached and future is not None,
            )
        )
        return child, future

    def forget_child(self, child: str) -> None:
        """An attached child whose deadline won is no longer awaited."""
        self._pending.forget_child(child)

    def external(self, type_: str, attrs: dict[str, Any]) -> asyncio.Future[Any]:
        """Emit a signal or cancel to another run; the future gets the recorded outcome."""
        future = self._loop.create_future()
        command_id = self.next_command_id()
        self.emit(
            Command(type_, {"command_id": command_id, **attrs}, future, answered=True)
        )
        return future

    def await_workflow(self, target: str) -> asyncio.Future[Any]:
        """Emit ExternalWorkflowAwaited; the future resolves with the target's result."""
        future = self._loop.create_future()
        command_id = self.next_command_id()
        self._pending.awaits[command_id] = (target, future)
        self.emit(
            Command(
                "ExternalWorkflowAwaited",
                {"command_id": command_id, "target": target},
                future,
            )
        )
        return future

    def request_mutex(self, key: str) -> asyncio.Future[Any]:
        """Emit MutexRequested; the future resolves with the lock_seq of MutexGranted."""
        future = self._loop.create_future()
        self._pending.mutex_waits[key] = future
        self.emit(Command("MutexRequested", {"key": key}, future))
        return future

    def release_mutex(self, key: str) -> None:
        """Emit MutexReleased (a plain call)."""
        self.emit(Command("MutexReleased", {"key": key}))

    def patched(self, patch_id: str, applied_seq: int) -> bool:
        """`ctx.patched`: the run's fixed answer, recording the marker the first time (versioning.py)."""
        answer, command = self._patches.decide(patch_id, applied_seq=applied_seq)
        if command is not None:
            self.emit(command)
        return answer

    def deprecate_patch(self, patch_id: str, applied_seq: int) -> None:
        """`ctx.deprecate_patch`: record the marker for new runs only (versioning.py)."""
        command = self._patches.deprecate(patch_id, applied_seq=applied_seq)
        if command is not None:
            self.emit(command)

    def note_await(self, kind: str) -> None:
        """Workflow code awaits something that emits no command now (solo rules)."""
        self.marks.append(kind)

    def side_effect(self, compute: Callable[[], dict[str, Any]]) -> asyncio.Future[Any]:
        """Emit SideEffectRecorded; live it is computed once, on replay read back."""
        future = self._loop.create_future()
        effect_id = self.next_command_id()
        self.emit(
            Command("SideEffectRecorded", {"id": effect_id}, future, immediate=compute)
        )
        return future

    def condition(self, predicate: Callable[[], bool]) -> asyncio.Future[None]:
        """A future resolved once `predicate()` holds at an idle point."""
        future: asyncio.Future[None] = self._loop.create_future()
        self._pending.conditions.append((predicate, future))
        return future

    def log_line(self, message: str, at: datetime) -> None:
        """Keep a numbered log line; the store skips numbers it already holds.

        Lines are numbered in call order, which replay reproduces, so a line
        a re-run cycle emits again is recognised and stored once.
        """
        self._log_count += 1
        self._log_lines.append((self._log_count, at, message))

    def take_log_lines(self) -> list[tuple[int, datetime, str]]:
        """Log lines emitted live since the last call, numbered per run."""
        lines, self._log_lines = self._log_lines, []
        return lines

    def check_batch(self) -> tuple[str, str] | None:
        """The (feature, why) of the solo rule a new batch breaks, if any."""
        local_ids = self._pending.local_ids
        if not local_ids and not any(c.type in SOLO_COMMANDS for c in self.emitted):
            return None  # every solo rule needs a mutex or a local activity
        batch = list(self.emitted)
        ids = {int(c.attrs.get("activity_id", 0)) for c in batch}
        activities = self._pending.activities
        outstanding = any(
            not activities[aid].done()
            for aid in local_ids
            if aid in activities and aid not in ids
        )
        return solo_violation(batch, list(self.marks), outstanding)
