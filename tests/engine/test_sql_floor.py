"""The bench's SQL floor replays the engine's own statements, shape for shape.

`bench/sql_floor.py` times a long-history step and a signal from a plain
loop, as the floor the engine's Python is added to (bench/RESULTS.md). That
figure means something only while it runs what the engine runs: these
tests trace one engine step and one floor step and compare the statements,
literals normalised, in order. A change to the engine's SQL fails here until
the floor follows it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from bench import harvest_workloads as workloads
from bench.count_statements import shape
from bench.sql_floor import claimed_first_task, long_history_step, signal_steps

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable
    from pathlib import Path

    from harvest_engine import SqliteRuntime


def _transactions(statements: list[str]) -> list[list[str]]:
    """The traced statements cut into BEGIN ... COMMIT groups (reads between them dropped)."""
    groups: list[list[str]] = []
    current: list[str] | None = None
    for sql in statements:
        if sql == "BEGIN IMMEDIATE":
            current = [sql]
        elif current is not None:
            current.append(sql)
            if sql == "COMMIT":
                groups.append(current)
                current = None
    return groups


def _traced(
    conn: sqlite3.Connection, fn: Callable[..., object], *args: object
) -> list[list[str]]:
    """What `fn(*args)` made `conn` run (a coroutine is run to its end), by transaction."""
    seen: list[str] = []
    conn.set_trace_callback(lambda sql: seen.append(shape(sql)))
    try:
        result = fn(*args)
        if asyncio.iscoroutine(result):
            asyncio.run(result)
    finally:
        conn.set_trace_callback(None)
    return _transactions(seen)


def _open(folder: Path) -> SqliteRuntime:
    return workloads._open(str(folder))


def test_the_long_history_floor_runs_the_engines_step_statements(
    tmp_path: Path,
) -> None:
    rt = _open(tmp_path)
    try:
        conn = rt.store.connection
        exec_id = rt.start_workflow("k_steps", 3)
        # start, first decision, two completion + decision steps, the last completion
        engine = _traced(conn, rt.run_until_blocked, exec_id)
        floor_run = str(rt.start_workflow("k_steps", 1))
        task_id, seq = claimed_first_task(conn, floor_run)
        floor = _traced(conn, long_history_step, conn, floor_run, task_id, seq, 1)
    finally:
        rt.close()
    assert len(engine) == 4
    assert floor == [engine[1]]


def test_the_signal_floor_runs_the_engines_signal_and_decision_statements(
    tmp_path: Path,
) -> None:
    rt = _open(tmp_path)
    try:
        conn = rt.store.connection
        exec_id = rt.start_workflow("wait_signal", None)
        asyncio.run(rt.run_until_blocked(exec_id))

        async def signal_and_drive() -> None:
            rt.send_signal(exec_id, "go", 7)
            await rt.run_until_blocked(exec_id)

        engine = _traced(conn, signal_and_drive)
        floor_run = str(rt.start_workflow("wait_signal", None))
        (seq,) = conn.execute(
            "SELECT next_seq FROM harvest_executions WHERE exec_id = ?", (floor_run,)
        ).fetchone()
        floor = _traced(conn, signal_steps, conn, floor_run, seq, 7)
    finally:
        rt.close()
    assert floor == engine
