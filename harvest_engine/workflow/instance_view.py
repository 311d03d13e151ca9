"""What the runtime reads of a workflow instance between decisions: its outcome and its waits.

The runtime asks these after a drive, to end a finished run, arm what the
code waits on and show it; none of them advances the code. A mixin of
WorkflowInstance, which sets the state declared below.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from harvest_engine.errors import HarvestInternalError
from harvest_engine.workflow.defaults import CONTINUE_AS_NEW_ADVICE_EVENTS

if TYPE_CHECKING:
    import collections
    from collections.abc import Callable
    from datetime import datetime

    from harvest_engine.workflow.commands import Command
    from harvest_engine.workflow.signals import SignalInbox


class InstanceView:
    """The read-only questions the runtime asks of a run's instance."""

    # Set by WorkflowInstance.__init__.
    main: asyncio.Task[Any] | None
    signals: SignalInbox
    advice_at: int | None
    _emitted: collections.deque[Command]
    _activities: dict[int, asyncio.Future[Any]]
    _timers: dict[str, asyncio.Future[Any]]
    _timer_arms: list[tuple[str, datetime, asyncio.Future[Any]]]
    _conditions: list[tuple[Callable[[], bool], asyncio.Future[None]]]
    _children: dict[int, tuple[str, asyncio.Future[Any]]]
    _awaits: dict[int, tuple[str, asyncio.Future[Any]]]
    _mutex_waits: dict[str, asyncio.Future[Any]]
    _local_ids: set[int]

    @property
    def advice_at_or_default(self) -> int:
        """The history length at which `should_continue_as_new()` turns true for this run."""
        return self.advice_at or CONTINUE_AS_NEW_ADVICE_EVENTS

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
