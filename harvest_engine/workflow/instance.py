"""WorkflowInstance: one run's workflow code, advanced event by event from its history.

The same path serves replay and live execution. `feed(event)` applies one
recorded event: a command event is matched against the next command the code
emitted (a mismatch is `NonDeterminismDetected`); any other event resolves
what it answers, then the code runs until it parks again. Live, the runtime
calls `flush()` to turn newly emitted commands into events, in the order
replay will meet them, and `deliver()` for new input (signals, fired timers).
"""

from __future__ import annotations

import asyncio
import collections
import functools
import inspect
import logging
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import (
    ActivityError,
    ChildWorkflowError,
    ExternalWorkflowError,
    HarvestInternalError,
    NonDeterminismDetected,
    NonDeterministicCall,
)
from harvest_engine.events import HistoryEvent
from harvest_engine.states import ErrorInfo
from harvest_engine.workflow.child_options import refusal_error
from harvest_engine.workflow.commands import (
    SOLO_COMMANDS,
    Command,
    CommandRejected,
    describe_event,
    solo_violation,
)
from harvest_engine.workflow.context import WorkflowContext
from harvest_engine.workflow.defaults import CONTINUE_AS_NEW_ADVICE_EVENTS
from harvest_engine.workflow.loop import DeterministicLoop
from harvest_engine.workflow.run_metadata import RunMetadata
from harvest_engine.workflow.signals import SignalInbox
from harvest_engine.workflow.timers import TimerOutcome
from harvest_engine.workflow.versioning import PatchBook, marker_patch_id

if TYPE_CHECKING:
    from harvest_engine.workflow.run_info import RunInfo

log = logging.getLogger("harvest_engine.workflow")

# Events the engine records that answer no command and need no action here.
_PASSIVE_EVENTS = frozenset(
    {"WorkflowRetryScheduled", "UpdateAdmitted", "LocalActivityFailed"}
)

# Child run ids derive from the parent's id and the command number, so a
# replay computes the same id the live cycle recorded.
_CHILD_NAMESPACE = uuid.UUID("6f1c9e57-8d0a-4c1e-9a53-2b7d4e0c5a11")

# What a live cycle's runtime does with an effect command: apply it in the
# decision transaction and return attrs to record with it.
Effects = Callable[[str, dict[str, Any]], dict[str, Any] | None]


class WorkflowInstance:
    """A suspended workflow run plus the bookkeeping that replays it."""

    def __init__(
        self,
        fn: Callable[..., Any],
        run: RunInfo,
        *,
        input_type: Any = None,
        cancel_reason: str | None = None,
    ) -> None:
        self.fn = fn
        self.run = run
        self.input_type = input_type
        self.cancel_reason = cancel_reason
        self.loop = DeterministicLoop()  # type: ignore[abstract]  # I/O methods are set as refusals
        self.ctx = WorkflowContext(self)
        self.signals = SignalInbox(self)
        self.queries: dict[str, Callable[..., Any]] = {}
        self.updates: dict[
            str, tuple[Callable[[Any], Any] | None, Callable[[Any], Any]]
        ] = {}
        self.current_details: str | None = None
        self.now: datetime = run.started_at or datetime.now().astimezone()
        # The live decision cycle's clock (guide §7), set by the runtime for a
        # drive; None on replay and in queries. A run's first drive starts
        # the body at WorkflowStarted's time, which may be long before it.
        self.drive_now: datetime | None = None
        self.applied_seq = 0
        self.history_length = 0
        self.main: asyncio.Task[Any] | None = None
        # WorkflowStarted waits here until the signals staged before the first
        # drive are in (guide §8: appended before the body runs); see `begin`.
        self._pending_start: HistoryEvent | None = None
        self._emitted: collections.deque[Command] = collections.deque()
        self._command_ids = 0
        self._activities: dict[int, asyncio.Future[Any]] = {}
        self._timers: dict[str, asyncio.Future[Any]] = {}
        self._timer_arms: list[tuple[str, datetime, asyncio.Future[Any]]] = []
        self._conditions: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []
        self._log_lines: list[tuple[int, datetime, str]] = []
        self._log_count = 0
        self._live = False
        self.violation: NonDeterministicCall | None = None
        # Set by the runtime for a live decision; None on replay and in queries.
        self.effects: Effects | None = None
        self.rejection: CommandRejected | None = None
        # A cascade sealed this very run mid-batch: (state, reason).
        self.halted: tuple[str, str] | None = None
        self._children: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._awaits: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._mutex_waits: dict[str, asyncio.Future[Any]] = {}
        self._local_ids: set[int] = set()
        self._marks: list[str] = []
        self.patches = PatchBook()
        self.metadata = RunMetadata()
        # The lowered continue-as-new advice WorkflowStarted recorded, if any.
        self.advice_at: int | None = None
        # The WorkflowStarted event applied (a fresh instance of the run can
        # start from it instead of reading it again).
        self.started: HistoryEvent | None = None

    # -- what workflow code calls (through WorkflowContext) -------------------

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

    # -- replay ----------------------------------------------------------------

    def expect(self, events: list[HistoryEvent]) -> None:
        """Note the recorded events about to be fed, so `patched` knows where history ends."""
        self.patches.expect(events)

    def feed(self, event: HistoryEvent) -> None:
        """Apply one recorded event (replay)."""
        self._apply(event, live=False)

    def _apply(self, event: HistoryEvent, *, live: bool) -> None:
        if event.seq != self.applied_seq + 1:
            raise HarvestInternalError(
                f"run {self.run.exec_id}: event {event.seq} applied after {self.applied_seq}"
            )
        if self._pending_start is not None and not is_before_start(event):
            # The body began after the events already applied (the live drive
            # began it there): it must not see this event's clock or seq.
            self.begin()
        self.applied_seq = event.seq
        self.history_length = event.seq
        self.now = event.at
        self._live = live
        self._marks.clear()
        if event.type == "WorkflowStarted":
            if self.main is not None or self._pending_start is not None:
                raise HarvestInternalError("WorkflowStarted applied twice")
            self._pending_start = self.started = event
            self.metadata.start(event.attrs)
            advised = event.attrs.get("continue_as_new_at")
            if isinstance(advised, int) and advised > 0:
                self.advice_at = advised
        elif event.is_command:
            self._match(event)
        else:
            # Commands still queued here are matched by later command events:
            # completions appended between decisions come before them.
            self._resolve(event)
        self._quiesce()

    @property
    def start_pending(self) -> bool:
        """WorkflowStarted is applied but the body has not begun (see `begin`)."""
        return self._pending_start is not None

    def begin(self) -> None:
        """Start the body once the signals staged before the first drive are buffered.

        The first drive appends those signals before the body runs,
        marked ``before_start``, so every signal API sees them from the
        body's first line; replay starts the body after the same marked
        events. Safe to call when the body already runs.
        """
        event, self._pending_start = self._pending_start, None
        if event is not None:
            self._start(event)
            self._quiesce()

    def _match(self, event: HistoryEvent) -> None:
        if marker_patch_id(event) is not None:
            self.patches.applied(event)
            if not self._emitted or not self._emitted[0].matches(event):
                # A marker no call claims: the patch was retired from the code.
                return
        if not self._emitted:
            raise self._divergence(event, "no command (the code emitted nothing here)")
        command = self._emitted.popleft()
        if not command.matches(event):
            raise self._divergence(event, command.describe())
        answered = command.immediate is not None or command.answered
        if answered and command.future is not None:
            command.future.set_result(dict(event.attrs))
        if command.on_recorded is not None:
            command.on_recorded(event)

    def _divergence(self, event: HistoryEvent, expected: str) -> NonDeterminismDetected:
        return NonDeterminismDetected(
            exec_id=self.run.exec_id,
            seq=event.seq,
            recorded=describe_event(event),
            expected=expected,
        )

    def _start(self, event: HistoryEvent) -> None:
        raw = event.attrs.get("input")
        if _takes_input(self.fn):
            coro = self.fn(self.ctx, payloads.from_json(raw, self.input_type))
        else:
            coro = self.fn(self.ctx)
        self.main = self.loop.create_task(
            coro, name=f"workflow {self.run.workflow_name}"
        )

    def _resolve(self, event: HistoryEvent) -> None:
        attrs = event.attrs
        kind = event.type
        if kind == "ActivityCompleted":
            self._settle(
                self._activities.pop(int(attrs.get("activity_id", 0)), None),
                attrs.get("result"),
            )
        elif kind == "ActivityFailed":
            future = self._activities.pop(int(attrs.get("activity_id", 0)), None)
            if future is not None and not future.done():
                future.set_exception(activity_error(attrs))
        elif kind == "TimerFired":
            self._settle(
                self._timers.pop(str(attrs.get("timer_id")), None), TimerOutcome.FIRED
            )
        elif kind == "SignalReceived":
            self.signals.arrive(attrs.get("name", ""), attrs.get("payload"))
        elif kind == "LocalActivityCompleted":
            self._settle(
                self._activities.pop(int(attrs.get("activity_id", 0)), None),
                attrs.get("result"),
            )
        elif kind == "LocalActivityExhausted":
            future = self._activities.pop(int(attrs.get("activity_id", 0)), None)
            if future is not None and not future.done():
                future.set_exception(activity_error(attrs))
        elif kind in ("ChildWorkflowCompleted", "ChildWorkflowFailed"):
            entry = self._children.pop(int(attrs.get("command_id", 0)), None)
            self._answer(None if entry is None else entry[1], attrs, ChildWorkflowError)
        elif kind in ("ExternalWorkflowCompleted", "ExternalWorkflowFailed"):
            entry = self._awaits.pop(int(attrs.get("command_id", 0)), None)
            self._answer(
                None if entry is None else entry[1], attrs, ExternalWorkflowError
            )
        elif kind == "MutexGranted":
            self._settle(
                self._mutex_waits.pop(str(attrs.get("key")), None),
                attrs.get("lock_seq"),
            )
        elif kind in _PASSIVE_EVENTS:
            return
        # Other engine events (cancel seals, terminal events) need no action.

    @staticmethod
    def _answer(
        future: asyncio.Future[Any] | None,
        attrs: dict[str, Any],
        error_type: type[ChildWorkflowError] | type[ExternalWorkflowError],
    ) -> None:
        if future is None or future.done():
            return
        if "error" in attrs:
            info = ErrorInfo.from_json(attrs.get("error"))
            future.set_exception(
                error_type(
                    info.message,
                    type=info.type,
                    non_retryable=info.non_retryable,
                    details=info.details,
                )
            )
        else:
            future.set_result(attrs.get("result"))

    @staticmethod
    def _settle(future: asyncio.Future[Any] | None, value: Any) -> None:
        if future is not None and not future.done():
            future.set_result(value)

    def _quiesce(self) -> None:
        """Run the code until it parks: ready callbacks first, then satisfied conditions."""
        loop = self.loop
        while True:
            try:
                loop.run_until_quiescent()
            finally:
                if loop.violation is not None and self.violation is None:
                    self.violation = loop.violation
            if not self._conditions or not self._fire_condition():
                return

    def _fire_condition(self) -> bool:
        for index, (predicate, future) in enumerate(self._conditions):
            if future.done():
                del self._conditions[index]
                return True
            if predicate():
                del self._conditions[index]
                future.set_result(None)
                return True
        return False

    # -- live ------------------------------------------------------------------

    def flush(self, next_seq: int, at: datetime) -> list[HistoryEvent]:
        """Turn emitted commands into events (seq from `next_seq`), running immediate ones.

        Side effects resolve here and the code runs on, so what they lead to is
        recorded right after them, exactly where replay will meet it.
        """
        events: list[HistoryEvent] = []
        self._live = True
        batch_start = True
        while self._emitted:
            if batch_start and self.effects is not None:
                self._check_batch()
            batch_start = False
            command = self._emitted.popleft()
            attrs = dict(command.attrs)
            if command.immediate is not None:
                attrs.update(command.immediate())
            if self.effects is not None and command.effect:
                attrs.update(self.effects(command.type, attrs) or {})
            event = HistoryEvent(seq=next_seq, type=command.type, at=at, attrs=attrs)
            next_seq += 1
            self.applied_seq = event.seq
            self.history_length = event.seq
            events.append(event)
            if self.halted is not None:
                # This run was sealed by its own command's cascade: the rest
                # of its batch does not apply (guide §9).
                self._emitted.clear()
                break
            answered = command.immediate is not None or (
                command.answered and self.effects is not None
            )
            if answered and command.future is not None:
                command.future.set_result(attrs)
            resumed = answered and command.future is not None
            if command.on_recorded is not None:
                command.on_recorded(event)
                resumed = resumed or (
                    command.future is not None and command.future.done()
                )
            if resumed:
                self._marks.clear()
                # The code resumes at this event, as replay's `feed` resumes it.
                self.now = event.at
                self._quiesce()
                batch_start = True
        self._marks.clear()
        return events

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

    def deliver(self, event: HistoryEvent) -> None:
        """Apply a new input event (a signal or a fired timer) live."""
        self._apply(event, live=True)

    def take_log_lines(self) -> list[tuple[int, datetime, str]]:
        """Log lines emitted live since the last call, numbered per run."""
        lines, self._log_lines = self._log_lines, []
        return lines

    # -- what the runtime asks ---------------------------------------------

    @property
    def advice_at_or_default(self) -> int:
        """The history length at which `should_continue_as_new()` turns true for this run."""
        return self.advice_at or CONTINUE_AS_NEW_ADVICE_EVENTS

    @property
    def done(self) -> bool:
        """Whether the workflow body has returned or raised."""
        return self.main is not None and self.main.done()

    def outcome(self) -> tuple[str, Any]:
        """("completed", output) or ("raised", exception) once `done`."""
        if self.main is None or not self.main.done():
            raise HarvestInternalError("outcome() of a run that is not done")
        if self.main.cancelled():
            return "raised", asyncio.CancelledError()
        error = self.main.exception()
        if error is not None:
            return "raised", error
        return "completed", self.main.result()

    @property
    def pending_commands(self) -> list[Command]:
        """Commands emitted but not yet recorded or matched."""
        return list(self._emitted)

    def waiting_timer_ids(self) -> list[str]:
        """Timers the code still waits on."""
        return [tid for tid, fut in self._timers.items() if not fut.done()]

    def waiting_activity_ids(self) -> list[int]:
        """Activities the code still waits on."""
        return [aid for aid, fut in self._activities.items() if not fut.done()]

    def waiting_workflows(self) -> list[tuple[str, int, str]]:
        """(kind, command_id, target) of every run the code waits on, in command order.

        `kind` is "child" for an attached child, "await" for
        `await_external_workflow`.
        """
        if not self._children and not self._awaits:
            return []
        waits = [
            ("child", cid, target)
            for cid, (target, fut) in self._children.items()
            if not fut.done()
        ]
        waits += [
            ("await", cid, target)
            for cid, (target, fut) in self._awaits.items()
            if not fut.done()
        ]
        return sorted(waits, key=lambda w: w[1])

    def waiting_mutex_keys(self) -> list[str]:
        """Mutex keys the code waits to be granted, in request order."""
        if not self._mutex_waits:
            return []
        return [key for key, fut in self._mutex_waits.items() if not fut.done()]

    def waiting_local_activity_ids(self) -> list[int]:
        """Local activities the code still waits on."""
        return [
            aid
            for aid in sorted(self._local_ids)
            if aid in self._activities and not self._activities[aid].done()
        ]

    def armed_timers(self) -> list[tuple[str, datetime]]:
        """(timer id, fire time) of every armed timer still waiting, without taking them."""
        return [(tid, at) for tid, at, fut in self._timer_arms if not fut.done()]

    def waiting_predicates(self) -> list[Callable[[], bool]]:
        """The predicates of the parked `await_condition` waits, in the order they parked."""
        return [predicate for predicate, fut in self._conditions if not fut.done()]

    def waiting_conditions(self) -> int:
        """How many `await_condition` waits are parked."""
        return sum(1 for _, fut in self._conditions if not fut.done())

    def close(self) -> None:
        """Tear the instance down (eviction); its coroutines never resume."""
        if self.main is not None and not self.main.done():
            self.main.cancel()
            try:
                self.loop.run_until_quiescent()
            except BaseException:
                log.debug(
                    "closing instance of %s raised", self.run.exec_id, exc_info=True
                )
        self.loop.close()

    # -- queries and updates (runtime/queries.py, runtime/updates.py) ----------

    def run_handler(self, call: Callable[[], Any]) -> asyncio.Task[Any]:
        """Run `call()` (sync, or returning an awaitable) on the run's loop until the code parks.

        A query or update handler runs here, in a throwaway replay, so it sees
        the run's futures and the determinism guards apply to it. The task
        is not done when the handler awaits something no replay resolves.
        """

        async def invoke() -> Any:
            result = call()
            if inspect.isawaitable(result):
                result = await result
            return result

        task: asyncio.Task[Any] = self.loop.create_task(
            invoke(), name=f"handler of {self.run.exec_id}"
        )
        self._quiesce()
        return task


@functools.lru_cache(maxsize=1024)
def _takes_input(fn: Callable[..., Any]) -> bool:
    """Whether a workflow body takes its input after `ctx`; read once per function."""
    return len(inspect.signature(fn).parameters) >= 2


def activity_error(attrs: dict[str, Any]) -> ActivityError:
    """The ActivityError workflow code sees for a recorded ActivityFailed."""
    info = ErrorInfo.from_json(attrs.get("error"))
    return ActivityError(
        info.message,
        type=info.type,
        non_retryable=info.non_retryable,
        details=info.details,
    )


def is_before_start(event: HistoryEvent) -> bool:
    """A signal the first drive appended before the body began (see `begin`)."""
    return event.type == "SignalReceived" and event.attrs.get("before_start") is True
