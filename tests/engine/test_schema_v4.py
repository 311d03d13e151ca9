"""Schema v4 (fewer b-trees per commit): a v3 file migrates in place and keeps its rows.

The v3 file is a real one: runs driven by this code, then its two changed
b-trees put back in the v3 layout with the v3 DDL (an attempt log with a
global rowid id and an index on (exec_id, activity_name); a ready-task index
on (status, ready_at)).
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ActivityContext,
    RetryPolicy,
    RunState,
    SqliteReader,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.store.sqlite import migrations

if TYPE_CHECKING:
    from pathlib import Path

    from harvest_engine import ManualClock

pytestmark = pytest.mark.sqlite_only("the SQLite file's own schema steps")


@activity(retry=RetryPolicy(max_attempts=3, initial_interval="1s"))
async def flaky(ctx: ActivityContext, x: int) -> int:
    if ctx.info().attempt == 1:
        raise ValueError("first attempt fails")
    return x + 1


@workflow
async def steps(ctx: WorkflowContext, x: int) -> int:
    for _ in range(3):
        x = await ctx.execute_activity(flaky, x)
    return x


async def drive(rt: SqliteRuntime, clock: ManualClock, exec_id: str) -> RunState:
    state = await rt.run_until_blocked(exec_id)
    while not isinstance(state, RunState.Completed):
        clock.advance(2)
        state = await rt.run_until_blocked(exec_id)
    return state


V3_ATTEMPTS = """
CREATE TABLE harvest_activity_attempts (
    id            INTEGER PRIMARY KEY,
    exec_id       TEXT NOT NULL,
    activity_id   INTEGER NOT NULL,
    activity_name TEXT NOT NULL,
    attempt       INTEGER NOT NULL,
    started_at    INTEGER NOT NULL,
    ended_at      INTEGER,
    outcome       TEXT NOT NULL,
    error         TEXT
)
"""


def back_to_v3(path: Path) -> None:
    """Rewrite a v4 file's changed b-trees with the v3 DDL, ids global by first start."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("ALTER TABLE harvest_activity_attempts RENAME TO v4_attempts")
    conn.execute(V3_ATTEMPTS)
    conn.execute(
        "CREATE INDEX harvest_activity_attempts_exec "
        "ON harvest_activity_attempts (exec_id, activity_name)"
    )
    # Runs interleave in the global id order, as a v3 writer numbered them.
    conn.execute(
        "INSERT INTO harvest_activity_attempts (id, exec_id, activity_id, activity_name, "
        "attempt, started_at, ended_at, outcome, error) "
        "SELECT 10 * ROW_NUMBER() OVER (ORDER BY id, exec_id), exec_id, activity_id, "
        "activity_name, attempt, started_at, ended_at, outcome, error FROM v4_attempts"
    )
    conn.execute("DROP TABLE v4_attempts")
    conn.execute("DROP INDEX harvest_tasks_pending")
    conn.execute("CREATE INDEX harvest_tasks_ready ON harvest_tasks (status, ready_at)")
    conn.execute("PRAGMA user_version = 3")
    conn.execute("COMMIT")
    conn.close()


def raw_attempts(path: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    rows = conn.execute(
        "SELECT exec_id, id, activity_id, attempt, outcome FROM harvest_activity_attempts "
        "ORDER BY exec_id, id"
    ).fetchall()
    conn.close()
    return rows


def object_names(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    return names


def attempts_by_reader(path: Path, exec_ids: list[str]) -> dict[str, list[Any]]:
    with SqliteReader.open(path) as reader:
        return {
            e: [
                (a.activity_id, a.attempt, a.outcome)
                for a in reader.activity_attempts(e)
            ]
            for e in exec_ids
        }


def opened(db_path: Path, clock: ManualClock) -> SqliteRuntime:
    rt = SqliteRuntime.open(db_path, clock=clock)
    rt.register_workflow(steps)
    rt.register_activity(flaky)
    return rt


async def test_a_v3_file_migrates_in_place_keeping_attempts_order_and_pending_tasks(
    db_path: Path, clock: ManualClock
) -> None:
    rt = opened(db_path, clock)
    done = [str(rt.start_workflow("steps", i * 10)) for i in range(2)]
    for exec_id in done:
        await drive(rt, clock, exec_id)
    waiting = str(rt.start_workflow("steps", 100))
    rt._engine.decider.decide(waiting, clock.now())  # its first task stays PENDING
    rt.close()
    before = attempts_by_reader(db_path, [*done, waiting])
    assert [len(before[e]) for e in done] == [6, 6]  # each step: FAILED, then COMPLETED
    back_to_v3(db_path)
    v3_rows = raw_attempts(db_path)

    # A reader of the unmigrated file reads it as it is.
    assert attempts_by_reader(db_path, [*done, waiting]) == before

    rt = opened(db_path, clock)
    assert "harvest_tasks_pending" in object_names(db_path)
    assert "harvest_tasks_ready" not in object_names(db_path)
    assert raw_attempts(db_path) == v3_rows  # every row, with its id
    assert attempts_by_reader(db_path, [*done, waiting]) == before
    assert [t.status for t in rt.store.ready_tasks(waiting, clock.now())] == ["PENDING"]
    await drive(rt, clock, waiting)
    rt.close()

    after = attempts_by_reader(db_path, [*done, waiting])
    assert after[waiting][:2] == [(1, 1, "FAILED"), (1, 2, "COMPLETED")]
    assert len(after[waiting]) == 6
    ids = [row[1] for row in raw_attempts(db_path) if row[0] == waiting]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] >= 4  # later steps too
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


async def test_a_new_file_starts_compact_in_the_v4_layout(db_path: Path) -> None:
    SqliteRuntime.open(db_path).close()
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
    plans = [
        " ".join(str(r[-1]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql))
        for sql in (
            "SELECT id FROM harvest_tasks WHERE status = 'PENDING' AND ready_at <= 1 "
            "ORDER BY ready_at, id",
            "SELECT MIN(ready_at) FROM harvest_tasks WHERE status = 'PENDING'",
            "SELECT id FROM harvest_activity_attempts WHERE exec_id = 'r' ORDER BY id",
        )
    ]
    conn.close()
    assert "harvest_tasks_pending" in plans[0]
    assert "harvest_tasks_pending" in plans[1]
    assert "PRIMARY KEY (exec_id=?)" in plans[2]
    assert "TEMP B-TREE" not in plans[2]


def schema(path: Path) -> set[tuple[str, str, str | None]]:
    conn = sqlite3.connect(path)
    rows = {
        (kind, name, sql)
        for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master")
    }
    conn.close()
    return rows


def test_a_new_file_has_the_schema_the_steps_give_a_v1_file(tmp_path: Path) -> None:
    old = tmp_path / "v1.db"
    conn = sqlite3.connect(old)
    migrations.STEPS[0](conn)
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    SqliteRuntime.open(old).close()
    new = tmp_path / "new.db"
    SqliteRuntime.open(new).close()
    assert schema(new) == schema(old)
    assert not [row for row in schema(old) if row[1].endswith("_v3")]
