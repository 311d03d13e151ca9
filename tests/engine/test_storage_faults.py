"""Storage failures: typed errors at each boundary, refusals that write nothing, memory rolled back."""

from __future__ import annotations

import os
import pickle
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harvest_engine import (
    ActivityContext,
    DatabaseCorrupt,
    DatabaseLocked,
    NotAHarvestDatabase,
    SqliteReader,
    SqliteRuntime,
    StorageError,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.store.sqlite import migrations
from harvest_engine.store.sqlite.faults import translate
from harvest_engine.store.sqlite.write_txn import SqliteWriteTxn

Open = Callable[..., SqliteRuntime]


# SQLite's driver and file-system faults; the Postgres store's (a lost
# connection, a server gone) are in test_postgres_store.py.
pytestmark = pytest.mark.sqlite_only("SQLite driver error codes and file-system faults")


def coded(kind: type[sqlite3.Error], text: str, code: int) -> sqlite3.Error:
    error = kind(text)
    error.sqlite_errorcode = code  # type: ignore[attr-defined]
    return error


@pytest.mark.parametrize(
    ("raised", "typed", "words"),
    [
        (coded(sqlite3.OperationalError, "database or disk is full", 13), StorageError, "disk full"),
        (coded(sqlite3.OperationalError, "disk I/O error", 10 | (3 << 8)), StorageError, "I/O error"),
        (coded(sqlite3.OperationalError, "attempt to write a readonly database", 8), StorageError, "read-only"),
        (coded(sqlite3.OperationalError, "unable to open database file", 14), StorageError, "cannot open"),
        (coded(sqlite3.DatabaseError, "database disk image is malformed", 11), DatabaseCorrupt, "malformed"),
        (coded(sqlite3.DatabaseError, "file is not a database", 26), DatabaseCorrupt, "not a database"),
        (coded(sqlite3.OperationalError, "no such column: memo", 1), DatabaseCorrupt, "no such column"),
        (coded(sqlite3.OperationalError, "database is locked", 5), DatabaseLocked, "held by"),
        (sqlite3.OperationalError("database or disk is full"), StorageError, "disk is full"),
        (PermissionError(13, "Permission denied"), StorageError, "Permission denied"),
        (OSError(28, "No space left on device"), StorageError, "No space left"),
        (RecursionError("maximum recursion depth exceeded"), DatabaseCorrupt, "nested too deep"),
        (OverflowError("date value out of range"), DatabaseCorrupt, "date value out of range"),
        (OverflowError("Python int too large to convert to SQLite INTEGER"), StorageError, "cannot store"),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), DatabaseCorrupt, "utf-8"),
        (UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed"), StorageError, "cannot store"),
    ],
)  # fmt: skip
def test_each_driver_or_os_failure_becomes_its_typed_error(
    raised: BaseException, typed: type[Exception], words: str
) -> None:
    error = translate(raised, "/data/w.db")
    assert type(error) is typed
    assert words in str(error)
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is typed
    assert str(again) == str(error)


def test_what_is_not_a_storage_failure_passes_unchanged() -> None:
    for error in (
        ValueError("bad input"),
        KeyError("k"),
        NotAHarvestDatabase(path="p", reason="r"),
    ):
        assert translate(error, "p") is error


def test_a_storage_error_keeps_its_reason_and_the_os_error_as_its_cause(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    SqliteRuntime.open(db_path).close()

    def no_space(*_: Any, **__: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(migrations, "read_version", no_space)
    with pytest.raises(StorageError) as caught:
        SqliteRuntime.open(db_path)
    assert caught.value.reason == "No space left on device"  # type: ignore[attr-defined]
    assert isinstance(caught.value.__cause__, OSError)


def sibling_names(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


@pytest.mark.parametrize("version", [-1, -(2**31)])
def test_a_negative_schema_version_is_refused_before_anything_is_written(
    db_path: Path, version: int
) -> None:
    SqliteRuntime.open(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    os.unlink(f"{db_path}.lock")
    before = db_path.read_bytes(), sibling_names(db_path)
    with pytest.raises(NotAHarvestDatabase, match="schema version"):
        SqliteRuntime.open(db_path)
    with pytest.raises(NotAHarvestDatabase, match="schema version"):
        SqliteReader.open(db_path)
    assert (db_path.read_bytes(), sibling_names(db_path)) == before


def test_a_refused_file_gets_no_lock_file(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(NotAHarvestDatabase):
        SqliteRuntime.open(db_path)
    assert sibling_names(db_path) == [db_path.name]


def test_a_failed_create_leaves_neither_the_file_nor_its_lock(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(conn: sqlite3.Connection) -> None:
        raise coded(sqlite3.OperationalError, "database or disk is full", 13)

    monkeypatch.setattr(migrations, "create_new", disk_full)
    with pytest.raises(StorageError, match="disk full"):
        SqliteRuntime.open(db_path)
    assert sibling_names(db_path) == []
    monkeypatch.undo()
    SqliteRuntime.open(db_path).close()


def test_a_refusal_by_a_held_lock_keeps_the_holders_lock_file(db_path: Path) -> None:
    with SqliteRuntime.open(db_path):
        with pytest.raises(DatabaseLocked):
            SqliteRuntime.open(db_path)
        assert Path(f"{db_path}.lock").exists()
        with pytest.raises(DatabaseLocked):
            SqliteRuntime.open(db_path)


@pytest.mark.parametrize("db_mode", [None, 0o600, 0o640])
def test_the_lock_file_takes_the_databases_mode_under_umask_077(
    db_path: Path, db_mode: int | None
) -> None:
    old = os.umask(0o077)
    try:
        if db_mode is not None:
            SqliteRuntime.open(db_path).close()
            os.unlink(f"{db_path}.lock")
            db_path.chmod(db_mode)
        SqliteRuntime.open(db_path).close()
    finally:
        os.umask(old)
    db_bits = stat.S_IMODE(db_path.stat().st_mode)
    assert db_bits == (0o600 if db_mode is None else db_mode)
    assert stat.S_IMODE(Path(f"{db_path}.lock").stat().st_mode) == db_bits


# -- a failed commit rolls memory back --------------------------------------------

runs_of_body: list[str] = []


@activity
async def count_me(ctx: ActivityContext, text: str) -> str:
    runs_of_body.append(text)
    return text.upper()


@workflow
async def one_step(ctx: WorkflowContext, text: str) -> str:
    return await ctx.execute_activity(count_me, text)


def task_statuses(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT status FROM harvest_tasks")]
    finally:
        conn.close()


async def test_a_failed_completion_commit_strands_no_task_and_the_next_pass_finishes(
    open_rt: Open, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs_of_body.clear()
    rt = open_rt()
    rt.register_workflow(one_step)
    rt.register_activity(count_me)
    exec_id = rt.start_workflow("one_step", "hi")
    real = SqliteWriteTxn.record_attempt

    def disk_full(self: SqliteWriteTxn, *args: Any) -> None:
        real(self, *args)
        raise coded(sqlite3.OperationalError, "database or disk is full", 13)

    monkeypatch.setattr(SqliteWriteTxn, "record_attempt", disk_full)
    with pytest.raises(StorageError, match="disk full"):
        await rt.poll_once()  # decides (commits), runs the body, fails to record it
    assert runs_of_body == ["hi"]
    assert task_statuses(db_path) == ["RUNNING"]  # the claim committed before the body
    assert len(rt.cache) == 0  # nothing cached may run ahead of the file
    monkeypatch.undo()
    while await rt.poll_once():
        pass
    assert rt.describe(exec_id).state == "COMPLETED"
    assert rt.outcome(exec_id).output == "HI"  # type: ignore[attr-defined]
    assert runs_of_body == ["hi", "hi"]  # at-least-once: the attempt ran again
    assert task_statuses(db_path) == []
