"""Held starts (debounce, batch) and circuit breakers: their rows and SQL, written once for both stores.

A write transaction class subclasses `ShapingTables` and names its
dialect's statements (`_shaping`); the store-level reads are the functions
at the end, given a connection. Times are microseconds, as everywhere.
On Postgres a held start's or a breaker's row is locked (``FOR UPDATE``)
for the transaction that changes it, so workers never lose an arrival or a
failure to a race; a missing row is first inserted empty (``ON CONFLICT DO
NOTHING``, which waits for a concurrent insert) and then locked.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harvest_engine.store.sql.columns import opt_time
from harvest_engine.store.sql.dialect import POSTGRES, SQLITE, Dialect
from harvest_engine.timestamps import from_micros, micros, opt_micros

if TYPE_CHECKING:
    from harvest_engine.store.sql.executes import Executes

HELD_DUE_SOURCE = (
    "SELECT MIN(due_at) FROM harvest_held_starts WHERE due_at IS NOT NULL{skip}"
)
"""The wakeup source of held starts (wakeups.DUE_SOURCES names it); the
workflows whose code the caller lacks (``{skip}``) do not count."""


@dataclass(frozen=True)
class HeldRow:
    """A held start's row: the run to be and what it has collected so far."""

    workflow_name: str
    workflow_id: str
    exec_id: str
    kind: str
    opened_at: datetime
    due_at: datetime
    inputs: int
    bytes: int
    input: str | None
    memo: str | None
    search_attributes: str | None


@dataclass(frozen=True)
class BreakerRow:
    """An activity's breaker: recent failure times, and the open and probe times."""

    activity: str
    failures: tuple[datetime, ...]
    open_until: datetime | None
    probe_at: datetime | None


_HELD_COLUMNS = (
    "workflow_name, workflow_id, exec_id, kind, opened_at, due_at, inputs, bytes, "
    "input, memo, search_attributes"
)


class ShapingSql:
    """One dialect's held-start and breaker statements, rendered once (built at import)."""

    def __init__(self, dialect: Dialect) -> None:
        r = dialect.render
        self.dialect = dialect
        self.held = r(
            f"SELECT {_HELD_COLUMNS} FROM harvest_held_starts "
            "WHERE workflow_name = ? AND workflow_id = ?" + dialect.for_update
        )
        self.hold = r(
            f"INSERT INTO harvest_held_starts ({_HELD_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
        )
        self.update_held = r(
            "UPDATE harvest_held_starts SET due_at = ?, inputs = ?, bytes = ?, "
            "input = ?, memo = ?, search_attributes = ? WHERE exec_id = ?"
        )
        self.add_input = r(
            "INSERT INTO harvest_held_inputs (exec_id, position, input, arrived_at) "
            "VALUES (?, ?, ?, ?)"
        )
        self.inputs = r(
            "SELECT input FROM harvest_held_inputs WHERE exec_id = ? ORDER BY position"
        )
        self.drop_inputs = r("DELETE FROM harvest_held_inputs WHERE exec_id = ?")
        self.drop_held = r("DELETE FROM harvest_held_starts WHERE exec_id = ?")
        self.due = r(
            "SELECT workflow_name, workflow_id FROM harvest_held_starts "
            "WHERE due_at <= ? ORDER BY due_at, exec_id"
        )
        self.listing = (
            f"SELECT {_HELD_COLUMNS} FROM harvest_held_starts ORDER BY due_at, exec_id"
        )
        self.breaker = r(
            "SELECT activity, failures, open_until, probe_at FROM harvest_breakers "
            "WHERE activity = ?" + dialect.for_update
        )
        self.new_breaker = r(
            "INSERT INTO harvest_breakers (activity, failures) VALUES (?, '[]') "
            "ON CONFLICT DO NOTHING"
        )
        self.put_breaker = r(
            "INSERT INTO harvest_breakers (activity, failures, open_until, probe_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (activity) DO UPDATE SET "
            "failures = excluded.failures, open_until = excluded.open_until, "
            "probe_at = excluded.probe_at"
        )
        self.breakers = (
            "SELECT activity, failures, open_until, probe_at FROM harvest_breakers "
            "ORDER BY activity"
        )
        self.plain_breaker = r(
            "SELECT activity, failures, open_until, probe_at FROM harvest_breakers "
            "WHERE activity = ?"
        )


SQLITE_SHAPING = ShapingSql(SQLITE)
POSTGRES_SHAPING = ShapingSql(POSTGRES)


def _held(row: Any) -> HeldRow:
    return HeldRow(
        workflow_name=str(row[0]),
        workflow_id=str(row[1]),
        exec_id=str(row[2]),
        kind=str(row[3]),
        opened_at=from_micros(int(row[4])),
        due_at=from_micros(int(row[5])),
        inputs=int(row[6]),
        bytes=int(row[7]),
        input=None if row[8] is None else str(row[8]),
        memo=None if row[9] is None else str(row[9]),
        search_attributes=None if row[10] is None else str(row[10]),
    )


def _breaker(row: Any) -> BreakerRow:
    try:
        times = tuple(from_micros(int(t)) for t in json.loads(str(row[1])))
    except (ValueError, TypeError):
        times = ()  # a damaged list counts no failures; the next one rewrites it
    return BreakerRow(
        activity=str(row[0]),
        failures=times,
        open_until=opt_time(row[2]),
        probe_at=opt_time(row[3]),
    )


class ShapingTables(ABC):
    """WriteTxn methods on the held-start and breaker tables."""

    @property
    @abstractmethod
    def _shaping(self) -> ShapingSql:
        """This store's statements (SQLITE_SHAPING or POSTGRES_SHAPING)."""

    @abstractmethod
    def _side_conn(self) -> Executes:
        """The connection a statement runs on."""

    # -- held starts ----------------------------------------------------------

    def held_start(self, workflow_name: str, workflow_id: str) -> HeldRow | None:
        """The held start of a key, locked for this transaction; None when none is open."""
        conn = self._side_conn()
        row = conn.execute(self._shaping.held, (workflow_name, workflow_id)).fetchone()
        return None if row is None else _held(row)

    def hold_start(self, held: HeldRow) -> bool:
        """Insert a new held start; False when the key already has one (a concurrent start)."""
        sql = self._shaping
        cursor = sql.dialect.settled(
            self._side_conn(),
            sql.hold,
            (
                held.workflow_name,
                held.workflow_id,
                held.exec_id,
                held.kind,
                micros(held.opened_at),
                micros(held.due_at),
                held.inputs,
                held.bytes,
                held.input,
                held.memo,
                held.search_attributes,
            ),
        )
        return bool(cursor.rowcount)

    def update_held(self, held: HeldRow) -> None:
        """Write a held start's due time, counts, last input, memo and attributes."""
        self._side_conn().execute(
            self._shaping.update_held,
            (
                micros(held.due_at),
                held.inputs,
                held.bytes,
                held.input,
                held.memo,
                held.search_attributes,
                held.exec_id,
            ),
        )

    def add_held_input(
        self, exec_id: str, position: int, input: str, at: datetime
    ) -> None:
        """Append one batch input (positions count from 1, in arrival order)."""
        self._side_conn().execute(
            self._shaping.add_input, (exec_id, position, input, micros(at))
        )

    def held_inputs(self, exec_id: str) -> list[str]:
        """A batch's inputs in arrival order, as stored JSON text."""
        rows = self._side_conn().execute(self._shaping.inputs, (exec_id,)).fetchall()
        return [str(r[0]) for r in rows]

    def drop_held(self, exec_id: str) -> None:
        """Forget a held start and its inputs (its run was just inserted)."""
        conn = self._side_conn()
        conn.execute(self._shaping.drop_inputs, (exec_id,))
        conn.execute(self._shaping.drop_held, (exec_id,))

    # -- circuit breakers -------------------------------------------------------

    def breaker(self, activity: str) -> BreakerRow:
        """An activity's breaker row, made if missing and locked for this transaction."""
        conn = self._side_conn()
        conn.execute(self._shaping.new_breaker, (activity,))
        row = conn.execute(self._shaping.breaker, (activity,)).fetchone()
        return BreakerRow(activity, (), None, None) if row is None else _breaker(row)

    def put_breaker(self, row: BreakerRow) -> None:
        """Write an activity's breaker."""
        self._side_conn().execute(
            self._shaping.put_breaker,
            (
                row.activity,
                json.dumps([micros(t) for t in row.failures]),
                opt_micros(row.open_until),
                opt_micros(row.probe_at),
            ),
        )


# -- reads outside a write transaction -------------------------------------------


def due_held(conn: Executes, sql: ShapingSql, now: datetime) -> list[tuple[str, str]]:
    """The (workflow name, key) of every held start due at `now`, earliest first."""
    rows = conn.execute(sql.due, (micros(now),)).fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


def list_held(conn: Executes, sql: ShapingSql) -> list[HeldRow]:
    """Every held start, earliest due first."""
    return [_held(r) for r in conn.execute(sql.listing).fetchall()]


def read_breaker(conn: Executes, sql: ShapingSql, activity: str) -> BreakerRow | None:
    """One activity's breaker as stored (no lock); None when it never failed."""
    row = conn.execute(sql.plain_breaker, (activity,)).fetchone()
    return None if row is None else _breaker(row)


def list_breakers(conn: Executes, sql: ShapingSql) -> list[BreakerRow]:
    """Every stored breaker, by activity name."""
    return [_breaker(r) for r in conn.execute(sql.breakers).fetchall()]
