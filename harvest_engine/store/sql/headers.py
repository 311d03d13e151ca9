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
        self._get = r(
            "SELECT headers FROM harvest_headers WHERE exec_id = ? AND kind = ? AND ref = ?"
        )

    def put(self, conn: Executes, exec_id: str, kind: str, ref: str, text: str) -> None:
        """Store (or replace) the headers of (run, kind, ref) as JSON text."""
        conn.execute(self._put, (exec_id, kind, ref, text))

    def get(self, conn: Executes, exec_id: str, kind: str, ref: str) -> str | None:
        """The stored JSON text, or None."""
        row = conn.execute(self._get, (exec_id, kind, ref)).fetchone()
        return None if row is None else str(row[0])
