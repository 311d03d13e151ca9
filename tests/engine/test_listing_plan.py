"""Listing paused runs reads the partial index of paused runs, not every RUNNING row."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from harvest_engine import ExecutionFilter, SqliteRuntime
from harvest_engine.store.sql import listing
from harvest_engine.store.sql.dialect import SQLITE

if TYPE_CHECKING:
    from pathlib import Path


def plan(conn: sqlite3.Connection, sql: str) -> str:
    rows = conn.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall()
    return " | ".join(str(row[3]) for row in rows)


def test_paused_runs_are_listed_through_the_paused_index(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    SqliteRuntime.open(path).close()
    conn = sqlite3.connect(path)
    with conn:
        conn.executemany(
            "INSERT INTO harvest_executions (exec_id, workflow_name, workflow_id, "
            "state, input, next_seq, needs_decision) "
            "VALUES (?, 'w', ?, 'RUNNING', 'null', 1, 0)",
            [(f"e{n}", f"w{n}") for n in range(2_000)],
        )
        conn.execute("UPDATE harvest_executions SET pause_reason = 'x' WHERE id = 7")
        conn.execute("ANALYZE")
    statements: list[str] = []
    conn.set_trace_callback(statements.append)  # each statement, its values bound
    for flt in (
        ExecutionFilter().paused(True),
        ExecutionFilter().paused(True).state("RUNNING").workflow_name("w"),
    ):
        page = listing.list_executions(conn, SQLITE, flt.limit(1000))
        assert [s.workflow_id for s in page.executions] == ["w6"]
        listed = statements[-1]
        assert "harvest_executions_paused" in plan(conn, listed)
    conn.close()
