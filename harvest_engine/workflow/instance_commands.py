"""The commands a workflow instance emits for its code, with the futures their answers resolve.

WorkflowContext's durable calls land here: each numbers its command in
emission order (which replay reproduces), queues it to be recorded (live,
`flush`) or matched (replay, `feed`), and keeps the future the answering
event resolves. A mixin of WorkflowInstance, which sets the state declared
below and owns the replay and live paths that consume it.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from harvest_engine.workflow.child_options import refusal_error
from harvest_engine.workflow.commands import (
    SOLO_COMMANDS,
    Command,
    CommandRejected,
    solo_violation,
)

if TYPE_CHECKING:
    import asyncio
    import collections
    from collections.abc import Callable
    from datetime import datetime, timedelta

    from harvest_engine.events import HistoryEvent
    from harvest_engine.workflow.loop import DeterministicLoop
    from harvest_engine.workflow.run_info import RunInfo
    from harvest_engine.workflow.versioning import PatchBook

# Child run ids derive from the parent's id and the command number, so a
# replay computes the same id the live cycle recorded.
_CHILD_NAMESPACE = uuid.UUID("6f1c9e57-8d0a-4c1e-9a53-2b7d4e0c5a11")


class CommandEmitter:
    """What workflow code calls (through WorkflowContext): numbered commands and their futures."""

    # Set by WorkflowInstance.__init__.
    run: RunInfo
    loop: DeterministicLoop
    now: datetime
    drive_now: datetime | None
    applied_seq: int
    rejection: CommandRejected | None
    patches: PatchBook
    _emitted: collections.deque[Command]
    _command_ids: int
    _activities: dict[int, asyncio.Future[Any]]
    _timers: dict[str, asyncio.Future[Any]]
    _timer_arms: list[tuple[str, datetime, asyncio.Future[Any]]]
    _conditions: list[tuple[Callable[[], bool], asyncio.Future[None]]]
    _log_lines: list[tuple[int, datetime, str]]
    _log_count: int
    _children: dict[int, tuple[str, asyncio.Future[Any]]]
    _awaits: dict[int, tuple[str, asyncio.Future[Any]]]
    _mutex_waits: dict[str, asyncio.Future[Any]]
    _local_ids: set[int]
    _marks: list[str]

    def next_command_id(self) -> int:
        """Commands are numbered in emission order, which replay reproduces."""
        self._command_ids += 1
        return self._command_ids

    def next_timer_id(self) -> str:
        """A timer id for an anonymous timer."""
        return f"harvest.t{self.next_command_id()}"

    def emit(self, command: Command) -> None:
        """Queue a command to be recorded (live) or matched (replay)."""
        self._emitted.append(command)

    def schedule_activity(self, attrs: dict[str, Any]) -> asyncio.Future[Any]:
        """Emit ActivityScheduled; the future resolves with its completion."""
        activity_id = self.next_command_id()
        future = self.loop.create_future()
        self._activities[activity_id] = future
        self.emit(
            Command("ActivityScheduled", {"activity_id": activity_id, **attrs}, future)
        )
        return future

    def start_timer(self, attrs: dict[str, Any]) -> asyncio.Future[Any]:
        """Emit TimerStarted; the future resolves with TimerOutcome.FIRED."""
        future = self.loop.create_future()
        self._timers[attrs["timer_id"]] = future
        self.emit(Command("TimerStarted", attrs, future))
        return future

    def arm_timer(
        self, timer_id: str, duration: timedelta, future: asyncio.Future[Any]
    ) -> None:
        """Ask for the durable row of a started timer (armed at the first await).

        The deadline counts from the decision cycle's clock, also in
        a first drive long after the start; a row already armed keeps its fire
        time, so a replay that meets the same await again changes nothing.
        """
        self._timer_arms.append((timer_id, self.clock() + duration, future))

    def clock(self) -> datetime:
        """The decision cycle's clock when live, else the applied event's time."""
        return self.drive_now if self.drive_now is not None else self.now

    def take_timer_arms(self) -> list[tuple[str, datetime]]:
        """(timer id, fire time) asked since the last call, for timers still waiting to fire."""
        arms, self._timer_arms = self._timer_arms, []
        return [
            (timer_id, fire_at)
            for timer_id, fire_at, future in arms
            if not future.done()
        ]

    def forget_timer(self, timer_id: str) -> None:
        """A cancelled timer no longer waits for its TimerFired."""
        self._timers.pop(timer_id, None)

    def schedule_local_activity(self, attrs: dict[str, Any]) -> asyncio.Future[Any]:
        """Emit LocalActivityScheduled; the future resolves with its completion."""
        activity_id = self.next_command_id()
        future = self.loop.create_future()
        self._activities[activity_id] = future
        self._local_ids.add(activity_id)
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
        start is refused). Detached with a workflow id: the future of the
        recorded start, whose attrs say whether it was refused. Detached
        without one: no future (its id never clashes).
        """
        command_id = self.next_command_id()
        child = str(uuid.uuid5(_CHILD_NAMESPACE, f"{self.run.exec_id}:{command_id}"))
        future: asyncio.Future[Any] | None = None
        on_recorded: Callable[[HistoryEvent], None] | None = None
        if attached:
            future = self.loop.create_future()
            self._children[command_id] = (child, future)

            def refused(event: HistoryEvent) -> None:
                error = refusal_error(str(attrs["workflow_name"]), event.attrs)
                if error is None:
                    return
                entry = self._children.pop(command_id, None)
                if entry is not None and not entry[1].done():
                    entry[1].set_exception(error)

            on_recorded = refused
        elif "workflow_id" in attrs:
            future = self.loop.create_future()
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
        for command_id, (target, _) in list(self._children.items()):
            if target == child:
                del self._children[command_id]

    def external(self, type_: str, attrs: dict[str, Any]) -> asyncio.Future[Any]:
        """Emit a signal or cancel to another run; the future gets the recorded outcome."""
        future = self.loop.create_future()
        command_id = self.next_command_id()
        self.emit(
            Command(type_, {"command_id": command_id, **attrs}, future, answered=True)
        )
        return future

    def await_workflow(self, target: str) -> asyncio.Future[Any]:
        """Emit ExternalWorkflowAwaited; the future resolves with the target's result."""
        future = self.loop.create_future()
        command_id = self.next_command_id()
        self._awaits[command_id] = (target, future)
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
        future = self.loop.create_future()
        self._mutex_waits[key] = future
        self.emit(Command("MutexRequested", {"key": key}, future))
        return future

    def release_mutex(self, key: str) -> None:
        """Emit MutexReleased (a plain call)."""
        self.emit(Command("MutexReleased", {"key": key}))

    def patched(self, patch_id: str) -> bool:
        """`ctx.patched`: the run's fixed answer, recording the marker the first time (versioning.py)."""
        answer, command = self.patches.decide(patch_id, applied_seq=self.applied_seq)
        if command is not None:
            self.emit(command)
        return answer

    def deprecate_patch(self, patch_id: str) -> None:
        """`ctx.deprecate_patch`: record the marker for new runs only (versioning.py)."""
        command = self.patches.deprecate(patch_id, applied_seq=self.applied_seq)
        if command is not None:
            self.emit(command)

    def note_await(self, kind: str) -> None:
        """Workflow code awaits something that emits no command now (solo rules)."""
        self._marks.append(kind)

    def reject(self, feature: str, why: str) -> CommandRejected:
        """Remember a rejected command and return the error to raise."""
        rejection = CommandRejected(feature, why)
        if self.rejection is None:
            self.rejection = rejection
        return rejection

    def side_effect(self, compute: Callable[[], dict[str, Any]]) -> asyncio.Future[Any]:
        """Emit SideEffectRecorded; live it is computed once, on replay read back."""
        future = self.loop.create_future()
        effect_id = self.next_command_id()
        self.emit(
            Command("SideEffectRecorded", {"id": effect_id}, future, immediate=compute)
        )
        return future

    def condition(self, predicate: Callable[[], bool]) -> asyncio.Future[None]:
        """A future resolved once `predicate()` holds at an idle point."""
        future: asyncio.Future[None] = self.loop.create_future()
        self._conditions.append((predicate, future))
        return future

    def log_line(self, message: str) -> None:
        """Keep a numbered log line; the store skips numbers it already holds.

        Lines are numbered in call order, which replay reproduces, so a line
        a re-run cycle emits again is recognised and stored once.
        """
        self._log_count += 1
        self._log_lines.append((self._log_count, self.now, message))

    def _check_batch(self) -> None:
        """Refuse a new batch that breaks a solo rule."""
        if not self._local_ids and not any(
            c.type in SOLO_COMMANDS for c in self._emitted
        ):
            return  # every solo rule needs a mutex or a local activity
        batch = list(self._emitted)
        ids = {int(c.attrs.get("activity_id", 0)) for c in batch}
        outstanding = any(
            not self._activities[aid].done()
            for aid in self._local_ids
            if aid in self._activities and aid not in ids
        )
        broken = solo_violation(batch, list(self._marks), outstanding)
        if broken is not None:
            raise self.reject(*broken)
