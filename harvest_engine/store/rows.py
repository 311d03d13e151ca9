"""The rows the runtime and a store exchange through the protocols (payloads as JSON text).

Frozen dataclasses in engine terms (STYLE §11): what the `WriteTxn` and
`DurableStore` methods take and return, apart from both protocols so each
store implementation and the runtime name them from one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

AttemptKey = tuple[str, int, int]
"""An activity attempt as a cancel names it: (exec id, activity id, attempt number).

Never reused: on SQLite a task id is (an INTEGER PRIMARY KEY takes the id of
a deleted newest row), so a notice kept for a task deleted before it ran
cancelled the next task to get that id."""


@dataclass(frozen=True)
class ExecutionRecord:
    """The execution row as the runtime needs it (payloads still as JSON text)."""

    exec_id: str
    workflow_name: str
    workflow_id: str
    state: str
    attempt: int
    input: str | None
    output: str | None
    error: str | None
    parent_exec_id: str | None
    parent_close_policy: str | None
    predecessor: str | None
    successor: str | None
    started_at: datetime | None
    closed_at: datetime | None
    deadline: datetime | None
    retry_policy: str | None
    cancel_reason: str | None
    cancel_seq: int | None
    not_before: datetime | None
    next_seq: int
    history_bytes: int
    panic_count: int
    memo: str | None
    search_attributes: str | None
    pause_reason: str | None = None
    """Why the run is paused (None: it is not): no decision, no new attempt."""


@dataclass(frozen=True)
class NewExecution:
    """What a start inserts."""

    exec_id: str
    workflow_name: str
    workflow_id: str
    input: str
    attempt: int = 1
    parent_exec_id: str | None = None
    parent_close_policy: str | None = None
    predecessor: str | None = None
    deadline: datetime | None = None
    retry_policy: str | None = None
    memo: str | None = None
    search_attributes: str | None = None
    not_before: datetime | None = None


@dataclass(frozen=True)
class TaskRecord:
    """An activity task row."""

    id: int
    exec_id: str
    activity_id: int
    activity_name: str
    input: str
    queue: str
    status: str
    attempt: int
    max_attempts: int
    ready_at: datetime
    scheduled_at: datetime
    heartbeat: str | None
    last_error: str | None
    retry_policy: str | None
    start_to_close: float | None
    schedule_to_close_at: datetime | None
    idempotency_key: str
    local: bool


@dataclass(frozen=True)
class NewTask:
    """What scheduling an activity inserts."""

    exec_id: str
    activity_id: int
    activity_name: str
    input: str
    queue: str
    max_attempts: int
    ready_at: datetime
    retry_policy: str | None
    start_to_close: float | None
    schedule_to_close_at: datetime | None
    idempotency_key: str
    local: bool = False
    heartbeat_timeout: float | None = None
    """Seconds an attempt may go without a heartbeat (stores with leases only)."""


@dataclass(frozen=True)
class AttemptRecord:
    """One finished activity attempt, for `activity_attempts`."""

    exec_id: str
    activity_id: int
    activity_name: str
    attempt: int
    started_at: datetime
    ended_at: datetime
    outcome: str
    error: str | None


@dataclass(frozen=True)
class CommandRecord:
    """A client command waiting in the queue (kind and JSON args, as the client wrote them)."""

    id: int
    command_id: str
    kind: str
    args: str
    submitted_at: datetime


CommandHint = tuple[int, str]
"""A command row a client's notice named, and the run it signals ("" for none)."""


@dataclass(frozen=True)
class LedgerEntry:
    """One LLM call to write with an activity's completion."""

    exec_id: str
    activity: str
    attempt: int
    model: str
    input_tokens: int
    output_tokens: int
    latency: float | None
    recorded_at: datetime


class UnreadableRow(ValueError):
    """A side-table row whose column holds what harvest never writes there (text in a number).

    SQLite keeps any value in any column, so a hand-edited or damaged file can
    hold one; each store's boundary says it as `DatabaseCorrupt`.
    """
