"""WriteTxn: the operations inside one write transaction, in engine terms.

The runtime opens a transaction with `store.write()` and calls these methods
inside it, so one decision is one transaction (STYLE §12); `JoinedWriteFailed`
and `RunBusy` are how a transaction asks its caller to run it again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from harvest_engine.store.txn_flow import FlowTxn
from harvest_engine.store.txn_progress import ProgressTxn
from harvest_engine.store.txn_shaping import ShapingTxn

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime

    from harvest_engine.events import HistoryEvent
    from harvest_engine.store.operations import ScheduleRow
    from harvest_engine.store.records import StagedSignal, TimerRow
    from harvest_engine.store.rows import (
        AttemptKey,
        AttemptRecord,
        CommandRecord,
        ExecutionRecord,
        LedgerEntry,
        NewExecution,
        NewTask,
        TaskRecord,
    )
    from harvest_engine.store.sql.flow import FlowTables


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


class WriteTxn(ShapingTxn, ProgressTxn, FlowTxn, Protocol):
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

    def announce_cancels(self, attempts: Sequence[AttemptKey], reason: str) -> None:
        """Have these claimed attempts (`rows.AttemptKey`) cancelled once this commits.

        Every process running one of them hears it (`add_cancel_listener`);
        a rollback announces nothing.
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
        self, exec_id: str, name: str, payload: str, key: str | None, at: datetime,
        headers: str | None = None,
    ) -> bool:  # fmt: skip
        """Stage a signal; False when the run already holds `key`.

        `headers` (JSON, interceptors) are written with the new row itself.
        """
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

    def put_headers(self, exec_id: str, kind: str, ref: str, text: str) -> None:
        """Store the headers (JSON text) of a run's start or of an activity (`ref`: its id)."""
        ...

    def headers(self, exec_id: str, kind: str, ref: str) -> str | None:
        """The headers stored with (run, kind, ref), or None."""
        ...

    def staged_signal_headers(self, exec_id: str) -> list[str]:
        """The headers of the run's undelivered signals that carry some, in arrival order."""
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
        signals go; keyed signals stay so their keys still dedupe. Each
        RUNNING run watching it (`watch_runs`) is flagged for a decision,
        and the links go.
        """
        ...

    def watch_runs(self, watcher: str, targets: Sequence[str]) -> bool:
        """Link `watcher` to each of `targets` it awaits, so their seal wakes it.

        True when every target is live (RUNNING or ENQUEUED) and linked:
        the watcher needs no decision flag while it waits. False when one
        could not be linked (it ended meanwhile, or on Postgres another
        transaction holds its row): the watcher keeps its flag and checks
        again at the next pass.
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

    def claim_command(self, row_id: int, hold: Sequence[str] = ()) -> bool:
        """Take a queued command for this transaction; False if it is applied or being applied.

        With several serving workers on one store, each command is applied by
        the one worker whose transaction takes it. `hold` names the runs the
        command will change: a shared store locks them as `lock_runs` does,
        in the claim's round trip (a single writer takes nothing).
        """
        ...

    def claim_command_row(
        self, row_id: int, hold: Sequence[str] = ()
    ) -> CommandRecord | None:
        """`claim_command` by a row id a notice named, the row read with it (None: not taken)."""
        ...

    def finish_command(
        self, row_id: int, reply: str, exec_id: str | None, now: datetime
    ) -> None:
        """Mark a client command applied, with its reply and the run it touched."""
        ...

    def purge_applied_commands(
        self, cutoff: datetime, refused_cutoff: datetime, limit: int
    ) -> int:
        """Delete up to `limit` commands applied before `cutoff`, refused ones before `refused_cutoff`."""
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
        """The live (RUNNING or ENQUEUED: waiting in a queue) runs whose parent is `exec_id`, oldest first."""
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

    def flow(self) -> FlowTables:
        """The flow-control tables on this transaction (queues, waits, waiting tasks)."""
        ...
