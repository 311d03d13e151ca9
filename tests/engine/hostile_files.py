"""Hostile database files, each made in a test's folder: damaged, foreign, tampered or unreachable."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import sqlite3
from typing import TYPE_CHECKING, Any

from harvest_engine import (
    ActivityContext,
    ManualClock,
    Schedule,
    SqliteRuntime,
    WorkflowContext,
    WorkflowSchedule,
    activity,
    workflow,
)
from harvest_engine.append_only import with_guard_off

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

RUNS = 12


@activity
async def shout(ctx: ActivityContext, text: str) -> str:
    return text.upper()


@workflow
async def greet(ctx: WorkflowContext, text: str) -> str:
    return await ctx.execute_activity(shout, text)


@workflow
async def wait_for_go(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("go")


def make_sound(path: Path) -> None:
    """A sound file: completed and parked runs, a schedule, rollback journal mode."""
    with SqliteRuntime.open(path, clock=ManualClock()) as rt:
        rt.register_workflow(greet)
        rt.register_workflow(wait_for_go)
        rt.register_activity(shout)
        for i in range(RUNS):
            if i % 3 == 0:
                run = rt.start_workflow("wait_for_go", i)
            else:
                run = rt.start_workflow_with_id("greet", f"g{i}", f"text {i} " * 40)
            asyncio.run(rt.run_until_blocked(run))
        rt.upsert_schedule(WorkflowSchedule("greet", Schedule.every("1h"), input="s"))
    os.unlink(f"{path}.lock")


def _sql(path: Path, *statements: str, guard_off: bool = True) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        if guard_off:
            with with_guard_off(conn):
                for statement in statements:
                    conn.execute(statement)
        else:
            for statement in statements:
                conn.execute(statement)
    finally:
        conn.close()


def _checkpoint(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()


def truncated_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def truncated_header(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


def random_bytes(path: Path) -> None:
    path.write_bytes(random.Random(7).randbytes(8192))


def garbled_pages(path: Path) -> None:
    data = bytearray(path.read_bytes())
    rng = random.Random(11)
    for page in range(2, len(data) // 4096):
        for _ in range(64):
            data[page * 4096 + rng.randrange(4096)] = rng.randrange(256)
    path.write_bytes(bytes(data))


def foreign_schema(path: Path) -> None:
    path.unlink()
    _sql(path, "CREATE TABLE customers (id INTEGER, name TEXT)", guard_off=False)


def dropped_events(path: Path) -> None:
    _sql(path, "DROP TABLE harvest_events", guard_off=False)


def dropped_tasks(path: Path) -> None:
    _sql(path, "DROP TABLE harvest_tasks", guard_off=False)


def _drop_column(path: Path, table: str, column: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    rows = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE tbl_name = ? AND sql IS NOT NULL",
        (table,),
    ).fetchall()
    for kind, name, sql in rows:
        if kind in ("index", "trigger") and column in sql:
            conn.execute(f"DROP {kind.upper()} {name}")
    conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    conn.close()


def dropped_state_column(path: Path) -> None:
    _drop_column(path, "harvest_executions", "state")


def dropped_attrs_column(path: Path) -> None:
    _drop_column(path, "harvest_events", "attrs")


def huge_timestamps(path: Path) -> None:
    _sql(
        path,
        "UPDATE harvest_executions SET started_at = 9223372036854775807 WHERE id % 2 = 0",
        "UPDATE harvest_events SET at = -9223372036854775808 WHERE seq = 2",
        "UPDATE harvest_schedules SET next_fire_at = 9223372036854775807",
    )


def text_timestamps(path: Path) -> None:
    _sql(
        path,
        "UPDATE harvest_executions SET closed_at = 'yesterday' WHERE id % 2 = 1",
        "UPDATE harvest_events SET at = 1e300 WHERE seq = 1",
    )


def deep_json(path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    _sql(
        path,
        f"UPDATE harvest_executions SET input = '{deep}', memo = '{deep}'",
        f"UPDATE harvest_events SET attrs = '{deep}' WHERE seq = 2",
    )


def non_utf8_text(path: Path) -> None:
    _sql(
        path,
        "UPDATE harvest_executions SET workflow_id = CAST(x'fffe41' AS TEXT) WHERE id % 2 = 0",
        "UPDATE harvest_events SET attrs = CAST(x'7b22ff22' AS TEXT) WHERE seq = 1",
        "UPDATE harvest_executions SET output = CAST(x'c3' AS TEXT)",
    )


def bad_json(path: Path) -> None:
    _sql(
        path,
        "UPDATE harvest_executions SET output = '{not json', search_attributes = '[1,'",
        "UPDATE harvest_events SET attrs = '42' WHERE seq = 2",
    )


def wrong_types(path: Path) -> None:
    _sql(
        path,
        "UPDATE harvest_executions SET attempt = 'many', next_seq = 'x' WHERE id % 2 = 0",
        "UPDATE harvest_events SET seq = 'x' WHERE seq = 3",
    )


def newer_version(path: Path) -> None:
    _sql(path, "PRAGMA user_version = 99", guard_off=False)


def negative_version(path: Path) -> None:
    _sql(path, "PRAGMA user_version = -3", guard_off=False)


def unknown_version_without_tables(path: Path) -> None:
    _sql(path, "DROP TABLE harvest_signals", "PRAGMA user_version = 1")


def seq_gap(path: Path) -> None:
    _sql(path, "DELETE FROM harvest_events WHERE seq = 2")


def no_terminal_event(path: Path) -> None:
    _sql(
        path,
        "DELETE FROM harvest_events WHERE type IN "
        "('WorkflowCompleted', 'WorkflowFailed', 'WorkflowCancelled', 'WorkflowTerminated')",
    )


def unknown_state(path: Path) -> None:
    _sql(path, "UPDATE harvest_executions SET state = 'EXPLODED' WHERE id % 2 = 0")


def unknown_event_type(path: Path) -> None:
    _sql(path, "UPDATE harvest_events SET type = 'Banana' WHERE seq = 2")


def directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


def symlink_loop(path: Path) -> None:
    path.unlink()
    other = path.with_name("loop-b.db")
    os.symlink(other, path)
    os.symlink(path, other)


def third_party_lock(path: Path) -> None:
    # Held for the test by `hold_lock` (a connection with BEGIN EXCLUSIVE).
    pass


def hot_journal(path: Path) -> None:
    # A writer killed mid-transaction in rollback-journal mode: copy the file
    # and its journal while the transaction is open.
    work = path.with_name("work.db")
    shutil.copy(path, work)
    conn = sqlite3.connect(work, isolation_level=None)
    conn.execute("PRAGMA cache_size = 1")
    with with_guard_off(conn):
        conn.execute("BEGIN")
        conn.execute("UPDATE harvest_executions SET workflow_name = 'half-written'")
        shutil.copy(work, path)
        shutil.copy(f"{work}-journal", f"{path}-journal")
        conn.execute("ROLLBACK")
    conn.close()
    work.unlink()


VARIANTS: dict[str, Callable[[Path], None]] = {
    f.__name__: f
    for f in (
        truncated_half,
        truncated_header,
        random_bytes,
        garbled_pages,
        foreign_schema,
        dropped_events,
        dropped_tasks,
        dropped_state_column,
        dropped_attrs_column,
        huge_timestamps,
        text_timestamps,
        deep_json,
        non_utf8_text,
        bad_json,
        wrong_types,
        newer_version,
        negative_version,
        unknown_version_without_tables,
        seq_gap,
        no_terminal_event,
        unknown_state,
        unknown_event_type,
        directory,
        symlink_loop,
        third_party_lock,
        hot_journal,
    )
}


def make(folder: Path, variant: str, sound: Path) -> Path:
    """A copy of the `sound` file in `folder`, damaged as `variant` says."""
    path = folder / "hostile.db"
    shutil.copy(sound, path)
    VARIANTS[variant](path)
    return path


def prepare_sound(folder: Path) -> Path:
    """The sound file every variant starts from (rollback journal mode, checkpointed)."""
    path = folder / "sound.db"
    make_sound(path)
    _checkpoint(path)
    return path
