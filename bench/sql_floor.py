"""The engine's SQL for a long-history step and for a signal, replayed with no engine.

Two workloads of `bench.harvest_workloads` (`sql_floor_long_history`,
`sql_floor_signal`): on the same warmed file as the rows they shadow, they
run the statements the engine issues for one step, with the same shapes in
the same order (tests/engine/test_sql_floor.py traces both and compares),
from a plain loop. What they cost with synchronous=FULL is what SQLite and
this machine's disk take before any of harvest's Python runs: the figure
the engine's own work is added to.
"""

from __future__ import annotations

import statistics
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

    from harvest_engine import SqliteRuntime

_AT = 1_796_470_000_000_000  # a fixed time: the floor does not read the clock

_DELETE_TASK = "DELETE FROM harvest_tasks WHERE id = ? RETURNING exec_id"
_INSERT_ATTEMPT = (
    "INSERT INTO harvest_activity_attempts (exec_id, id, activity_id, activity_name, "
    "attempt, started_at, ended_at, outcome, error) VALUES (?, COALESCE((SELECT id "
    "FROM harvest_activity_attempts WHERE exec_id = ? ORDER BY id DESC LIMIT 1), 0) "
    "+ 1, ?, 'inc', 1, ?, ?, 'COMPLETED', NULL)"
)
_APPEND = (
    "UPDATE harvest_executions SET next_seq = ?, history_bytes = history_bytes + ? "
    "WHERE exec_id = ? AND next_seq = ?"
)
_APPEND_DECIDED = (
    "UPDATE harvest_executions SET next_seq = ?, history_bytes = history_bytes + ?, "
    "needs_decision = ?, panic_count = ? WHERE exec_id = ? AND next_seq = ?"
)
_INSERT_EVENT = (
    "INSERT INTO harvest_events (exec_id, seq, type, at, attrs) VALUES (?, ?, ?, ?, ?)"
)
_INSERT_CLAIMED_TASK = (
    "INSERT INTO harvest_tasks (exec_id, activity_id, activity_name, input, queue, "
    "max_attempts, ready_at, scheduled_at, retry_policy, start_to_close, "
    "schedule_to_close_at, idempotency_key, local, status, claimed_at) VALUES "
    "(?, ?, 'inc', ?, 'default', 1, ?, ?, NULL, NULL, NULL, ?, 0, 'RUNNING', ?)"
)
_INSERT_SIGNAL = (
    "INSERT INTO harvest_signals (exec_id, name, payload, idempotency_key, "
    "received_at) VALUES (?, 'go', ?, NULL, ?)"
)
_MARK = "UPDATE harvest_executions SET needs_decision = 1 WHERE exec_id = ?"
_STAGED = (
    "SELECT id, name, payload, idempotency_key, received_at FROM harvest_signals "
    "WHERE exec_id = ? AND delivered = 0 ORDER BY received_at, id LIMIT ?"
)
_TAKE_SIGNAL = "DELETE FROM harvest_signals WHERE exec_id = ? AND id = ? AND idempotency_key IS NULL"
_CLOSE = (
    "UPDATE harvest_executions SET state = 'COMPLETED', closed_at = ?, output = ?, "
    "error = NULL, needs_decision = 0 WHERE exec_id = ?"
)


def _begin(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("PRAGMA data_version").fetchone()


def long_history_step(
    conn: sqlite3.Connection, exec_id: str, task_id: int, seq: int, n: int
) -> int:
    """Activity `n`'s completion and the decision that schedules and claims `n + 1`; its task id.

    One transaction, as the engine commits it for a run driven alone: the
    claimed task deleted, the attempt logged, ActivityCompleted appended,
    the next task inserted already claimed, ActivityScheduled appended.
    """
    _begin(conn)
    conn.execute(_DELETE_TASK, (task_id,)).fetchall()
    conn.execute(_INSERT_ATTEMPT, (exec_id, exec_id, n, _AT, _AT))
    done = f'{{"activity_id":{n},"attempt":1,"name":"inc","result":{n}}}'
    conn.execute(_APPEND, (seq + 1, len(done), exec_id, seq))
    conn.executemany(_INSERT_EVENT, [(exec_id, seq, "ActivityCompleted", _AT, done)])
    following = conn.execute(
        _INSERT_CLAIMED_TASK,
        (exec_id, n + 1, str(n), _AT, _AT, f"{exec_id}:{n + 1}", _AT),
    ).lastrowid
    scheduled = f'{{"activity_id":{n + 1},"input":{n},"name":"inc"}}'
    conn.execute(_APPEND_DECIDED, (seq + 2, len(scheduled), 0, 0, exec_id, seq + 1))
    conn.executemany(
        _INSERT_EVENT, [(exec_id, seq + 1, "ActivityScheduled", _AT, scheduled)]
    )
    conn.execute("COMMIT")
    return int(following or 0)


def signal_steps(conn: sqlite3.Connection, exec_id: str, seq: int, n: int) -> None:
    """`send_signal`'s transaction, then the decision that takes the signal and completes."""
    _begin(conn)
    conn.execute(_INSERT_SIGNAL, (exec_id, str(n), _AT))
    conn.execute(_MARK, (exec_id,))
    conn.execute("COMMIT")
    _begin(conn)
    staged = conn.execute(_STAGED, (exec_id, 49_999)).fetchall()
    conn.execute(_TAKE_SIGNAL, (exec_id, staged[0][0]))
    received = f'{{"before_start":true,"name":"go","payload":{n}}}'
    output = f'{{"output":{n}}}'
    conn.execute(
        _APPEND_DECIDED,
        (seq + 2, len(received) + len(output), 0, 0, exec_id, seq),
    )
    conn.executemany(
        _INSERT_EVENT,
        [
            (exec_id, seq, "SignalReceived", _AT, received),
            (exec_id, seq + 1, "WorkflowCompleted", _AT, output),
        ],
    )
    conn.execute(_CLOSE, (_AT, str(n), exec_id))
    conn.execute("COMMIT")


def claimed_first_task(conn: sqlite3.Connection, exec_id: str) -> tuple[int, int]:
    """A claimed task row to complete and the run's next seq: where the first step starts."""
    _begin(conn)
    task_id = conn.execute(
        _INSERT_CLAIMED_TASK, (exec_id, 0, "0", _AT, _AT, f"{exec_id}:0", _AT)
    ).lastrowid
    (seq,) = conn.execute(
        "SELECT next_seq FROM harvest_executions WHERE exec_id = ?", (exec_id,)
    ).fetchone()
    conn.execute("COMMIT")
    return int(task_id or 0), int(seq)


async def sql_floor_long_history(rt: SqliteRuntime, k: int) -> dict[str, Any]:
    """K long-history steps from a plain loop on a real run's row; ms per activity."""
    conn = rt.store.connection
    exec_id = str(rt.start_workflow("k_steps", k))
    task_id, seq = claimed_first_task(conn, exec_id)
    began = time.perf_counter()
    for n in range(k):
        task_id = long_history_step(conn, exec_id, task_id, seq, n)
        seq += 2
    seconds = time.perf_counter() - began
    return {"k": k, "ms_per_activity": seconds / k * 1000}


async def sql_floor_signal(rt: SqliteRuntime, reps: int) -> dict[str, Any]:
    """`reps` signal + completion transaction pairs, each on a fresh run's row; the median."""
    conn = rt.store.connection
    ms = []
    for n in range(reps):
        exec_id = str(rt.start_workflow("wait_signal", None))
        (seq,) = conn.execute(
            "SELECT next_seq FROM harvest_executions WHERE exec_id = ?", (exec_id,)
        ).fetchone()
        began = time.perf_counter()
        signal_steps(conn, exec_id, int(seq), n)
        ms.append((time.perf_counter() - began) * 1000)
    return {"reps": reps, "median_ms": statistics.median(ms)}
