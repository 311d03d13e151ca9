"""Header rows of either store: the text map stored with a run's start or a scheduled activity."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harvest_engine.store.sql.dialect import Dialect
    from harvest_engine.store.sql.executes import Executes


class HeaderSql:
    """The header statements in one dialect, rendered once when built."""

    def __init__(self, dialect: Dialect) -> None:
        r = dialect.render
        self._put = r(
            "INSERT INTO harvest_headers (exec_id, kind, ref, headers) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (exec_id, kind, ref) DO UPDATE SET headers = excluded.headers"
        )
        # A signal's headers are written by each store's stage_signal, with
        # the row they belong to (its id as `ref`).
        self._staged = r(
            "SELECT h.headers FROM harvest_signals s JOIN harvest_headers h "
            "ON h.exec_id = s.exec_id AND h.kind = 'signal' AND h.ref = CAST(s.id AS TEXT) "
            "WHERE s.exec_id = ? AND s.delivered = 0 ORDER BY s.id"
        )
        # After continue-as-new moved the undelivered signals: their header
        # rows follow them (a signal keeps its id, so its `ref`).
        self._move_signals = r(
            "UPDATE harvest_headers SET exec_id = ? WHERE exec_id = ? AND kind = 'signal' "
            "AND ref IN (SELECT CAST(id AS TEXT) FROM harvest_signals WHERE exec_id = ?)"
        )
        self._get = r(
            "SELECT headers FROM harvest_headers WHERE exec_id = ? AND kind = ? AND ref = ?"
        )

    def put(self, conn: Executes, exec_id: str, kind: str, ref: str, text: str) -> None:
        """Store (or replace) the headers of (run, kind, ref) as JSON text."""
        conn.execute(self._put, (exec_id, kind, ref, text))

    def staged(self, conn: Executes, exec_id: str) -> list[str]:
        """The headers of the run's undelivered signals that carry some, in arrival order."""
        return [
            str(row[0]) for row in conn.execute(self._staged, (exec_id,)).fetchall()
        ]

    def move_signals(self, conn: Executes, from_exec: str, to_exec: str) -> None:
        """Move the header rows of signals just handed from `from_exec` to `to_exec`."""
        conn.execute(self._move_signals, (to_exec, from_exec, to_exec))

    def get(self, conn: Executes, exec_id: str, kind: str, ref: str) -> str | None:
        """The stored JSON text, or None."""
        row = conn.execute(self._get, (exec_id, kind, ref)).fetchone()
        return None if row is None else str(row[0])
