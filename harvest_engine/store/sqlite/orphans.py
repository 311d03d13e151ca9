"""Tasks a dead process left RUNNING: record each such attempt as LOST, then run it again.

Under the single-writer contract a task still RUNNING when the file is
opened was claimed by a process that died mid-body. Its attempt leaves a
``LOST`` row in the attempt log (so the crash shows in `activity_attempts`,
the CLI and the inspector's timeline), and the task goes back to PENDING
with the same attempt number, to run again (at-least-once).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine import payloads
from harvest_engine.states import ErrorInfo
from harvest_engine.store.sqlite import task_rows
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    import sqlite3
    from datetime import datetime

LOST = "LOST"

LOST_ERROR = ErrorInfo(
    type="AttemptLost",
    message="the process running this attempt died before it finished; "
    "the attempt runs again with the same number",
    non_retryable=False,
)


def reclaim(conn: sqlite3.Connection, now: datetime) -> int:
    """Record a LOST attempt per orphaned task and make it PENDING again; how many.

    Runs inside the caller's write transaction. The lost attempt spans from
    the claim to `now` (when the loss was found), never ending before it began.
    """
    found = micros(now)
    rows = conn.execute(
        "SELECT exec_id, activity_id, activity_name, attempt, claimed_at "
        "FROM harvest_tasks WHERE status = 'RUNNING' ORDER BY id"
    ).fetchall()
    error = payloads.dumps(LOST_ERROR.to_json())
    conn.executemany(
        task_rows.INSERT_ATTEMPT,
        [
            (
                exec_id,
                exec_id,
                activity_id,
                name,
                attempt,
                claimed if claimed is not None else found,
                max(found, claimed if claimed is not None else found),
                LOST,
                error,
            )
            for exec_id, activity_id, name, attempt, claimed in rows
        ],
    )
    conn.execute(
        "UPDATE harvest_tasks SET status = 'PENDING', claimed_at = NULL "
        "WHERE status = 'RUNNING'"
    )
    return len(rows)
