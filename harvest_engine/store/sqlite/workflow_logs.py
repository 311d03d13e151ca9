"""Workflow log lines of a decision: numbered once, past the cap one marker row, best effort."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime


def append(
    conn: sqlite3.Connection,
    exec_id: str,
    lines: Sequence[tuple[int, datetime, str]],
    max_lines: int | None,
) -> None:
    """Store lines `(line_no, at, message)` in a savepoint of their own (a failure drops them).

    A line a re-run cycle emits again is skipped; past `max_lines` one
    marker row is kept.
    """
    if not lines:
        return
    conn.execute("SAVEPOINT harvest_logs")
    try:
        row = conn.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM harvest_workflow_logs "
            "WHERE exec_id = ? AND marker = 0",
            (exec_id,),
        ).fetchone()
        stored = int(row[0])
        for line_no, at, message in lines:
            if line_no <= stored:
                continue  # a re-run cycle emitted it again
            if max_lines is not None and line_no > max_lines:
                conn.execute(
                    "INSERT OR IGNORE INTO harvest_workflow_logs (exec_id, seq, at, message, "
                    "marker) VALUES (?, ?, ?, ?, 1)",
                    (
                        exec_id,
                        max_lines + 1,
                        micros(at),
                        f"log truncated at {max_lines} lines",
                    ),
                )
                continue
            conn.execute(
                "INSERT INTO harvest_workflow_logs (exec_id, seq, at, message) "
                "VALUES (?, ?, ?, ?)",
                (exec_id, line_no, micros(at), message),
            )
    except sqlite3.Error:
        conn.execute("ROLLBACK TO harvest_logs")
    conn.execute("RELEASE harvest_logs")
