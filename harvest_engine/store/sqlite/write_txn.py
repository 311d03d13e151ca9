"""SqliteWriteTxn: one write transaction's statements, the WriteTxn half of the store boundary.

This file holds the run rows and their histories (the hot path of a
decision); the class composes the rest from base classes: signals and
timers (write_txn_signals.py), tasks (write_txn_tasks.py) and the side
tables both stores share (store/sql/side_tables.py).
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import HarvestInternalError
from harvest_engine.store.sql.dialect import SQLITE
from harvest_engine.store.sql.progress import SQLITE_PROGRESS, ProgressWrites
from harvest_engine.store.sql.reads import SQLITE_READS
from harvest_engine.store.sql.run_rows import Assignments, new_run_values
from harvest_engine.store.sql.shaping import SQLITE_SHAPING, ShapingTables
from harvest_engine.store.sql.side_tables import SQLITE_SIDE, SideTables
from harvest_engine.store.sqlite import verified_reads, verify
from harvest_engine.store.sqlite.decision_marks import DecisionMarks
from harvest_engine.store.sqlite.run_cache import (
    KEPT_EVENTS,
    CachedRun,
    read_run,
    started_run,
    with_fields,
)
from harvest_engine.store.sqlite.write_txn_signals import SignalsAndTimers
from harvest_engine.store.sqlite.write_txn_tasks import TaskTable
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from datetime import datetime

    from harvest_engine.events import HistoryEvent
    from harvest_engine.store.rows import ExecutionRecord, NewExecution

_assignments = Assignments(SQLITE)
# append_events' row UPDATE by the assignments of the caller's other columns.
_APPEND_UPDATES: dict[str, str] = {}


class SqliteWriteTxn(
    SignalsAndTimers,
    TaskTable,
    SideTables,
    ProgressWrites,
    ShapingTables,
    DecisionMarks,
):
    """The WriteTxn of one `BEGIN IMMEDIATE` transaction."""

    _side = SQLITE_SIDE
    _progress = SQLITE_PROGRESS
    _shaping = SQLITE_SHAPING

    # -- what progress rows (sql/progress.py) need of SQLite ----------------------

    def _progress_conn(self) -> sqlite3.Connection:
        return self._conn

    def _progress_written(self, exec_id: str) -> None:
        del exec_id  # the serving process wakes every waiting client at each commit

    # -- what the side tables (sql/side_tables.py) need of SQLite ----------------

    def _side_conn(self) -> sqlite3.Connection:
        return self._conn

    @contextmanager
    def _log_savepoint(self) -> Iterator[None]:
        conn = self._conn
        conn.execute("SAVEPOINT harvest_logs")
        try:
            yield
        except sqlite3.Error:
            conn.execute("ROLLBACK TO harvest_logs")
        conn.execute("RELEASE harvest_logs")

    def _mutex_key_lock(self, key: str) -> None:
        del key  # the only writer: a queue cannot change under this transaction

    def _wake_run(self, exec_id: str) -> None:
        row = self.execution(exec_id)
        if row is not None and row.state == "RUNNING":
            self.update_execution(exec_id, needs_decision=1)

    def _mutex_queued(self, exec_id: str) -> None:
        run = self._runs.get(exec_id)
        if run is not None:
            run.mutexes = True

    def _purging(self) -> None:
        self._runs.clear()  # rows go without being followed one by one

    def _command_holds(self, row_id: int, exec_ids: Sequence[str]) -> None:
        del row_id, exec_ids  # the only writer holds every run

    # -- runs ---------------------------------------------------------------

    def lock_runs(self, exec_ids: Sequence[str], **_: object) -> set[str]:
        del exec_ids  # the only writer holds every run: nothing to take
        return set()

    def lock_for_decision(self, exec_id: str) -> bool:
        del exec_id  # BEGIN IMMEDIATE already made this the only writer
        return True

    def execution(self, exec_id: str) -> ExecutionRecord | None:
        run = self._run(exec_id)
        return None if run is None else run.record

    def peek_execution(self, exec_id: str) -> ExecutionRecord | None:
        # The row alone: a signal's check needs none of the run's holdings.
        run = self._runs.get(exec_id)
        return (
            verified_reads.execution(self._conn, exec_id) if run is None else run.record
        )

    def _run(self, exec_id: str) -> CachedRun | None:
        """The run as this transaction knows it; read (with its holdings) the first time."""
        run = self._runs.get(exec_id)
        if run is None:
            run = read_run(self._conn, exec_id)
            if run is not None:
                self._runs.put(run)
        return run

    def runs_of_key(
        self, workflow_name: str, workflow_id: str
    ) -> list[ExecutionRecord]:
        return SQLITE_READS.runs_of_key(self._conn, workflow_name, workflow_id)

    def insert_execution(self, new: NewExecution, started: HistoryEvent) -> None:
        if started.seq != 1:
            raise HarvestInternalError(
                f"a run starts at seq 1, not {started.seq} ({new.exec_id})"
            )
        # The row is inserted with its history's end already moved past the
        # WorkflowStarted event inserted next (no update of the new row).
        attrs = payloads.dumps(started.attrs)
        at = micros(started.at)
        self._conn.execute(
            "INSERT INTO harvest_executions (exec_id, workflow_name, workflow_id, state, attempt, "
            "input, memo, search_attributes, parent_exec_id, parent_close_policy, predecessor, "
            "started_at, deadline, retry_policy, not_before, next_seq, history_bytes, "
            "needs_decision) "
            "VALUES (?, ?, ?, 'RUNNING', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 2, ?, 1)",
            (*new_run_values(new, at), len(attrs)),
        )
        self._conn.execute(
            "INSERT INTO harvest_events (exec_id, seq, type, at, attrs) VALUES (?, 1, ?, ?, ?)",
            (new.exec_id, started.type, at, attrs),
        )
        if new.parent_exec_id is not None:
            parent = self._runs.get(new.parent_exec_id)
            if parent is not None:
                parent.children = True
        # A decision in this same transaction (an eager first drive) reads
        # the new run from here instead of from the file.
        self._runs.put(started_run(new, (1, started.type, at, attrs)))

    def update_execution(self, exec_id: str, **fields: Any) -> None:
        fields = self._flag_fields(exec_id, fields, defer=False)
        if not fields:
            return
        assignments, values = _assignments(fields)
        self._conn.execute(
            f"UPDATE harvest_executions SET {assignments} WHERE exec_id = ?",
            (*values, exec_id),
        )
        self._runs.changed(exec_id, fields)

    def admit_runs(self, admitted: Sequence[tuple[str, datetime | None]]) -> None:
        for exec_id, deadline in admitted:
            self.update_execution(
                exec_id, state="RUNNING", needs_decision=1, deadline=deadline
            )

    def seal(
        self,
        exec_id: str,
        state: str,
        *,
        closed_at: datetime,
        output: str | None = None,
        error: str | None = None,
    ) -> None:
        conn = self._conn
        conn.execute(
            "UPDATE harvest_executions SET state = ?, closed_at = ?, output = ?, error = ?, "
            "needs_decision = 0 WHERE exec_id = ?",
            (state, micros(closed_at), output, error, exec_id),
        )
        self._flag_written(exec_id)
        if self._runs.watchers:
            self._wake_watchers(exec_id)
        # What the transaction knows the run does not hold needs no delete.
        run = self._runs.get(exec_id)
        if run is None or run.tasks:
            conn.execute("DELETE FROM harvest_tasks WHERE exec_id = ?", (exec_id,))
        if run is None or run.next_timer is not None:
            conn.execute("DELETE FROM harvest_timers WHERE exec_id = ?", (exec_id,))
        if run is None or run.mutexes:
            self._drop_mutex_places(exec_id)
        if run is None or run.signals:
            conn.execute(
                "DELETE FROM harvest_signals WHERE exec_id = ? AND idempotency_key IS NULL",
                (exec_id,),
            )
            conn.execute(
                "UPDATE harvest_signals SET delivered = 1 WHERE exec_id = ? AND delivered = 0",
                (exec_id,),
            )
        if run is not None:
            run.tasks = 0
            run.mutexes = False
            run.next_timer = None
            self._runs.changed(
                exec_id,
                {
                    "state": state,
                    "closed_at": closed_at,
                    "output": output,
                    "error": error,
                },
            )

    # -- events -------------------------------------------------------------

    def load_events(self, exec_id: str, after_seq: int = 0) -> list[HistoryEvent]:
        run = self._runs.get(exec_id)
        if run is not None:
            if after_seq >= run.record.next_seq - 1:
                return []  # the row says the history ends there
            tail = run.appended
            if tail and tail[0][0] <= after_seq + 1:
                # All of it was appended by this transaction: the same rows a
                # read would return, decoded the same way.
                rows = [row for row in tail if row[0] > after_seq]
                return verify.events_from_rows(self._conn, exec_id, rows, after_seq)
        return verified_reads.load_events(self._conn, exec_id, after_seq)

    def append_events(
        self, exec_id: str, events: Sequence[HistoryEvent], **fields: Any
    ) -> None:
        if not events:
            self.update_execution(exec_id, **fields)
            return
        # A completion's mark waits for the commit: the decision that follows
        # in this transaction usually sets the flag back (decision_marks;
        # `_flag_fields` inlined: every append passes the flag).
        marks = self._marks
        if marks is not None and "needs_decision" in fields:
            if len(fields) == 1 and fields["needs_decision"] == 1:
                if exec_id not in marks:
                    marks.add(exec_id)
                    self.undo.append(lambda: marks.discard(exec_id))
                fields = {}
            elif exec_id in marks:
                self._flag_written(exec_id)
        assignments, values = _assignments(fields) if fields else ("", [])
        first = events[0].seq
        encoded = []
        size = 0
        expected = first
        for event in events:
            if event.seq != expected:
                raise HarvestInternalError(
                    f"event seq {event.seq} does not continue run {exec_id} (next is {expected})"
                )
            attrs = payloads.dumps(event.attrs)
            size += len(attrs)
            encoded.append((exec_id, expected, event.type, micros(event.at), attrs))
            expected += 1
        # The guard on next_seq checks that the batch continues the run, in
        # the same statement that moves it on (no read first), which also
        # sets the caller's other columns of the row.
        sql = _APPEND_UPDATES.get(assignments)
        if sql is None:
            sets = f", {assignments}" if assignments else ""
            sql = _APPEND_UPDATES[assignments] = (
                "UPDATE harvest_executions SET next_seq = ?, "
                f"history_bytes = history_bytes + ?{sets} WHERE exec_id = ? AND next_seq = ?"
            )
        moved = self._conn.execute(
            sql, (expected, size, *values, exec_id, first)
        ).rowcount
        if moved != 1:
            row = self._conn.execute(
                "SELECT next_seq FROM harvest_executions WHERE exec_id = ?", (exec_id,)
            ).fetchone()
            if row is None:
                raise HarvestInternalError(f"append_events to unknown run {exec_id}")
            raise HarvestInternalError(
                f"event seq {first} does not continue run {exec_id} (next is {row[0]})"
            )
        self._conn.executemany(
            "INSERT INTO harvest_events (exec_id, seq, type, at, attrs) VALUES (?, ?, ?, ?, ?)",
            encoded,
        )
        run = self._runs.get(exec_id)
        if run is not None:
            fields["next_seq"] = expected
            fields["history_bytes"] = run.record.history_bytes + size
            run.record = with_fields(run.record, fields)
            rows = [row[1:] for row in encoded]
            tail = run.appended
            if tail and tail[-1][0] + 1 == first and len(tail) < KEPT_EVENTS:
                tail.extend(rows)
            else:  # a tail kept past its commit stays short (a longer one is read)
                run.appended = rows

    # -- run lifecycle (issue 3) ------------------------------------------------

    def running_children(self, exec_id: str) -> list[ExecutionRecord]:
        run = self._runs.get(exec_id)
        if run is not None and not run.children:
            return []
        return SQLITE_READS.running_children(self._conn, exec_id)
