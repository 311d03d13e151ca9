"""DurableStore: the persistence boundary, in engine terms.

The runtime never writes SQL. It opens a write transaction with
`store.write()` and calls the `WriteTxn` methods inside it, so one decision is
one transaction. Reads that need no transaction are methods on the store.
A second store (Postgres, for many workers) implements the same protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from contextlib import AbstractContextManager

    from harvest_engine.events import HistoryEvent
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.store.operations import LedgerTotals, ScheduleRow
    from harvest_engine.store.records import (
        ActivityAttempt,
        ExecutionDetail,
        ExecutionPage,
        LedgerRow,
        LogLine,
        MutexRow,
        PendingTask,
        StagedSignal,
        TimerRow,
    )


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


class JoinedWriteFailed(BaseException):  # noqa: N818 - a request to redo, not a failure
    """A joined write without a savepoint failed: the whole transaction rolled back.

    Raised by `write_together(savepoints=False)` in place of the joined
    write's error, so no handler in between mistakes it for that error (a
    BaseException, as other internal control flow is); the caller runs the
    transaction again with savepoints, where the error is met and handled
    as before. Only a transaction that holds one run's work skips them.
    """


class RunBusy(Exception):  # noqa: N818 - a signal to stand back, not a failure
    """A decision needs another run's row that another worker holds right now.

    A shared store raises it instead of waiting for the row: two decisions
    that each hold their own run and wait for the other's would deadlock.
    The decider rolls the decision back (its own row is freed with it) and
    the run is decided again on a later pass, once the holder committed.
    Never raised outside a decision, nor by a single-writer store.
    """

    def __init__(self, exec_id: str) -> None:
        super().__init__(f"run {exec_id} is held by another worker")
        self.exec_id = exec_id


class WriteTxn(Protocol):
    """The operations available inside one write transaction."""

    def lock_for_decision(self, exec_id: str) -> bool:
        """Take the run for this decision; False when another worker is deciding it now.

        A single-writer store always takes it. On a shared store the run's row
        stays locked until the transaction ends, and a run held by another
        worker is skipped (not waited for): that worker is deciding it. From
        then on the decision waits for no other run's row either: one held
        elsewhere raises `RunBusy`.
        """
        ...

    def lock_runs(
        self,
        exec_ids: Sequence[str],
        *,
        deciding_at: datetime | None = None,
        task_ids: Sequence[int] = (),
    ) -> set[str]:
        """Take the runs a batch works through next, all at once; the ones it did not take.

        A single-writer store takes nothing and leaves none out.

        With `deciding_at`, the batch decides them: on a shared store the
        runs another worker holds, or that need no decision any more at that
        time (another worker decided them since they were listed), are not
        taken, and their `lock_for_decision` answers False: they are returned,
        and the batch passes them over. Without it, the batch records the
        outcomes of `task_ids` for these runs: their rows and then the
        tasks' are locked, waiting for them (none is left out).
        """
        ...

    def on_rollback(self, fn: Callable[[], None]) -> None:
        """Call `fn` if this transaction rolls back (its COMMIT failing included).

        The runtime registers here what undoes its in-memory state of the
        transaction's work (a claim to release, a cached instance to drop),
        so memory never runs ahead of the file after a failed commit.
        """
        ...

    def execution(self, exec_id: str) -> ExecutionRecord | None:
        """The run's row, or None."""
        ...

    def peek_execution(self, exec_id: str) -> ExecutionRecord | None:
        """The run's row, or None, for a check that decides nothing (a signal's).

        The same row as `execution`; a store may skip what it reads with the
        row for a decision (and lock nothing more).
        """
        ...

    def runs_of_key(
        self, workflow_name: str, workflow_id: str
    ) -> list[ExecutionRecord]:
        """Every run of a (workflow_name, workflow_id) key, newest first."""
        ...

    def insert_execution(self, new: NewExecution, started: HistoryEvent) -> None:
        """Insert a run and its WorkflowStarted event."""
        ...

    def load_events(self, exec_id: str, after_seq: int = 0) -> list[HistoryEvent]:
        """The run's events with seq > after_seq, in order."""
        ...

    def append_events(
        self, exec_id: str, events: Sequence[HistoryEvent], **fields: object
    ) -> None:
        """Append events (their seqs must continue the history) and set `fields` of the row.

        `fields` are columns as `update_execution` takes them, written with
        the row's next seq in one statement (a decision sets its flags with
        its events); with no events, only `fields` are set.
        """
        ...

    def staged_signals(
        self, exec_id: str, limit: int, max_bytes: int | None = None
    ) -> list[StagedSignal]:
        """Undelivered signals in arrival order: at most `limit` (-1: all).

        With `max_bytes`, stop after the signal whose payloads bring the total
        to `max_bytes` (at least one signal when any is staged).
        """
        ...

    def mark_signals_delivered(self, exec_id: str, signal_ids: Sequence[int]) -> None:
        """Drop delivered unkeyed signals; keep keyed ones (their key still dedupes)."""
        ...

    def stage_signal(
        self, exec_id: str, name: str, payload: str, key: str | None, at: datetime
    ) -> bool:
        """Stage a signal; False when the run already holds `key`."""
        ...

    def signal_key_exists(self, exec_ids: Sequence[str], key: str) -> str | None:
        """The first of `exec_ids` holding `key`, or None."""
        ...

    def due_timers(self, exec_id: str, now: datetime) -> list[TimerRow]:
        """Unfired timers whose time has come, by fire time."""
        ...

    def add_timer(self, exec_id: str, timer_id: str, fire_at: datetime) -> None:
        """Arm a durable timer; a timer already armed keeps its fire time (arming is once)."""
        ...

    def delete_timers(self, exec_id: str, timer_ids: Sequence[str]) -> None:
        """Remove fired or cancelled timers."""
        ...

    def add_task(self, task: NewTask) -> int:
        """Insert an activity task; returns its id."""
        ...

    def task(self, task_id: int) -> TaskRecord | None:
        """A task row by id."""
        ...

    def claim_task(self, task_id: int, now: datetime) -> TaskRecord | None:
        """Flip a PENDING task to RUNNING in this transaction (compare-and-swap); None if gone or taken."""
        ...

    def add_claimed_task(self, task: NewTask, now: datetime) -> TaskRecord:
        """Insert an activity task already claimed (RUNNING) at `now`; its row."""
        ...

    def delete_task(self, task_id: int) -> bool:
        """Remove a finished task; whether it was there (a seal may have taken it)."""
        ...

    def reschedule_task(
        self, task_id: int, attempt: int, ready_at: datetime, last_error: str
    ) -> bool:
        """Put a failed task back as PENDING for its next attempt; whether it was there."""
        ...

    def record_attempt(self, attempt: AttemptRecord) -> None:
        """Store one finished attempt."""
        ...

    def add_ledger(self, entries: Sequence[LedgerEntry]) -> None:
        """Store LLM calls (only in a completion's transaction)."""
        ...

    def update_execution(self, exec_id: str, **fields: object) -> None:
        """Set columns of the run's row (state, output, error, flags, ...)."""
        ...

    def seal(
        self,
        exec_id: str,
        state: str,
        *,
        closed_at: datetime,
        output: str | None = None,
        error: str | None = None,
    ) -> None:
        """End a run: set its state and close time, drop its open rows.

        Pending tasks, unfired timers, mutex places and unkeyed staged
        signals go; keyed signals stay so their keys still dedupe.
        """
        ...

    def pending_task_count(self, exec_id: str) -> int:
        """How many activity tasks the run still has."""
        ...

    def holds_no_work(self, exec_id: str) -> bool:
        """True when this transaction knows, without a read, that the run has no task and no timer.

        False means "may have some" (a store that does not know says False):
        the caller then reads the file. The answer holds after the commit for
        as long as nothing else decides the run (a single-writer store).
        """
        ...

    def append_log_lines(
        self,
        exec_id: str,
        lines: Sequence[tuple[int, datetime, str]],
        max_lines: int | None,
    ) -> None:
        """Store workflow log lines `(line_no, at, message)` (best effort, in a savepoint).

        `line_no` numbers a run's lines deterministically, so a line a re-run
        cycle emits again is skipped; past `max_lines` one marker row is kept.
        """
        ...

    # -- schedules and retention (issue 5) ------------------------------------

    def schedule(self, workflow_name: str) -> ScheduleRow | None:
        """The stored schedule of a workflow, or None."""
        ...

    def put_schedule(
        self,
        *,
        workflow_name: str,
        spec: str,
        input: str,
        overlap: str,
        max_active_runs: int,
        next_fire_at: datetime,
        paused: bool,
        now: datetime,
    ) -> None:
        """Insert or replace a schedule row (JSON `spec` and `input`)."""
        ...

    def update_schedule(
        self, workflow_name: str, now: datetime, **fields: object
    ) -> None:
        """Set `next_fire_at`, `paused` and/or `last_fired_at` of a schedule."""
        ...

    def delete_schedule(self, workflow_name: str) -> bool:
        """Remove a schedule; True if one was stored."""
        ...

    def active_schedule_runs(
        self, workflow_name: str, id_prefix: str, now: datetime
    ) -> int:
        """RUNNING runs of a schedule and their successors, not past deadline nor cancelled."""
        ...

    def claim_command(self, row_id: int) -> bool:
        """Take a queued command for this transaction; False if it is applied or being applied.

        With several serving workers on one store, each command is applied by
        the one worker whose transaction takes it.
        """
        ...

    def finish_command(
        self, row_id: int, reply: str, exec_id: str | None, now: datetime
    ) -> None:
        """Mark a client command applied, with its reply and the run it touched."""
        ...

    def purge_applied_commands(self, cutoff: datetime, limit: int) -> int:
        """Delete up to `limit` commands applied before `cutoff`; how many went."""
        ...

    def purge_terminal_batch(self, cutoff: datetime, limit: int) -> int:
        """Delete up to `limit` terminal runs closed before `cutoff`, with all their rows."""
        ...

    # -- run lifecycle (issue 3) ------------------------------------------------

    def move_staged_signals(self, from_exec: str, to_exec: str) -> None:
        """Hand a run's undelivered signals to its successor (continue-as-new)."""
        ...

    def tasks_of(self, exec_id: str) -> list[TaskRecord]:
        """Every task row of a run, oldest first."""
        ...

    def running_children(self, exec_id: str) -> list[ExecutionRecord]:
        """The RUNNING runs whose parent is `exec_id`, oldest first."""
        ...

    def enqueue_mutex(self, key: str, exec_id: str, at: datetime) -> None:
        """Queue the run for `key` (a second request of the same run keeps its place)."""
        ...

    def grant_mutex(self, key: str, exec_id: str) -> int | None:
        """Grant `key` to the run if it heads the queue and the key is free; its new lock_seq.

        The lock_seq of a key only grows, also across releases (a fencing token).
        """
        ...

    def release_mutex(self, key: str, exec_id: str) -> None:
        """Free the run's hold or queue place on `key`."""
        ...

    def expedite_local_tasks(self, exec_id: str, now: datetime) -> None:
        """Make the run's local activity retries ready at once (a pending cancel skips the wait)."""
        ...


class CommitWatcher(Protocol):
    """A file descriptor that turns readable when another process may have committed."""

    fd: int

    def drain(self) -> None:
        """Read and drop what made the descriptor readable."""
        ...

    def close(self) -> None:
        """Stop watching."""
        ...


class DurableStore(Protocol):
    """The store the runtime drives; `SqliteStore` is today's implementation."""

    storage_errors: tuple[type[Exception], ...]
    """What this store raises when storage itself fails (never blamed on workflow code)."""

    def add_rollback_listener(self, fn: Callable[[BaseException], None]) -> None:
        """Call `fn(error)` after any write transaction that storage failed is rolled back.

        The runtime drops what it keeps in memory of transactions in flight
        (its instance cache), whichever code path opened the transaction.
        """
        ...

    def release_claim(self, task_id: int) -> None:
        """Put a task this process claimed back to PENDING (its outcome was not recorded).

        Done by the next write that succeeds (or the next `ready_tasks`), so a
        task whose completion commit failed is not stranded RUNNING until a
        reopen.
        """
        ...

    def close(self) -> None:
        """Release the connection and the writer lock."""
        ...

    def write(self) -> AbstractContextManager[WriteTxn]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT, ROLLBACK on error)."""
        ...

    def claimed_task_ids(self, task_ids: Sequence[int]) -> set[int]:
        """Which of these tasks are still RUNNING (claimed, not yet recorded or dropped)."""
        ...

    def execution(self, exec_id: str) -> ExecutionRecord | None:
        """A run's row, outside any transaction."""
        ...

    def exists(self, exec_id: str) -> bool:
        """Whether a run has this id (no row read: every drive and signal checks it)."""
        ...

    def load_events(self, exec_id: str, after_seq: int = 0) -> list[HistoryEvent]:
        """A run's events after `after_seq`."""
        ...

    def runs_needing_decision(self, now: datetime) -> list[str]:
        """RUNNING runs with new input (flagged, or a timer due), oldest first."""
        ...

    def ready_tasks(self, exec_id: str | None, now: datetime) -> list[TaskRecord]:
        """PENDING tasks whose ready time has come (of one run, or of all)."""
        ...

    def claim_task(self, task_id: int, now: datetime) -> TaskRecord | None:
        """Flip a PENDING task to RUNNING in its own transaction; None if gone."""
        ...

    def save_heartbeat(self, task_id: int, details: str) -> None:
        """Store an activity's latest heartbeat payload."""
        ...

    def next_wakeup(self, exec_id: str) -> datetime | None:
        """The earliest timer or task ready time of a run."""
        ...

    def earliest_due(self, now: datetime) -> datetime | None:
        """The earliest due time over every run, schedule and queued command.

        Timers, task ready times (retry backoff), execution deadlines, a
        flagged run's not-before time (`now` when it is ready at once),
        schedule slots and pending client commands (`now`); None when
        nothing waits. The serving loop sleeps until then.
        """
        ...

    def data_version(self) -> int:
        """A number that changes when another process commits to the store."""
        ...

    def open_commit_watch(self) -> CommitWatcher | None:
        """A descriptor that wakes a server on other processes' commits, or None.

        None when the store cannot tell (the server then polls
        `data_version`) or tells another way (Postgres's LISTEN/NOTIFY).
        """
        ...

    def write_together(
        self, *, savepoints: bool = True
    ) -> AbstractContextManager[WriteTxn]:
        """A write transaction that `write()` calls on this thread join until it ends.

        Each joined write is atomic on its own (its error undoes only its
        changes), and all of them commit together with the outer one.
        Without `savepoints` (a store may take the hint or not), a joined
        write may skip its savepoint: when it fails, the whole transaction
        rolls back and raises `JoinedWriteFailed`, and the caller runs it
        again with savepoints.
        """
        ...

    def pending_commands(self, limit: int) -> list[CommandRecord]:
        """Client commands not applied yet, in arrival order."""
        ...

    def requeue_claimed_tasks(self) -> None:
        """Put every claimed task back to PENDING (a stopped server's unfinished bodies)."""
        ...

    def activity_attempts(
        self, exec_id: str, name: str | None
    ) -> list[ActivityAttempt]:
        """Finished attempts of a run's activities (of one name, or all)."""
        ...

    def describe(self, exec_id: str) -> ExecutionDetail | None:
        """One run with payloads, as Stored values."""
        ...

    def list_executions(self, filter_: ExecutionFilter) -> ExecutionPage:
        """One page of runs, newest first."""
        ...

    def visit_executions(self, filter_: ExecutionFilter) -> Iterator[ExecutionDetail]:
        """Runs with payloads under one read snapshot."""
        ...

    def pending_tasks(self, exec_id: str) -> list[PendingTask]:
        """A run's unfinished tasks."""
        ...

    def timers(self, exec_id: str) -> list[TimerRow]:
        """A run's unfired timers."""
        ...

    def staged_signals(self, exec_id: str) -> list[StagedSignal]:
        """A run's undelivered signals."""
        ...

    def mutexes(self, exec_id: str) -> list[MutexRow]:
        """Mutex places a run holds or waits for."""
        ...

    def llm_ledger(self, exec_id: str) -> list[LedgerRow]:
        """A run's LLM ledger rows."""
        ...

    def workflow_logs(self, exec_id: str) -> list[LogLine]:
        """A run's workflow log lines."""
        ...

    # -- operating (issue 5) ----------------------------------------------------

    def counts_by_state(self) -> dict[str, int]:
        """How many runs are in each state."""
        ...

    def list_schedules(self) -> list[ScheduleRow]:
        """Every stored schedule."""
        ...

    def due_schedules(self, now: datetime) -> list[ScheduleRow]:
        """Unpaused schedules whose slot has come (and damaged rows, which only warn)."""
        ...

    def llm_totals(self, exec_id: str) -> LedgerTotals:
        """A run's ledger rows summed."""
        ...
