"""Frozen records the store returns: listed runs, stored values, attempts, ledger and log rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from harvest_engine.states import ErrorInfo, ExecutionId


class Stored:
    """A field read from a row: ``Stored.Value(v)``, ``Stored.Null()`` or ``Stored.Unreadable(why)``.

    One damaged row never fails a page: a value that does not parse reads as
    Unreadable instead of raising.
    """

    Value: ClassVar[type[_StoredValue]]
    Null: ClassVar[type[_StoredNull]]
    Unreadable: ClassVar[type[_StoredUnreadable]]

    @property
    def value(self) -> Any:
        """The value (None for Null and Unreadable)."""
        return None

    @property
    def is_null(self) -> bool:
        """True for a NULL column."""
        return isinstance(self, _StoredNull)

    @property
    def is_unreadable(self) -> bool:
        """True for a value that could not be read."""
        return isinstance(self, _StoredUnreadable)

    def get(self, default: Any = None) -> Any:
        """The value, or `default` when Null or Unreadable."""
        return default


@dataclass(frozen=True)
class _StoredValue(Stored):
    stored: Any

    @property
    def value(self) -> Any:
        return self.stored

    def get(self, default: Any = None) -> Any:
        return self.stored


@dataclass(frozen=True)
class _StoredNull(Stored):
    pass


@dataclass(frozen=True)
class _StoredUnreadable(Stored):
    reason: str


Stored.Value = _StoredValue
Stored.Null = _StoredNull
Stored.Unreadable = _StoredUnreadable
_StoredValue.__name__ = _StoredValue.__qualname__ = "Stored.Value"
_StoredNull.__name__ = _StoredNull.__qualname__ = "Stored.Null"
_StoredUnreadable.__name__ = _StoredUnreadable.__qualname__ = "Stored.Unreadable"


@dataclass(frozen=True)
class ExecutionSummary:
    """A listed run (no payloads; see ExecutionDetail).

    `damaged` is None for a sound run; for a damaged one (an unknown state,
    unreadable ids, a history whose end does not match the row) it says why,
    and a single-run read of it raises `DatabaseCorrupt`. A listing keeps
    damaged rows, flagged, so one bad row never fails a page.
    """

    exec_id: ExecutionId
    workflow_name: str
    workflow_id: str
    state: str
    started_at: datetime | None
    closed_at: datetime | None
    attempt: int
    memo: Stored = field(default_factory=Stored.Null)
    search_attributes: Stored = field(default_factory=Stored.Null)
    cursor: int = 0
    damaged: str | None = None
    paused: bool = False
    """A RUNNING run paused by `rt.pause`: it takes no decision until unpaused."""
    summary: str | None = None
    """The run's one-line label (`StartOptions(summary=)`)."""


@dataclass(frozen=True)
class ExecutionDetail(ExecutionSummary):
    """A run with its payloads and links.

    `details` is the longer text its start gave (`StartOptions(details=)`),
    `current_details` what its code last said it is doing
    (`ctx.set_current_details`), kept on the run's row.
    """

    input: Stored = field(default_factory=Stored.Null)
    output: Stored = field(default_factory=Stored.Null)
    error: Stored = field(default_factory=Stored.Null)
    parent_exec_id: ExecutionId | None = None
    successor: ExecutionId | None = None
    predecessor: ExecutionId | None = None
    cancel_requested: str | None = None
    deadline: datetime | None = None
    pause_reason: str | None = None
    reset_from: ExecutionId | None = None
    """The run this one was reset from (`rt.reset`)."""
    reset_to: ExecutionId | None = None
    """The run a reset of this one made."""
    forked_from: ExecutionId | None = None
    """The run this one was forked from (`rt.fork`)."""
    details: str | None = None
    current_details: str | None = None


@dataclass(frozen=True)
class ExecutionPage:
    """One page of a listing; `next` is the cursor of the following page or None."""

    executions: list[ExecutionSummary]
    next: int | None


@dataclass(frozen=True)
class ActivityAttempt:
    """One attempt of an activity: when it ran and how it ended.

    `outcome` is upper case like every state string of the engine (a run's
    `state`, a task's `status`): ``"COMPLETED"``, ``"FAILED"``,
    ``"TIMED_OUT"``, ``"CANCELLED"`` (its run cancelled, terminated or reset,
    or its handle cancelled, while it ran), or ``"LOST"`` for an attempt whose process died
    mid-body, recorded when the file is reopened.
    """

    activity_id: int
    name: str
    attempt: int
    started_at: datetime
    ended_at: datetime | None
    outcome: str
    error: ErrorInfo | None


@dataclass(frozen=True)
class PendingTask:
    """An activity task that has not finished: ready, in backoff, or running."""

    task_id: int
    activity_id: int
    name: str
    status: str
    attempt: int
    max_attempts: int
    ready_at: datetime
    scheduled_at: datetime
    last_error: ErrorInfo | None
    input: Stored


@dataclass(frozen=True)
class TimerRow:
    """An unfired durable timer."""

    timer_id: str
    fire_at: datetime


@dataclass(frozen=True)
class StagedSignal:
    """A signal delivered to a run that its history has not yet taken in."""

    signal_id: int
    name: str
    payload: Stored
    idempotency_key: str | None
    received_at: datetime


@dataclass(frozen=True)
class MutexRow:
    """A mutex key a run holds or waits for."""

    key: str
    exec_id: ExecutionId
    granted: bool
    lock_seq: int | None
    queued_at: datetime
    ahead: int | None = None
    """Runs ahead of this one for the key (the holder counts): 0 when it holds it."""


@dataclass(frozen=True)
class LedgerRow:
    """One recorded LLM call of an activity attempt."""

    activity: str
    attempt: int
    model: str
    input_tokens: int
    output_tokens: int
    latency: float | None
    recorded_at: datetime


@dataclass(frozen=True)
class LogLine:
    """One workflow log line (the truncation marker has `marker` set)."""

    seq: int
    at: datetime
    message: str
    marker: bool = False


@dataclass(frozen=True, slots=True)
class StreamItem:
    """One row of a run's stream: its position, its value (None for the closing row), whether it closes."""

    position: int
    value: Any
    closed: bool
