"""A plain signal staged by a transaction that may take it in itself: held, sent only if it stays.

A client's signal is staged (its row, its run's flag) and, in the same
transaction, its run's decision takes it in (the row deleted): on the
server, an INSERT whose id the worker waits for (a round trip), an UPDATE
and a DELETE, for a row that never outlives the transaction. A signal with
neither an idempotency key nor headers is held instead (`deferred`), under
a provisional id (negative: no row has one):
- a decision that takes it in before anything sent it drops it (`consume`):
  no statement at all; the decision's own append sets the run's flag;
- a statement that comes first sends it (row and flag, as one statement,
  in its place among the run's held writes), with RETURNING, so a decision
  that took it in can still name its row (`row_ids`; the answer is awaited
  then, on this rare path only);
- a savepoint that rolls back after taking it in gives it back (`Held`):
  it is staged as if never taken.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine.errors import HarvestInternalError

if TYPE_CHECKING:
    from collections.abc import Sequence

STAGE = (
    "INSERT INTO harvest_signals (exec_id, name, payload, idempotency_key, "
    "received_at) VALUES (%s, %s, %s, %s, %s) "
    "ON CONFLICT (exec_id, idempotency_key) WHERE idempotency_key IS NOT NULL "
    "DO NOTHING RETURNING id"
)
"""A signal's row; its id back, or no row when its key was staged already."""

STAGE_FLAGGED = (
    f"WITH staged AS ({STAGE}, exec_id), "
    "flagged AS (UPDATE harvest_executions SET needs_decision = 1 "
    "WHERE exec_id IN (SELECT exec_id FROM staged)) "
    "SELECT id FROM staged"
)
"""A held signal's row and its run's decision flag, in one statement."""


@dataclass
class HeldSignal:
    """A staged signal not sent yet: its provisional id and its row's values."""

    provisional: int
    values: tuple[Any, ...]  # STAGE's arguments
    consumed: int | None = None  # the tick a decision took it in (then never sent)
    cursor: psycopg.Cursor[tuple[Any, ...]] | None = None  # once sent

    def send(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        """Stage the row and flag the run (its id read only if a decision asks)."""
        self.cursor = conn.execute(STAGE_FLAGGED, self.values)

    def row_id(self) -> int:
        """The id its row got (awaits the statement's answer)."""
        if self.cursor is None:
            raise HarvestInternalError(f"signal {self.provisional} was never sent")
        row = self.cursor.fetchone()
        if row is None:
            raise HarvestInternalError(f"signal {self.provisional} was not staged")
        return int(row[0])


def row_ids(held: dict[int, HeldSignal], ids: Sequence[int], tick: int) -> list[int]:
    """The rows a decision's delivered signals name; held ones not sent are taken in.

    A provisional id whose signal was never sent is consumed at `tick` (it
    leaves no row to delete); one sent meanwhile names its row.
    """
    rows: list[int] = []
    for signal_id in ids:
        signal = held.get(signal_id) if signal_id < 0 else None
        if signal is None:
            rows.append(signal_id)
        elif signal.cursor is None:
            signal.consumed = tick
        else:
            rows.append(signal.row_id())
    return rows
