"""Signals, timers and run watchers of a SQLite write transaction: the rows a decision wakes on.

`SqliteWriteTxn` (write_txn.py) inherits these; they use only the
connection and the run cache (which says when a run holds none, so no read)
of the transaction's state (txn_state.py).
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from harvest_engine.store.sql.reads import SQLITE_READS
from harvest_engine.store.sql.side_tables import SQLITE_SIDE
from harvest_engine.store.sqlite.decision_marks import DecisionMarks
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from harvest_engine.store.records import StagedSignal, TimerRow


def signal_headers_written(conn: sqlite3.Connection) -> bool:
    """Whether the file holds any signal's header row (read once, when the store opens)."""
    found = conn.execute(
        "SELECT 1 FROM harvest_headers WHERE kind = 'signal' LIMIT 1"
    ).fetchone()
    return found is not None


def watchers_written(conn: sqlite3.Connection) -> bool:
    """Whether the file holds any run watcher's link (read once, when the store opens)."""
    found = conn.execute("SELECT 1 FROM harvest_run_watchers LIMIT 1").fetchone()
    return found is not None


class SignalsAndTimers(DecisionMarks):
    """WriteTxn methods on harvest_signals and harvest_timers."""

    # -- signals ------------------------------------------------------------

    def staged_signals(
        self, exec_id: str, limit: int, max_bytes: int | None = None
    ) -> list[StagedSignal]:
        run = self._runs.get(exec_id)
        if run is not None and not run.signals:
            return []
        staged, seen_all = SQLITE_READS.staged_signals_read(
            self._conn, exec_id, limit, max_bytes
        )
        if run is not None:
            run.staged = (
                {s.signal_id: s.idempotency_key is not None for s in staged}
                if seen_all
                else None
            )
            if seen_all and not staged:
                run.signals = False
        return staged

    def mark_signals_delivered(self, exec_id: str, signal_ids: Sequence[int]) -> None:
        # An unkeyed signal goes, a keyed one stays delivered (its key dedupes).
        # Which is which the staged read said: one statement per signal.
        run = self._runs.get(exec_id)
        known = None if run is None else run.staged
        if known is None or not all(i in known for i in signal_ids):
            unkeyed = keyed = [(exec_id, i) for i in signal_ids]
            known = None
            if run is not None:
                run.staged = None
        else:
            unkeyed = [(exec_id, i) for i in signal_ids if not known[i]]
            keyed = [(exec_id, i) for i in signal_ids if known[i]]
        if unkeyed:
            self._conn.executemany(
                "DELETE FROM harvest_signals WHERE exec_id = ? AND id = ? "
                "AND idempotency_key IS NULL",
                unkeyed,
            )
            self._drop_signal_headers(unkeyed)
        if keyed:
            self._conn.executemany(
                "UPDATE harvest_signals SET delivered = 1 WHERE exec_id = ? AND id = ?",
                keyed,
            )
        if run is not None and known is not None:
            for i in signal_ids:
                del known[i]
            if not known:  # none undelivered is left: a seal has nothing to do
                run.signals = False

    def _drop_signal_headers(self, deleted: list[tuple[str, int]]) -> None:
        """Delete the header rows of signal rows just deleted (any of `deleted` that are gone).

        An INTEGER PRIMARY KEY reuses the id of a deleted newest row: headers
        left behind would be read as the next signal's. A file no signal
        headers were written to (no interceptors) skips the statement.
        """
        if self._runs.signal_headers is None:
            self._runs.signal_headers = signal_headers_written(self._conn)
        if not self._runs.signal_headers:
            return
        self._conn.executemany(
            "DELETE FROM harvest_headers WHERE exec_id = ? AND kind = 'signal' "
            "AND ref = CAST(? AS TEXT) AND NOT EXISTS (SELECT 1 FROM harvest_signals "
            "WHERE exec_id = harvest_headers.exec_id AND id = ?)",
            [(exec_id, i, i) for exec_id, i in deleted],
        )

    def stage_signal(
        self,
        exec_id: str,
        name: str,
        payload: str,
        key: str | None,
        at: datetime,
        headers: str | None = None,
    ) -> bool:
        try:
            cursor = self._conn.execute(
                "INSERT INTO harvest_signals (exec_id, name, payload, idempotency_key, "
                "received_at) VALUES (?, ?, ?, ?, ?)",
                (exec_id, name, payload, key, micros(at)),
            )
        except sqlite3.IntegrityError:
            return False
        if headers is not None:
            # One writer: the id this insert got names the row, nobody else's.
            self._runs.signal_headers = True
            self._conn.execute(
                "INSERT INTO harvest_headers (exec_id, kind, ref, headers) "
                "VALUES (?, 'signal', ?, ?) "
                "ON CONFLICT (exec_id, kind, ref) DO UPDATE SET headers = excluded.headers",
                (exec_id, str(cursor.lastrowid), headers),
            )
        self._conn.execute(
            "UPDATE harvest_executions SET needs_decision = 1 WHERE exec_id = ?",
            (exec_id,),
        )
        self._flag_written(exec_id)
        run = self._runs.get(exec_id)
        if run is not None:
            run.signals = True
            run.staged = None
        return True

    def move_staged_signals(self, from_exec: str, to_exec: str) -> None:
        """Hand undelivered signals to a successor run (continue-as-new)."""
        self._conn.execute(
            "UPDATE harvest_signals SET exec_id = ? WHERE exec_id = ? AND delivered = 0",
            (to_exec, from_exec),
        )
        if self._runs.signal_headers is None:
            self._runs.signal_headers = signal_headers_written(self._conn)
        if self._runs.signal_headers:
            SQLITE_SIDE.headers.move_signals(self._conn, from_exec, to_exec)
        for exec_id in (from_exec, to_exec):
            run = self._runs.get(exec_id)
            if run is not None:
                run.signals = True
                run.staged = None

    def signal_key_exists(self, exec_ids: Sequence[str], key: str) -> str | None:
        return SQLITE_READS.signal_key_holder(self._conn, exec_ids, key)

    # -- run watchers ---------------------------------------------------------

    def watch_runs(self, watcher: str, targets: Sequence[str]) -> bool:
        # The one writer read each target live in this transaction.
        self._conn.executemany(
            "INSERT OR IGNORE INTO harvest_run_watchers (exec_id, watcher) VALUES (?, ?)",
            [(target, watcher) for target in targets],
        )
        self._runs.watchers = True
        return True

    def _wake_watchers(self, exec_id: str) -> None:
        """Flag each RUNNING run watching `exec_id` (being sealed); the links go.

        Called only when the file may hold links (`RunCache.watchers`): a
        file no watcher was ever linked in runs no statement for it.
        """
        watchers = self._conn.execute(
            "DELETE FROM harvest_run_watchers WHERE exec_id = ? RETURNING watcher",
            (exec_id,),
        ).fetchall()
        for (watcher,) in watchers:
            woken = self._conn.execute(
                "UPDATE harvest_executions SET needs_decision = 1 "
                "WHERE exec_id = ? AND state = 'RUNNING'",
                (watcher,),
            )
            if woken.rowcount:
                self._flag_written(watcher)
                self._runs.changed(watcher, {"needs_decision": 1})

    # -- timers -------------------------------------------------------------

    def due_timers(self, exec_id: str, now: datetime) -> list[TimerRow]:
        run = self._runs.get(exec_id)
        if run is not None and run.no_timer_due(now):
            return []
        return SQLITE_READS.due_timers(self._conn, exec_id, now)

    def add_timer(self, exec_id: str, timer_id: str, fire_at: datetime) -> None:
        self._conn.execute(
            "INSERT OR IGNORE INTO harvest_timers (exec_id, timer_id, fire_at) VALUES (?, ?, ?)",
            (exec_id, timer_id, micros(fire_at)),
        )
        run = self._runs.get(exec_id)
        if run is not None:
            at = micros(fire_at)
            run.next_timer = at if run.next_timer is None else min(run.next_timer, at)

    def delete_timers(self, exec_id: str, timer_ids: Sequence[str]) -> None:
        self._conn.executemany(
            "DELETE FROM harvest_timers WHERE exec_id = ? AND timer_id = ?",
            [(exec_id, t) for t in timer_ids],
        )
