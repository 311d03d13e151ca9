"""The SQLite store: schema versions, refusals that leave a file untouched, the append-only guard, orphans."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harvest_engine import (
    ActivityContext,
    DatabaseClosed,
    NotAHarvestDatabase,
    RunState,
    SchemaTooNew,
    SqliteReader,
    SqliteRuntime,
    StartOptions,
    StorageError,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.store.sqlite import connection
from harvest_engine.store.sqlite.connection import NEW_FILE_PAGE_SIZE
from harvest_engine.store.sqlite.schema import SCHEMA_VERSION
from harvest_engine.store.sqlite.store import SqliteStore

Open = Callable[..., SqliteRuntime]

# The SQLite store's own file: its pragmas, lock, schema steps and triggers.
# test_postgres_store.py holds the Postgres store's twins of these tests.
pytestmark = pytest.mark.sqlite_only(
    "the SQLite store's own file format, lock and triggers"
)


def file_state(path: Path) -> tuple[bytes, list[str]]:
    siblings = sorted(
        p.name for p in path.parent.iterdir() if p.name != path.name + ".lock"
    )
    return path.read_bytes(), siblings


def test_a_file_from_a_newer_version_is_refused_and_left_untouched(
    db_path: Path,
) -> None:
    SqliteRuntime.open(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    before = file_state(db_path)
    with pytest.raises(SchemaTooNew) as caught:
        SqliteRuntime.open(db_path)
    assert caught.value.found == SCHEMA_VERSION + 1  # type: ignore[attr-defined]
    assert str(SCHEMA_VERSION) in str(caught.value)
    assert file_state(db_path) == before
    SqliteRuntime.open(db_path.with_name("other.db")).close()  # the lock was released


def test_a_foreign_sqlite_file_is_refused_and_left_untouched(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE customers (id INTEGER)")
    conn.commit()
    conn.close()
    before = file_state(db_path)
    with pytest.raises(NotAHarvestDatabase):
        SqliteRuntime.open(db_path)
    assert file_state(db_path) == before


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(db_path: Path) -> None:
    db_path.write_bytes(b"this is a text file, not a database" * 100)
    before = file_state(db_path)
    with pytest.raises(NotAHarvestDatabase):
        SqliteRuntime.open(db_path)
    assert file_state(db_path) == before


def test_a_file_whose_harvest_meta_names_another_application_is_refused_untouched(
    db_path: Path,
) -> None:
    SqliteRuntime.open(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute(
        "UPDATE harvest_meta SET value = 'someone-else' WHERE key = 'application'"
    )
    conn.commit()
    conn.close()
    before = file_state(db_path)
    with pytest.raises(NotAHarvestDatabase, match="does not name harvest"):
        SqliteRuntime.open(db_path)
    assert file_state(db_path) == before


def test_a_harvest_file_missing_its_tables_is_refused_untouched_naming_them(
    db_path: Path,
) -> None:
    SqliteRuntime.open(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("DROP TABLE harvest_events")
    conn.execute("DROP TABLE harvest_tasks")
    conn.commit()
    conn.close()
    before = file_state(db_path)
    with pytest.raises(NotAHarvestDatabase, match="harvest_events, harvest_tasks"):
        SqliteRuntime.open(db_path)
    assert file_state(db_path) == before
    conn = sqlite3.connect(db_path)
    assert (
        conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    )  # no WAL switch
    conn.close()


def test_the_writer_uses_wal_full_sync_and_a_busy_timeout(db_path: Path) -> None:
    store = SqliteStore.open(db_path)
    conn = store.connection
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] > 0
    store.close()


def page_size(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA page_size").fetchone()[0])
    finally:
        conn.close()


def test_a_new_file_is_made_with_small_pages_so_a_commit_writes_fewer_bytes(
    db_path: Path,
) -> None:
    SqliteRuntime.open(db_path).close()
    assert page_size(db_path) == NEW_FILE_PAGE_SIZE == 1024
    default = sqlite3.connect(":memory:").execute("PRAGMA page_size").fetchone()[0]
    assert page_size(db_path) < default  # smaller than SQLite's own default


@workflow
async def greeting(ctx: WorkflowContext, name: str) -> str:
    return f"hello {name}"


async def test_a_file_made_with_other_pages_keeps_them_and_still_runs(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection, "NEW_FILE_PAGE_SIZE", 4096)  # an older harvest
    SqliteRuntime.open(db_path).close()
    monkeypatch.undo()
    with SqliteRuntime.open(db_path) as rt:
        rt.register_workflow(greeting)
        exec_id = rt.start_workflow("greeting", "ada")
        assert isinstance(await rt.run_until_blocked(exec_id), RunState.Completed)
    assert page_size(db_path) == 4096


def test_reopening_applies_the_schema_idempotently(db_path: Path) -> None:
    for _ in range(3):
        SqliteRuntime.open(db_path).close()
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


@workflow
async def one_step(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.execute_activity(count_runs, None)


runs: list[int] = []


@activity
async def count_runs(ctx: ActivityContext, _: Any) -> int:
    runs.append(ctx.info().attempt)
    return len(runs)


async def test_events_are_append_only_update_and_overwrite_are_refused(
    open_rt: Open,
) -> None:
    rt = open_rt()
    rt.register_workflow(one_step)
    rt.register_activity(count_runs)
    exec_id = rt.start_workflow("one_step")
    await rt.run_until_blocked(exec_id)
    conn = rt.store.connection  # type: ignore[attr-defined]
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute(
            "UPDATE harvest_events SET type = 'X' WHERE exec_id = ?", (str(exec_id),)
        )
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute(
            "INSERT OR REPLACE INTO harvest_events (exec_id, seq, type, at, attrs) "
            "VALUES (?, 1, 'WorkflowStarted', 0, '{}')",
            (str(exec_id),),
        )
    conn.execute(
        "DELETE FROM harvest_events WHERE exec_id = 'nobody'"
    )  # retention may delete


def test_the_guard_triggers_are_recreated_on_open(db_path: Path) -> None:
    SqliteRuntime.open(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("DROP TRIGGER harvest_events_no_update")
    conn.commit()
    conn.close()
    SqliteRuntime.open(db_path).close()
    conn = sqlite3.connect(db_path)
    names = {
        r[0]
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    }
    conn.close()
    assert {"harvest_events_no_update", "harvest_events_no_overwrite"} <= names


async def test_open_reclaims_a_task_stranded_running_and_runs_it_again(
    db_path: Path,
) -> None:
    runs.clear()
    with SqliteRuntime.open(db_path) as rt:
        rt.register_workflow(one_step)
        rt.register_activity(count_runs)
        exec_id = rt.start_workflow("one_step")
        rt._engine.decider.decide(
            str(exec_id), rt.clock.now()
        )  # schedules the task, runs nothing
        task = rt.store.ready_tasks(str(exec_id), rt.clock.now())[0]
        # What a crash mid-body leaves behind: the claim committed, no result.
        assert rt.store.claim_task(task.id, rt.clock.now()) is not None
    with SqliteRuntime.open(db_path) as rt:
        assert [t.status for t in rt.store.pending_tasks(str(exec_id))] == ["PENDING"]
        rt.register_workflow(one_step)
        rt.register_activity(count_runs)
        assert await rt.run_until_blocked(exec_id) == RunState.Completed(output=1)
        assert runs == [1]  # a re-run after a crash keeps its attempt number


def test_a_version_1_file_is_migrated_forward_on_open(db_path: Path) -> None:
    from harvest_engine.store.sqlite.migrations import STEPS

    conn = sqlite3.connect(db_path)
    STEPS[0](conn)
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    SqliteRuntime.open(db_path).close()
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    indexes = {
        r[0]
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
    }
    conn.close()
    assert "harvest_executions_name" in indexes


def test_a_workflow_name_filter_pages_by_seeking_its_index(db_path: Path) -> None:
    SqliteRuntime.open(db_path).close()
    conn = sqlite3.connect(db_path)
    plan = " ".join(
        str(r[-1])
        for r in conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM harvest_executions WHERE workflow_name = ? "
            "ORDER BY id DESC LIMIT 100",
            ("order",),
        )
    )
    conn.close()
    assert "harvest_executions_name" in plan
    assert "TEMP B-TREE" not in plan


def schema_of(path: Path) -> tuple[int, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path)
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    objects = conn.execute(
        "SELECT type, name, sql FROM sqlite_master ORDER BY name"
    ).fetchall()
    conn.close()
    return version, objects


@workflow
async def order(ctx: WorkflowContext, _: Any) -> str:
    return "shipped"


async def test_an_early_v1_file_gains_its_late_columns_and_takes_new_runs(
    db_path: Path, open_rt: Open
) -> None:
    # The committed fixture: a v1 file whose executions table predates memo,
    # search attributes and the start/close times (guide §8, §7 "before #2027").
    fixture = Path(__file__).parent / "schemas" / "v1_early.db"
    db_path.write_bytes(fixture.read_bytes())  # noqa: ASYNC240 -- setup, nothing else runs yet
    with SqliteReader.open(db_path) as reader:
        old = {str(r.exec_id) for r in reader.list_executions().executions}
    rt = open_rt()
    assert schema_of(db_path)[0] == SCHEMA_VERSION
    rt.register_workflow(order)
    fresh = rt.start_workflow_with_options(
        "order",
        None,
        StartOptions(memo={"owner": "ops"}, search_attributes={"tenant": "a"}),
    ).exec_id
    assert await rt.run_until_blocked(fresh) == RunState.Completed(output="shipped")
    runs = {str(r.exec_id): r for r in rt.list_executions().executions}
    assert set(runs) == old | {str(fresh)}
    assert runs[str(fresh)].memo.value == {"owner": "ops"}
    assert all(runs[e].started_at is None and runs[e].closed_at is None for e in old)
    rt.clock.advance("1d")  # type: ignore[attr-defined]
    # An old COMPLETED run has no close time, so only the new one goes.
    assert rt.purge_terminal("1h") == 1
    assert {str(r.exec_id) for r in rt.list_executions().executions} == old


def test_running_the_migrations_again_changes_nothing(db_path: Path) -> None:
    db_path.write_bytes(
        (Path(__file__).parent / "schemas" / "v1_early.db").read_bytes()
    )
    SqliteRuntime.open(db_path).close()
    first = schema_of(db_path)
    SqliteRuntime.open(db_path).close()
    assert schema_of(db_path) == first


def test_a_failed_step_leaves_the_version_unbumped_and_its_changes_undone(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harvest_engine.store.sqlite import migrations

    conn = sqlite3.connect(db_path)
    migrations.STEPS[0](conn)
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    before = schema_of(db_path)

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE INDEX half_done ON harvest_executions (workflow_id)")
        raise sqlite3.OperationalError("disk I/O error")

    steps = list(migrations.STEPS)
    steps[1] = broken
    monkeypatch.setattr(migrations, "STEPS", steps)
    with pytest.raises(StorageError, match="disk I/O"):
        SqliteRuntime.open(db_path)
    assert schema_of(db_path) == before
    monkeypatch.undo()
    SqliteRuntime.open(db_path).close()
    assert schema_of(db_path)[0] == SCHEMA_VERSION


@pytest.mark.parametrize(
    ("where", "error", "words"),
    [
        ("", ValueError, "a database path is needed"),
        (".", NotAHarvestDatabase, "is a folder, not a database file"),
        ("missing/runs.db", StorageError, "does not exist (for runs.db)"),
    ],
)
def test_a_path_that_cannot_hold_a_database_is_refused_before_any_file_is_made(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
    error: type[Exception],
    words: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error, match=re.escape(words)):
        SqliteRuntime.open(where)
    assert sorted(
        p.name for p in tmp_path.parent.iterdir() if p.name.startswith(tmp_path.name)
    ) == [tmp_path.name]
    assert list(tmp_path.iterdir()) == []


def test_a_closed_runtime_or_reader_says_so_in_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    rt = SqliteRuntime.open(path)
    rt.close()
    with pytest.raises(DatabaseClosed, match="is closed"):
        rt.list_executions()
    with pytest.raises(DatabaseClosed):
        rt.describe("some-exec-id")
    rt.close()  # closing twice stays harmless
    reader = SqliteReader.open(path)
    reader.close()
    with pytest.raises(DatabaseClosed):
        reader.counts_by_state()
    with pytest.raises(NotAHarvestDatabase, match="it is a folder"):
        SqliteReader.open(tmp_path)
