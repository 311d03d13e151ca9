"""needs_decision = 1 deferred to the commit, and dropped when a decision follows.

A completion marks its run for a decision (`needs_decision = 1`), and the
decision that usually follows in the same transaction sets it back to 0. The
row is written either way, but the partial index `harvest_executions_decide`
(`WHERE needs_decision = 1`) gains an entry and loses it again: a page the
commit writes to the WAL for nothing (issue 13). So a completion's mark
(the flag alone, with the appended events) is kept here instead of written;
any later write of the flag in the transaction (a decision's 0 or 1, a
seal, a signal) takes its place, and the marks left at the commit are
written by one UPDATE before COMMIT. The file ends as the statements in order would have left it.

A mark is part of the transaction: a savepoint that rolls back restores the
marks as they were before it (the write's `on_rollback`), so a decision
that fails in its savepoint leaves its run marked; a transaction that rolls
back drops them all, with the rows they belonged to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.store.sqlite.txn_state import TxnState

if TYPE_CHECKING:
    import sqlite3


class DecisionMarks(TxnState):
    """SqliteWriteTxn's part that keeps `needs_decision = 1` until the commit."""

    def _flag_fields(
        self, exec_id: str, fields: dict[str, object], *, defer: bool
    ) -> dict[str, object]:
        """The columns to write now: a deferred mark leaves `fields` without the flag."""
        flag = fields.get("needs_decision")
        marks = self._marks
        if flag is None or marks is None:
            return fields
        # Only a completion's mark is kept: the flag alone with its events
        # (a decision's write carries its other columns and is written).
        if defer and flag == 1 and len(fields) == 1:
            if exec_id not in marks:
                marks.add(exec_id)
                self.undo.append(lambda: marks.discard(exec_id))
            return {k: v for k, v in fields.items() if k != "needs_decision"}
        self._flag_written(exec_id)
        return fields

    def _flag_written(self, exec_id: str) -> None:
        """The flag of the run's row was just written: a kept mark is out of date."""
        marks = self._marks
        if marks is not None and exec_id in marks:
            marks.discard(exec_id)
            self.undo.append(lambda: marks.add(exec_id))


def write_marks(conn: sqlite3.Connection, marks: set[str]) -> None:
    """Write the marks the transaction kept, in its last statement before COMMIT."""
    if not marks:
        return
    ids = sorted(marks)
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        places = ",".join("?" * len(chunk))
        conn.execute(
            f"UPDATE harvest_executions SET needs_decision = 1 WHERE exec_id IN ({places})",
            chunk,
        )
    marks.clear()


# Runs per UPDATE, well under SQLite's bound on parameters.
_CHUNK = 500
