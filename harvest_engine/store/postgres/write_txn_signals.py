"""Signals, timers and run watchers of a Postgres write transaction: the rows a decision wakes on.

`PostgresWriteTxn` (write_txn.py) inherits these; they need only its
connection and its memory (which says when a locked run holds none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.store.postgres.held_signals import STAGE as _STAGE
from harvest_engine.store.postgres.held_signals import row_ids
from harvest_engine.store.postgres.txn_memory import NOISY
from harvest_engine.store.postgres.txn_state import TxnState
from harvest_engine.store.records import StagedSignal
from harvest_engine.store.sql.columns import stored_json
from harvest_engine.store.sql.reads import POSTGRES_READS
from harvest_engine.store.sql.side_tables import POSTGRES_SIDE
from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from harvest_engine.store.records import TimerRow

# The headers row is written by the statement that inserts its signal, naming
# the id it got: a concurrent sender's signal can never take its place.
_STAGE_WITH_HEADERS = (
    f"WITH staged AS ({_STAGE}, exec_id), "
    "headers AS (INSERT INTO harvest_headers (exec_id, kind, ref, headers) "
    "SELECT exec_id, 'signal', id::text, %s FROM staged "
    "ON CONFLICT (exec_id, kind, ref) DO UPDATE SET headers = excluded.headers) "
    "SELECT id FROM staged"
)

# A delivered signal leaves, unless its idempotency key must be kept (then
# it stays, delivered): one statement.
_DELIVERED = (
    "WITH dropped AS (DELETE FROM harvest_signals WHERE exec_id = %s "
    "AND id = ANY(%s) AND idempotency_key IS NULL) "
    "UPDATE harvest_signals SET delivered = 1 WHERE exec_id = %s AND id = ANY(%s) "
    "AND idempotency_key IS NOT NULL"
)

# Links a watcher to the targets still live, each row share-locked so a seal
# waits for this commit (then its DELETE sees the link) or, when a seal holds
# the row already, skipped: never a wait on a row another worker may be
# sealing while it waits for the watcher's row (no deadlock); the watcher
# keeps its flag and links at its next decision.
_WATCH = (
    "WITH live AS (SELECT exec_id FROM harvest_executions WHERE exec_id = ANY(%s) "
    "AND state IN ('RUNNING', 'ENQUEUED') FOR SHARE SKIP LOCKED), "
    "linked AS (INSERT INTO harvest_run_watchers (exec_id, watcher) "
    "SELECT exec_id, %s FROM live ON CONFLICT DO NOTHING) "
    "SELECT count(*) FROM live"
)


class SignalsAndTimers(TxnState):
    """WriteTxn methods on harvest_signals and harvest_timers."""

    # -- signals ------------------------------------------------------------

    def staged_signals(
        self, exec_id: str, limit: int, max_bytes: int | None = None
    ) -> list[StagedSignal]:
        if self.memory.quiet.get(exec_id, NOISY).signals:
            return []  # none when its row was locked, and none staged since
        known = self.memory.signals.get(exec_id)
        if known is not None:  # none when its row was locked: these staged since
            return within(known, limit, max_bytes)
        return POSTGRES_READS.staged_signals(self._conn, exec_id, limit, max_bytes)

    def mark_signals_delivered(self, exec_id: str, signal_ids: Sequence[int]) -> None:
        ids = list(signal_ids)
        if not ids:
            return
        known = self.memory.signals.get(exec_id)
        if known is not None:
            known[:] = [k for k in known if k[0].signal_id not in ids]
        held = self.memory.held
        rows = row_ids(held.signals, ids, held.now())
        held.set_aside_taken()  # a held signal taken in is never sent
        if rows:
            self._conn.execute(_DELIVERED, (exec_id, rows, exec_id, rows))

    def stage_signal(
        self,
        exec_id: str,
        name: str,
        payload: str,
        key: str | None,
        at: datetime,
        headers: str | None = None,
    ) -> bool:
        quiet = self.memory.quiet.get(exec_id, NOISY).signals
        known = self.memory.signals.pop(exec_id, [] if quiet else None)
        self.memory.staged(exec_id)
        args = (exec_id, name, payload, key, micros(at))
        if key is None and headers is None:
            # Held (held_signals): its run's decision in this transaction
            # may take it in before any statement would send it.
            held = self.memory.held.hold_signal(exec_id, args)
            if known is not None:
                staged = StagedSignal(
                    held, name, stored_json(payload), key, from_micros(micros(at))
                )
                known.append((staged, len(payload)))
                self.memory.signals[exec_id] = known
            return True
        if headers is None:
            row = self._conn.execute(_STAGE, args).fetchone()
        else:
            row = self._conn.execute(_STAGE_WITH_HEADERS, (*args, headers)).fetchone()
        if row is None:
            if known is not None:
                self.memory.signals[exec_id] = known
            return False
        self._conn.execute(
            "UPDATE harvest_executions SET needs_decision = 1 WHERE exec_id = %s",
            (exec_id,),
        )
        if known is not None:
            # The run had none staged when its row was locked: every one it
            # has now is staged here, so its decision need not read them.
            staged = StagedSignal(
                int(row[0]), name, stored_json(payload), key, from_micros(micros(at))
            )
            known.append((staged, len(payload)))
            self.memory.signals[exec_id] = known
        return True

    def move_staged_signals(self, from_exec: str, to_exec: str) -> None:
        self.memory.staged(to_exec)
        self.memory.signals.pop(from_exec, None)
        self.memory.signals.pop(to_exec, None)
        self._conn.execute(
            "UPDATE harvest_signals SET exec_id = %s WHERE exec_id = %s AND delivered = 0",
            (to_exec, from_exec),
        )
        POSTGRES_SIDE.headers.move_signals(self._conn, from_exec, to_exec)

    def signal_key_exists(self, exec_ids: Sequence[str], key: str) -> str | None:
        return POSTGRES_READS.signal_key_holder(self._conn, exec_ids, key)

    # -- run watchers ---------------------------------------------------------

    def watch_runs(self, watcher: str, targets: Sequence[str]) -> bool:
        wanted = sorted(set(targets))
        row = self._conn.execute(_WATCH, (wanted, watcher)).fetchone()
        return row is not None and int(row[0]) == len(wanted)

    # -- timers -------------------------------------------------------------

    def due_timers(self, exec_id: str, now: datetime) -> list[TimerRow]:
        if self.memory.quiet.get(exec_id, NOISY).timers:
            return []  # no timer when its row was locked, and none added since
        return POSTGRES_READS.due_timers(self._conn, exec_id, now)

    def add_timer(self, exec_id: str, timer_id: str, fire_at: datetime) -> None:
        self.memory.quiet.pop(exec_id, None)
        self._conn.execute(
            "INSERT INTO harvest_timers (exec_id, timer_id, fire_at) VALUES (%s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            (exec_id, timer_id, micros(fire_at)),
        )

    def delete_timers(self, exec_id: str, timer_ids: Sequence[str]) -> None:
        ids = list(timer_ids)
        if ids:
            self._conn.execute(
                "DELETE FROM harvest_timers WHERE exec_id = %s AND timer_id = ANY(%s)",
                (exec_id, ids),
            )


def within(
    known: list[tuple[StagedSignal, int]], limit: int, max_bytes: int | None
) -> list[StagedSignal]:
    """`known` (each with its payload's length) cut as `staged_signals` reads the table."""
    taken = known if limit < 0 else known[:limit]
    out: list[StagedSignal] = []
    loaded = 0
    for signal, size in taken:
        out.append(signal)
        loaded += size
        if max_bytes is not None and loaded >= max_bytes:
            break
    return out
