"""Operator read SQL beyond the run tables: workflow log counts and LLM ledger totals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.store.operations import LedgerTotals
from harvest_engine.store.rows import UnreadableRow

if TYPE_CHECKING:
    import sqlite3


def count_workflow_logs(conn: sqlite3.Connection, exec_id: str) -> int:
    """A run's stored log lines, the truncation marker not counted."""
    row = conn.execute(
        "SELECT COUNT(*) FROM harvest_workflow_logs WHERE exec_id = ? AND marker = 0",
        (exec_id,),
    ).fetchone()
    return int(row[0])


def workflow_log_truncated(conn: sqlite3.Connection, exec_id: str) -> bool:
    """Whether the run's log lost lines past its `max_lines` (a marker row exists)."""
    row = conn.execute(
        "SELECT 1 FROM harvest_workflow_logs WHERE exec_id = ? AND marker = 1 LIMIT 1",
        (exec_id,),
    ).fetchone()
    return row is not None


def llm_totals(conn: sqlite3.Connection, exec_id: str) -> LedgerTotals:
    """A run's ledger rows summed."""
    row = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), "
        "COALESCE(SUM(latency), 0.0), SUM(typeof(input_tokens) <> 'integer' OR "
        "typeof(output_tokens) <> 'integer' OR typeof(latency) NOT IN "
        "('real', 'integer', 'null')) FROM harvest_llm_ledger WHERE exec_id = ?",
        (exec_id,),
    ).fetchone()
    if row[4]:  # SUM would read text as 0: totals that look sound but are not
        raise UnreadableRow(
            f"{row[4]} ledger row(s) of run {exec_id} hold text where numbers belong"
        )
    return LedgerTotals(
        calls=int(row[0]),
        input_tokens=int(row[1]),
        output_tokens=int(row[2]),
        latency=float(row[3]),
    )
