"""Pending: the futures a run's code awaits, by kind, settled by the events that answer them.

The command emitter (emitter.py) files each future here as it emits the
command; the instance hands every answering event to `answer`; the runtime
reads the `waiting_*` lists after a drive, to arm and show what the run
waits on.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from harvest_engine.errors import ChildWorkflowError, ExternalWorkflowError
from harvest_engine.workflow.recorded_errors import activity_error, answer_wait

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable
    from datetime import datetime

    from harvest_engine.events import HistoryEvent


class TimerOutcome(enum.Enum):
    """How a cancellable timer ended."""

    FIRED = "fired"
    CANCELLED = "cancelled"


class Pending:
    """What the code waits for: activities, timers, conditions, other runs and mutex keys."""

    def __init__(self) -> None:
        self.activities: dict[int, asyncio.Future[Any]] = {}
        self.local_ids: set[int] = set()
        self.timers: dict[str, asyncio.Future[Any]] = {}
        self.timer_arms: list[tuple[str, datetime, asyncio.Future[Any]]] = []
        self.conditions: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []
        self.children: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self.awaits: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self.mutex_waits: dict[str, asyncio.Future[Any]] = {}

    # -- settling --------------------------------------------------------------

    def answer(self, event: HistoryEvent) -> None:
        """Settle the future a non-command event answers.

        Signals go to the run's inbox instead; other engine events (cancel
        seals, terminal events, retries) need no action here.
        """
        attrs = event.attrs
        kind = event.type
        if kind in ("ActivityCompleted", "LocalActivityCompleted"):
            _settle(
                self.activities.pop(int(attrs.get("activity_id", 0)), None),
                attrs.get("result"),
            )
        elif kind in ("ActivityFailed", "LocalActivityExhausted"):
            future = self.activities.pop(int(attrs.get("activity_id", 0)), None)
            if future is not None and not future.done():
                future.set_exception(activity_error(attrs))
        elif kind == "TimerFired":
            _settle(
                self.timers.pop(str(attrs.get("timer_id")), None), TimerOutcome.FIRED
            )
        elif kind in ("ChildWorkflowCompleted", "ChildWorkflowFailed"):
            entry = self.children.pop(int(attrs.get("command_id", 0)), None)
            answer_wait(None if entry is None else entry[1], attrs, ChildWorkflowError)
        elif kind in ("ExternalWorkflowCompleted", "ExternalWorkflowFailed"):
            entry = self.awaits.pop(int(attrs.get("command_id", 0)), None)
            answer_wait(
                None if entry is None else entry[1], attrs, ExternalWorkflowError
            )
        elif kind == "MutexGranted":
            _settle(
                self.mutex_waits.pop(str(attrs.get("key")), None),
                attrs.get("lock_seq"),
            )

    def fire_condition(self) -> bool:
        """Resolve the first parked condition whose predicate holds; whether one was."""
        for index, (predicate, future) in enumerate(self.conditions):
            if future.done():
                del self.conditions[index]
                return True
            if predicate():
                del self.conditions[index]
                future.set_result(None)
                return True
        return False

    def forget_timer(self, timer_id: str) -> None:
        """A cancelled timer no longer waits for its TimerFired."""
        self.timers.pop(timer_id, None)

    def forget_child(self, child: str) -> None:
        """An attached child whose deadline won is no longer awaited."""
        for command_id, (target, _) in list(self.children.items()):
            if target == child:
                del self.children[command_id]

    def take_timer_arms(self) -> list[tuple[str, datetime]]:
        """(timer id, fire time) asked since the last call, for timers still waiting to fire."""
        arms, self.timer_arms = self.timer_arms, []
        return [
            (timer_id, fire_at)
            for timer_id, fire_at, future in arms
            if not future.done()
        ]

    # -- reading ---------------------------------------------------------------

    def waiting_timer_ids(self) -> list[str]:
        """Timers the code still waits on."""
        return [tid for tid, fut in self.timers.items() if not fut.done()]

    def waiting_activity_ids(self) -> list[int]:
        """Activities the code still waits on."""
        return [aid for aid, fut in self.activities.items() if not fut.done()]

    def waiting_local_activity_ids(self) -> list[int]:
        """Local activities the code still waits on."""
        return [
            aid
            for aid in sorted(self.local_ids)
            if aid in self.activities and not self.activities[aid].done()
        ]

    def waiting_workflows(self) -> list[tuple[str, int, str]]:
        """(kind, command_id, target) of every run the code waits on, in command order.

        `kind` is "child" for an attached child, "await" for
        `await_external_workflow`.
        """
        if not self.children and not self.awaits:
            return []
        waits = [
            ("child", cid, target)
            for cid, (target, fut) in self.children.items()
            if not fut.done()
        ]
        waits += [
            ("await", cid, target)
            for cid, (target, fut) in self.awaits.items()
            if not fut.done()
        ]
        return sorted(waits, key=lambda w: w[1])

    def waiting_mutex_keys(self) -> list[str]:
        """Mutex keys the code waits to be granted, in request order."""
        if not self.mutex_waits:
            return []
        return [key for key, fut in self.mutex_waits.items() if not fut.done()]

    def armed_timers(self) -> list[tuple[str, datetime]]:
        """(timer id, fire time) of every armed timer still waiting, without taking them."""
        return [(tid, at) for tid, at, fut in self.timer_arms if not fut.done()]

    def waiting_predicates(self) -> list[Callable[[], bool]]:
        """The predicates of the parked `await_condition` waits, in the order they parked."""
        return [predicate for predicate, fut in self.conditions if not fut.done()]

    def waiting_conditions(self) -> int:
        """How many `await_condition` waits are parked."""
        return sum(1 for _, fut in self.conditions if not fut.done())


def _settle(future: asyncio.Future[Any] | None, value: Any) -> None:
    if future is not None and not future.done():
        future.set_result(value)
