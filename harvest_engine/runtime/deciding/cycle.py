"""The values a decision cycle passes between its modules.

`Decision` is what a cycle hands back to its caller, `Cycle` the mutable
state it carries inside its transaction, `Panic` the bug in workflow code it
raises to roll back. They live apart from `Decider` so that the modules that
build the cycle's outcome (`outcomes`, `projections`, `after_rollback`) can
share them without importing the cycle itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from harvest_engine.events import HistoryEvent
from harvest_engine.states import RunState
from harvest_engine.store.rows import ExecutionRecord, TaskRecord
from harvest_engine.store.txn_protocol import WriteTxn


@dataclass
class Decision:
    """What a cycle did: whether it appended anything, and where it left the run."""

    exec_id: str
    progressed: bool = False
    state: RunState | None = None
    waiting_signal: str | None = None
    # Every signal that can move the run on, when more than the one awaited.
    waiting_signal_names: tuple[str, ...] = ()
    waiting_timer: bool = False
    waiting_mutex: str | None = None
    waiting_workflows: list[str] = field(default_factory=list)
    # Waits on a run that is not its child (`await_external_workflow`): no
    # link wakes it when that run ends, so every pass checks it again.
    awaits_external: bool = False
    stuck: bool = False
    inputs_left: bool = False
    events: list[HistoryEvent] = field(default_factory=list)
    # Activity tasks this cycle scheduled and claimed in its own transaction
    # (group commit): the caller runs their bodies once the commit is done.
    claimed: list[TaskRecord] = field(default_factory=list)
    # Its transaction knew the run holds no task and no timer (`holds_no_work`):
    # a drive of the run alone need not look for ready tasks or a wakeup.
    idle: bool = False

    @property
    def terminal(self) -> bool:
        """Whether the run ended in this cycle (the caller stops driving it)."""
        return self.state is not None and self.state.is_terminal

    @property
    def waiting_workflow(self) -> str | None:
        """The first run this one waits on directly, if any."""
        return self.waiting_workflows[0] if self.waiting_workflows else None

    @property
    def keeps_checking(self) -> bool:
        """Parked on a run it could not watch, or staged signals left past the byte room.

        Every pass checks such a run again; a run whose ingest stopped at
        the byte cap's room meets the cap on its next cycle. A run waiting
        on a mutex, on its own child or on a run it watches
        (`WriteTxn.watch_runs`) keeps no flag: the release (or the seal of
        the holder), the child's end and the watched run's seal flag it
        (`children.seal_run`, the stores' mutex wake, `WriteTxn.seal`), so
        it costs nothing while it waits.
        """
        return self.awaits_external or self.inputs_left


@dataclass
class Cycle:
    """The mutable state of one cycle inside its transaction."""

    txn: WriteTxn
    row: ExecutionRecord
    now: datetime
    next_seq: int
    events: list[HistoryEvent] = field(default_factory=list)
    seal: tuple[str, dict[str, Any]] | None = None
    recorded: bool = False
    # The signal ingest used up the byte cap's room (guide §8).
    inputs_left: bool = False
    # Claim the activity tasks this cycle schedules (None: leave them PENDING).
    claimed: list[TaskRecord] | None = None

    def event(self, type_: str, attrs: dict[str, Any]) -> HistoryEvent:
        """Append an event of this cycle at the next seq."""
        event = HistoryEvent(seq=self.next_seq, type=type_, at=self.now, attrs=attrs)
        self.next_seq += 1
        self.events.append(event)
        return event

    def take(self, events: list[HistoryEvent]) -> None:
        """Count events the instance flushed as this cycle's."""
        self.events.extend(events)
        self.next_seq += len(events)


class Panic(Exception):
    """Workflow code raised outside its body: the cycle rolls back and counts it."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error
