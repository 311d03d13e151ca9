"""WorkflowContext: the deterministic API workflow code calls (activities, timers, signals, ...)."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import random as _random
import typing
import uuid
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.errors import ContinueAsNew
from harvest_engine.names import check_name
from harvest_engine.workflow import combinators
from harvest_engine.workflow.commands import Command
from harvest_engine.workflow.context_activities import ActivityCalls
from harvest_engine.workflow.deadlines import signal_within
from harvest_engine.workflow.mutex import WorkflowMutex
from harvest_engine.workflow.progress import step_summary
from harvest_engine.workflow.recorded_errors import (
    side_effect_error,
    side_effect_result,
)
from harvest_engine.workflow.run_metadata import check_search_attributes
from harvest_engine.workflow.timers import TimerHandle, start_timer
from harvest_engine.workflow.versioning import check_patch_id

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
    from datetime import datetime

    from harvest_engine.workflow.run_info import RunInfo


class WorkflowContext(ActivityCalls):
    """Passed to every workflow body; every durable call is awaitable and deterministic."""

    # The run's generator, made at first use (see `_rng`).
    _seeded: _random.Random | None = None

    @property
    def _rng(self) -> _random.Random:
        """The run's generator, seeded by its id at first use (most runs never draw)."""
        if self._seeded is None:
            seed = int.from_bytes(
                hashlib.sha256(self._machine.run.exec_id.encode()).digest()[:8], "big"
            )
            self._seeded = _random.Random(seed)
        return self._seeded

    # -- facts about the run -------------------------------------------------

    def info(self) -> RunInfo:
        """The run's names, ids and attempt."""
        return self._machine.run

    def now(self) -> datetime:
        """The time of the event being applied: identical on every replay."""
        return self._machine.now

    def system_now(self) -> datetime:
        """The decision cycle's clock (the same value `now()` gives on replay).

        Under `run_until_blocked_as_of` it is the time the call names, also
        in a run's first drive, whose body starts at WorkflowStarted's time.
        """
        return self._machine.clock()

    def random(self) -> float:
        """A float in [0, 1) from a generator seeded by the run id."""
        return self._rng.random()

    def uuid4(self) -> uuid.UUID:
        """A version-4 UUID from the run's seeded generator."""
        return uuid.UUID(int=self._rng.getrandbits(128), version=4)

    def cancellation_reason(self) -> str | None:
        """The reason of a pending cancel request, or None."""
        return self._machine.cancel_reason

    def is_cancelled(self) -> bool:
        """Whether a cancel has been requested."""
        return self._machine.cancel_reason is not None

    def deadline(self) -> datetime | None:
        """The run's execution deadline, if it has one."""
        return self._machine.run.deadline

    def should_continue_as_new(self) -> bool:
        """True once the history is long enough that a loop should continue as new.

        At 10,000 events, or at 80% of the event cap when the runtime's caps
        were set lower when the run started; and at 80% of the byte cap
        (the stored event JSON) when that was set lower, so a loop that
        checks before each step hands over while a step of up to a fifth of
        the cap still fits. Both are recorded with its start, so a replay
        answers the same.
        """
        machine = self._machine
        if machine.history_length >= machine.advice_at_or_default:
            return True
        advice_bytes = machine.advice_bytes
        return advice_bytes is not None and machine.history_bytes >= advice_bytes

    def history_length(self) -> int:
        """How many events the run's history holds at this point of the code (replays alike)."""
        return self._machine.history_length

    # -- versioning and run metadata (workflow/versioning.py, workflow/run_metadata.py) --

    def patched(self, patch_id: str) -> bool:
        """Whether this run takes the new code of patch `patch_id` (a plain call).

        True for a run reaching this point now (it records a MarkerRecorded
        event) and for a run whose history holds that marker; False for a
        history the old code wrote past this point without it. The first
        call decides for the whole run.
        """
        machine = self._machine
        return machine.commands.patched(check_patch_id(patch_id), machine.applied_seq)

    def deprecate_patch(self, patch_id: str) -> None:
        """Keep only the new branch of `patch_id` once no run can take the old one."""
        machine = self._machine
        machine.commands.deprecate_patch(check_patch_id(patch_id), machine.applied_seq)

    def memo(self) -> dict[str, Any]:
        """The run's memo as of this point of the code (a copy; {} when it has none)."""
        return self._machine.metadata.memo()

    def search_attributes(self) -> dict[str, Any]:
        """The run's search attributes as of this point of the code (a copy)."""
        return self._machine.metadata.search_attributes()

    def upsert_memo(self, patch: Mapping[str, Any]) -> None:
        """Merge `patch` into the memo (a None value removes its key); durable, seen by describe."""
        checked = self._machine.metadata.upsert_memo(patch)
        self._machine.commands.emit(Command("MemoUpserted", {"patch": checked}))

    def continue_as_new(
        self, input: Any = None, *, workflow_type: str | None = None
    ) -> typing.NoReturn:
        """End this run and start its successor with `input` (never returns).

        Args:
            input: the successor's start input.
            workflow_type: only the run's own type is supported; another one
                is rejected and the run ends FAILED.
        """
        if (
            workflow_type is not None
            and workflow_type != self._machine.run.workflow_name
        ):
            raise self._machine.reject(
                "ContinueAsNew.new_workflow_type",
                f"continue_as_new to another workflow type ({workflow_type!r}) is not supported "
                "by the SQLite backend",
            )
        value, _ = payloads.checked(input, "continue_as_new input")
        raise ContinueAsNew(value)

    def log(self, message: str) -> None:
        """A workflow log line, stored once per run when a log policy is set."""
        machine = self._machine
        machine.commands.log_line(
            payloads.check_value(str(message), "log message"), machine.now
        )

    # -- mutex ---------------------------------------------------------------

    def mutex(self, key: str) -> WorkflowMutex:
        """A durable mutex shared by every run of this file: ``async with ctx.mutex("k"):``."""
        if not isinstance(key, str) or not key.strip():
            raise ValueError("a mutex key is non-empty text")
        check_name(key, "mutex key")
        return WorkflowMutex(self._machine, key)

    # -- timers --------------------------------------------------------------

    async def timer(self, seconds: Duration, *, summary: str | None = None) -> None:
        """Wait durably for a while (survives restarts); `summary` labels the step."""
        duration = to_timedelta(seconds, what="timer duration")
        label = None if summary is None else step_summary(summary)
        machine = self._machine
        timer_id = machine.commands.next_timer_id()
        future = start_timer(machine, timer_id, duration, label)
        machine.commands.arm_timer(timer_id, machine.clock() + duration, future)
        await future

    async def sleep(self, duration: Duration, *, summary: str | None = None) -> None:
        """The same as `timer`; `summary` labels the step (stored with TimerStarted)."""
        await self.timer(duration, summary=summary)

    def start_timer(self, timer_id: str, duration: Duration) -> TimerHandle:
        """A cancellable durable timer named `timer_id`."""
        if not isinstance(timer_id, str) or not timer_id.strip():
            raise ValueError("start_timer needs a non-empty timer id")
        check_name(timer_id, "timer id")
        if timer_id.startswith("harvest."):
            raise ValueError("timer ids starting with 'harvest.' are reserved")
        return TimerHandle(
            self._machine, timer_id, to_timedelta(duration, what="start_timer duration")
        )

    # -- signals -------------------------------------------------------------

    async def wait_for_signal(self, name: str) -> Any:
        """Wait for the next signal `name`; its JSON payload."""
        return await self._machine.signals.next(check_name(name, "signal name"))

    async def receive_signal(self, name: str, type: Any = None) -> Any:
        """Like `wait_for_signal`, converting the payload to `type` (e.g. a dataclass)."""
        return payloads.from_json(await self.wait_for_signal(name), type)

    def drain_signals(self, name: str) -> list[Any]:
        """Every buffered payload of `name`, in arrival order (empty when none)."""
        return self._machine.signals.drain(check_name(name, "signal name"))

    def try_receive_signal(self, name: str) -> Any:
        """The oldest buffered payload of `name`, or None without waiting."""
        return self._machine.signals.pop(check_name(name, "signal name"))

    async def wait_for_signal_timeout(self, name: str, duration: Duration) -> Any:
        """Wait for signal `name` or a durable deadline; None when the deadline wins."""
        return await signal_within(self._machine, name, duration)

    async def receive_signal_timeout(
        self, name: str, duration: Duration, type: Any = None
    ) -> Any:
        """Like `wait_for_signal_timeout`, converting the payload to `type`."""
        value = await self.wait_for_signal_timeout(name, duration)
        return None if value is None else payloads.from_json(value, type)

    def register_signal_handler(self, name: str, fn: Callable[[Any], Any]) -> None:
        """Call `fn(payload)` for every signal `name` (buffered ones first, in order).

        The payload is converted to `fn`'s annotated parameter type (a
        dataclass, a pydantic model) as `receive_signal(name, type=)` does.
        """
        checked = check_name(name, "signal name")
        self._machine.signals.set_handler(
            checked, payloads.decoding(fn, f"signal {checked!r} payload")
        )

    async def await_condition(self, predicate: Callable[[], bool]) -> None:
        """Wait until `predicate()` is true (checked whenever the workflow is idle)."""
        if predicate():
            return
        await self._machine.commands.condition(predicate)

    # -- handlers for queries and updates ------------------------------------

    def register_query(self, name: str, fn: Callable[..., Any]) -> None:
        """Serve `rt.query(exec_id, name, arg)` with `fn()` or `fn(arg)`; must not mutate."""
        self._machine.queries[check_name(name, "query name")] = fn

    def register_update_handler(
        self,
        name: str,
        validator: Callable[[Any], Any] | None,
        handler: Callable[[Any], Awaitable[Any]],
    ) -> None:
        """Serve `rt.update(exec_id, name, arg)`: `validator(arg)` raises to reject."""
        self._machine.updates[check_name(name, "update name")] = (validator, handler)

    # -- side effects and search attributes ----------------------------------

    async def side_effect(self, fn: Callable[[], Any]) -> Any:
        """Run `fn` once, live, and record its JSON result; replay returns the recorded value."""
        recorded = await self._machine.commands.side_effect(
            functools.partial(side_effect_result, fn)
        )
        if "error" in recorded:
            raise side_effect_error(recorded["error"])
        return recorded.get("value")

    def upsert_search_attrs(self, attributes: Mapping[str, Any]) -> None:
        """Merge search attributes into the run's row (recorded as SearchAttributesUpserted)."""
        checked = check_search_attributes(attributes)
        self._machine.metadata.upsert_search_attributes(checked)
        self._machine.commands.emit(
            Command("SearchAttributesUpserted", {"attributes": checked})
        )

    # -- deterministic combinators -------------------------------------------

    async def wait(
        self,
        aws: Iterable[Awaitable[Any]],
        *,
        return_when: str = asyncio.ALL_COMPLETED,
    ) -> tuple[list[asyncio.Future[Any]], list[asyncio.Future[Any]]]:  # fmt: skip
        """Like `asyncio.wait`, but `(done, pending)` are lists in input order."""
        return await combinators.wait(aws, return_when=return_when)

    def as_completed(self, aws: Iterable[Awaitable[Any]]) -> Iterator[Awaitable[Any]]:
        """Like `asyncio.as_completed`, in completion order (ties in input order)."""
        return combinators.as_completed(aws)
