"""WorkflowInstance: one run's workflow code, advanced event by event from its history.

The same path serves replay and live execution. `feed(event)` applies one
recorded event: a command event is matched against the next command the code
emitted (a mismatch is `NonDeterminismDetected`); any other event resolves
what it answers, then the code runs until it parks again. Live, the runtime
calls `flush()` to turn newly emitted commands into events, in the order
replay will meet them, and `deliver()` for new input (signals, fired timers).
It implements `Machine` (machine.py) for the code's WorkflowContext and owns
the parts that context reaches: the CommandEmitter its calls emit through
(emitter.py) and the Pending futures their answers settle (pending.py).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import (
    HarvestInternalError,
    NonDeterminismDetected,
    NonDeterministicCall,
)
from harvest_engine.events import HistoryEvent
from harvest_engine.workflow.commands import CommandRejected, describe_event
from harvest_engine.workflow.context import WorkflowContext
from harvest_engine.workflow.defaults import CONTINUE_AS_NEW_ADVICE_EVENTS
from harvest_engine.workflow.emitter import CommandEmitter
from harvest_engine.workflow.loop import DeterministicLoop
from harvest_engine.workflow.pending import Pending
from harvest_engine.workflow.progress import RunProgress
from harvest_engine.workflow.run_metadata import RunMetadata
from harvest_engine.workflow.signals import SignalInbox
from harvest_engine.workflow.versioning import PatchBook, marker_patch_id

if TYPE_CHECKING:
    from harvest_engine.workflow.commands import Command
    from harvest_engine.workflow.run_info import RunInfo

log = logging.getLogger("harvest_engine.workflow")

# What a live cycle's runtime does with an effect command: apply it in the
# decision transaction and return attrs to record with it.
Effects = Callable[[str, dict[str, Any]], dict[str, Any] | None]


class WorkflowInstance:
    """A suspended workflow run plus the bookkeeping that replays it (a `Machine`)."""

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
        self.patches = PatchBook()
        self.pending = Pending()
        self.commands = CommandEmitter(
            run.exec_id, self.loop, self.pending, self.patches
        )
        self.ctx = WorkflowContext(self)
        self.signals = SignalInbox(self.loop)
        # What the runtime asks after a drive, answered by the parts that
        # know it: bound once here, so asking costs no forwarding call.
        self.take_log_lines = self.commands.take_log_lines
        self.take_timer_arms = self.pending.take_timer_arms
        self.waiting_timer_ids = self.pending.waiting_timer_ids
        self.waiting_activity_ids = self.pending.waiting_activity_ids
        self.waiting_workflows = self.pending.waiting_workflows
        self.waiting_mutex_keys = self.pending.waiting_mutex_keys
        self.waiting_conditions = self.pending.waiting_conditions
        self.queries: dict[str, Callable[..., Any]] = {}
        self.updates: dict[
            str, tuple[Callable[[Any], Any] | None, Callable[[Any], Any]]
        ] = {}
        self.progress = RunProgress()
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
        self._live = False
        self.violation: NonDeterministicCall | None = None
        # Set by the runtime for a live decision; None on replay and in queries.
        self.effects: Effects | None = None
        # The first call the code made that the backend refuses, if any.
        self.rejection: CommandRejected | None = None
        # A cascade sealed this very run mid-batch: (state, reason).
        self.halted: tuple[str, str] | None = None
        self.metadata = RunMetadata()
        # The lowered continue-as-new advice WorkflowStarted recorded, if any.
        self.advice_at: int | None = None
        # The lowered byte advice it recorded, if any, and the stored bytes
        # of the events applied so far (counted only under that advice).
        self.advice_bytes: int | None = None
        self.history_bytes = 0
        # The WorkflowStarted event applied (a fresh instance of the run can
        # start from it instead of reading it again).
        self.started: HistoryEvent | None = None

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
        if self.advice_bytes is not None:
            self.history_bytes += len(payloads.dumps(event.attrs))
        self.now = event.at
        self._live = live
        self.commands.marks.clear()
        if event.type == "WorkflowStarted":
            if self.main is not None or self._pending_start is not None:
                raise HarvestInternalError("WorkflowStarted applied twice")
            self._pending_start = self.started = event
            self.metadata.start(event.attrs)
            advised = event.attrs.get("continue_as_new_at")
            if isinstance(advised, int) and advised > 0:
                self.advice_at = advised
            advised = event.attrs.get("continue_as_new_bytes")
            if isinstance(advised, int) and advised > 0:
                self.advice_bytes = advised
                self.history_bytes = len(payloads.dumps(event.attrs))
        elif event.is_command:
            self._match(event)
        elif event.type == "SignalReceived":
            attrs = event.attrs
            self.signals.arrive(attrs.get("name", ""), attrs.get("payload"))
            if joins_next(event):
                return  # the code runs once the drive's last signal is in
        else:
            # Commands still queued here are matched by later command events:
            # completions appended between decisions come before them.
            self.pending.answer(event)
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
        emitted = self.commands.emitted
        if marker_patch_id(event) is not None:
            self.patches.applied(event)
            if not emitted or not emitted[0].matches(event):
                # A marker no call claims: the patch was retired from the code.
                return
        if not emitted:
            raise self._divergence(event, "no command (the code emitted nothing here)")
        command = emitted.popleft()
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

    def _quiesce(self) -> None:
        """Run the code until it parks: ready callbacks first, then satisfied conditions."""
        loop = self.loop
        while True:
            try:
                loop.run_until_quiescent()
            finally:
                if loop.violation is not None and self.violation is None:
                    self.violation = loop.violation
            pending = self.pending
            if not pending.conditions or not pending.fire_condition():
                return

    # -- live ------------------------------------------------------------------

    def flush(self, next_seq: int, at: datetime) -> list[HistoryEvent]:
        """Turn emitted commands into events (seq from `next_seq`), running immediate ones.

        Side effects resolve here and the code runs on, so what they lead to is
        recorded right after them, exactly where replay will meet it.
        """
        events: list[HistoryEvent] = []
        self._live = True
        batch_start = True
        commands = self.commands
        emitted = commands.emitted
        while emitted:
            if batch_start and self.effects is not None:
                broken = commands.check_batch()
                if broken is not None:
                    raise self.reject(*broken)
            batch_start = False
            command = emitted.popleft()
            attrs = dict(command.attrs)
            if command.immediate is not None:
                attrs.update(command.immediate())
            if self.effects is not None and command.effect:
                attrs.update(self.effects(command.type, attrs) or {})
            event = HistoryEvent(seq=next_seq, type=command.type, at=at, attrs=attrs)
            next_seq += 1
            self.applied_seq = event.seq
            self.history_length = event.seq
            if self.advice_bytes is not None:
                self.history_bytes += len(payloads.dumps(attrs))
            events.append(event)
            if self.halted is not None:
                # This run was sealed by its own command's cascade: the rest
                # of its batch does not apply (guide §9).
                emitted.clear()
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
                commands.marks.clear()
                # The code resumes at this event, as replay's `feed` resumes it.
                self.now = event.at
                self._quiesce()
                batch_start = True
        commands.marks.clear()
        return events

    def deliver(self, event: HistoryEvent) -> None:
        """Apply a new input event (a signal or a fired timer) live."""
        self._apply(event, live=True)

    # -- what the code and the runtime read between decisions ------------------

    def clock(self) -> datetime:
        """The decision cycle's clock when live, else the applied event's time."""
        return self.drive_now if self.drive_now is not None else self.now

    @property
    def advice_at_or_default(self) -> int:
        """The history length at which `should_continue_as_new()` turns true for this run."""
        return self.advice_at or CONTINUE_AS_NEW_ADVICE_EVENTS

    def reject(self, feature: str, why: str) -> CommandRejected:
        """Remember a rejected command and return the error to raise."""
        rejection = CommandRejected(feature, why)
        if self.rejection is None:
            self.rejection = rejection
        return rejection

    @property
    def done(self) -> bool:
        """Whether the workflow body has returned or raised (or a signal handler failed the run)."""
        if self.signals.failure is not None:
            return True
        return self.main is not None and self.main.done()

    def outcome(self) -> tuple[str, Any]:
        """("completed", output) or ("raised", exception) once `done`."""
        if self.signals.failure is not None:
            return "raised", self.signals.failure
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
        return list(self.commands.emitted)

    # -- eviction --------------------------------------------------------------

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

    # -- queries and updates (runtime/talking/queries.py, runtime/talking/updates.py) ----------

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


def is_before_start(event: HistoryEvent) -> bool:
    """A signal the first drive appended before the body began (see `begin`)."""
    return event.type == "SignalReceived" and event.attrs.get("before_start") is True


def joins_next(event: HistoryEvent) -> bool:
    """A signal a drive appended together with the next one: the code did not run between.

    A drive appends every staged signal before the code goes on (guide
    §8), so a drain after a wake-up sees them all; each but the last is
    marked ``with_next``, and replay runs the code only after the last.
    """
    return event.type == "SignalReceived" and event.attrs.get("with_next") is True
