"""A writer's open gives the WAL its full size without touching the database.

Commits that overwrite a WAL in place skip the file-size flush a growing
WAL pays on every fdatasync; the preallocation must stay invisible: no
table, no row, no page of the database changes, and a process killed right
after its commits recovers them and nothing else.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

from harvest_engine import SqliteRuntime
from harvest_engine.store.sqlite.connection import NEW_FILE_PAGE_SIZE
from harvest_engine.store.sqlite.wal_prealloc import preallocate_wal, wal_target_bytes

if TYPE_CHECKING:
    from pathlib import Path


def wal_size(db: Path) -> int:
    wal = db.with_name(db.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def tables(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {row[0] for row in rows}
    finally:
        conn.close()


def test_a_fresh_writer_starts_with_a_full_size_wal(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    rt = SqliteRuntime.open(db)
    try:
        target = wal_target_bytes(rt.store.connection)
        assert wal_size(db) >= target
    finally:
        rt.close()


def test_the_preallocation_leaves_no_table_and_no_row_behind(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    SqliteRuntime.open(db).close()
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
    finally:
        conn.close()
    assert "harvest_wal_preallocation" not in tables(db)


def test_a_wal_already_at_full_size_is_left_alone(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "plain.db", isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE t (n INTEGER)")
        assert preallocate_wal(conn, tmp_path / "plain.db") is True
        assert preallocate_wal(conn, tmp_path / "plain.db") is False
    finally:
        conn.close()


def test_a_preallocation_that_fails_rolls_back_and_restores_the_cache(
    tmp_path: Path,
) -> None:
    conn = sqlite3.connect(tmp_path / "small.db", isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE t (n INTEGER)")
        conn.execute("PRAGMA cache_size = -4000")
        conn.execute("PRAGMA max_page_count = 20")  # the pad cannot fit: SQLITE_FULL
        assert preallocate_wal(conn, tmp_path / "small.db") is False
        assert not conn.in_transaction
        assert conn.execute("PRAGMA cache_size").fetchone()[0] == -4000
        conn.execute("INSERT INTO t VALUES (1)")
        assert conn.execute("SELECT n FROM t").fetchall() == [(1,)]
    finally:
        conn.close()


KILLED_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from harvest_engine import SqliteRuntime, WorkflowContext, workflow

    @workflow
    async def parked(ctx: WorkflowContext, x: int) -> int:
        return int(await ctx.wait_for_signal("go"))

    rt = SqliteRuntime.open(sys.argv[1])
    rt.register_workflow(parked)
    for i in range(3):
        rt.start_workflow_with_id("parked", f"kept-{i}", i)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_commits_over_a_preallocated_wal_survive_a_kill(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    done = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(db)], check=False, timeout=60
    )
    assert done.returncode == -signal.SIGKILL
    # The killed writer left its full-size WAL, its commits among the pad's frames.
    plain = sqlite3.connect(tmp_path / "same-defaults.db")
    plain.execute(f"PRAGMA page_size = {NEW_FILE_PAGE_SIZE}")  # a new file's pages
    try:
        assert wal_size(db) >= wal_target_bytes(plain)
    finally:
        plain.close()
    rt = SqliteRuntime.open(db)
    try:
        kept = sorted(e.workflow_id for e in rt.list_executions().executions)
    finally:
        rt.close()
    assert kept == ["kept-0", "kept-1", "kept-2"]
    assert "harvest_wal_preallocation" not in tables(db)
