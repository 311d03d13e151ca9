"""The SQLite write transaction's run rows: read once, kept current by its writes and past commits, never stale."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from harvest_engine.events import HistoryEvent
from harvest_engine.runtime.deciding.runs import start_run
from harvest_engine.store.rows import NewExecution, NewTask
from harvest_engine.store.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

pytestmark = pytest.mark.sqlite_only("the SQLite write transaction's own row cache")

NOW = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore.open(tmp_path / "cache.db", now=NOW)
    yield store
    store.close()


def new_run(store: SqliteStore, exec_id: str, parent: str | None = None) -> None:
    with store.write() as txn:
        start_run(
            txn,
            NewExecution(
                exec_id=exec_id,
                workflow_name="wf",
                workflow_id=exec_id,
                input="null",
                parent_exec_id=parent,
            ),
            NOW,
        )


def a_task(exec_id: str) -> NewTask:
    return NewTask(
        exec_id=exec_id,
        activity_id=1,
        activity_name="act",
        input="1",
        queue="default",
        max_attempts=1,
        ready_at=NOW,
        retry_policy=None,
        start_to_close=5,
        schedule_to_close_at=None,
        idempotency_key=f"{exec_id}:1",
    )


def test_a_row_read_again_in_a_transaction_shows_its_own_writes_as_a_fresh_read_does(
    sqlite_store: SqliteStore,
) -> None:
    new_run(sqlite_store, "r1")
    later = NOW + timedelta(seconds=3, microseconds=7)
    with sqlite_store.write() as txn:
        assert txn.execution("r1") is not None
        txn.append_events(
            "r1",
            [HistoryEvent(seq=2, type="MarkerRecorded", at=NOW, attrs={"k": "v"})],
        )
        txn.update_execution("r1", panic_count=2, not_before=later, memo='{"a":1}')
        txn.seal("r1", "COMPLETED", closed_at=later, output="7")
        in_txn = txn.execution("r1")
    assert in_txn == sqlite_store.execution("r1")
    assert in_txn is not None
    assert (in_txn.next_seq, in_txn.state, in_txn.not_before) == (3, "COMPLETED", later)


def test_a_timer_armed_after_the_row_is_read_is_due_and_goes_with_the_seal(
    sqlite_store: SqliteStore,
) -> None:
    new_run(sqlite_store, "r1")
    with sqlite_store.write() as txn:
        txn.execution("r1")  # read while the run has no timer
        assert txn.due_timers("r1", NOW) == []
        txn.add_timer("r1", "t1", NOW)
        assert [t.timer_id for t in txn.due_timers("r1", NOW)] == ["t1"]
        txn.seal("r1", "COMPLETED", closed_at=NOW)
    assert sqlite_store.timers("r1") == []


def test_a_signal_staged_after_the_row_is_read_is_staged_in_the_same_transaction(
    sqlite_store: SqliteStore,
) -> None:
    new_run(sqlite_store, "r1")
    with sqlite_store.write() as txn:
        txn.execution("r1")
        assert txn.staged_signals("r1", -1) == []
        assert txn.stage_signal("r1", "go", "1", None, NOW)
        assert [s.name for s in txn.staged_signals("r1", -1)] == ["go"]
        txn.seal("r1", "COMPLETED", closed_at=NOW)
    assert sqlite_store.staged_signals("r1") == []  # the unkeyed signal went


def signal_rows(store: SqliteStore, exec_id: str) -> list[tuple[str, str | None, int]]:
    """(name, key, delivered) of every signal row of the run, in id order."""
    return store.connection.execute(
        "SELECT name, idempotency_key, delivered FROM harvest_signals "
        "WHERE exec_id = ? ORDER BY id",
        (exec_id,),
    ).fetchall()


def traced(store: SqliteStore, statements: list[str]) -> None:
    store.connection.set_trace_callback(
        lambda sql: statements.append(sql) if "harvest_signals" in sql else None
    )


def test_signals_read_whole_are_delivered_one_statement_each_and_the_seal_skips_them(
    sqlite_store: SqliteStore,
) -> None:
    new_run(sqlite_store, "r1")
    with sqlite_store.write() as txn:
        txn.stage_signal("r1", "plain", "1", None, NOW)
        txn.stage_signal("r1", "keyed", "2", "k1", NOW)
    statements: list[str] = []
    with sqlite_store.write() as txn:
        txn.execution("r1")
        traced(sqlite_store, statements)
        staged = txn.staged_signals("r1", -1)
        txn.mark_signals_delivered("r1", [s.signal_id for s in staged])
        txn.seal("r1", "COMPLETED", closed_at=NOW)
        sqlite_store.connection.set_trace_callback(None)
    # The read, then a DELETE for the unkeyed and an UPDATE for the keyed;
    # the seal has nothing left to clean.
    assert [sql.split()[0] for sql in statements] == ["SELECT", "DELETE", "UPDATE"]
    assert signal_rows(sqlite_store, "r1") == [("keyed", "k1", 1)]


def test_signals_read_in_part_are_delivered_and_cleaned_as_before(
    sqlite_store: SqliteStore,
) -> None:
    new_run(sqlite_store, "r1")
    with sqlite_store.write() as txn:
        for name, key in (("a", None), ("b", "kb"), ("c", None), ("d", "kd")):
            txn.stage_signal("r1", name, "1", key, NOW)
    with sqlite_store.write() as txn:
        txn.execution("r1")
        staged = txn.staged_signals("r1", 2)  # the limit leaves c and d unread
        assert [s.name for s in staged] == ["a", "b"]
        txn.mark_signals_delivered("r1", [s.signal_id for s in staged])
        assert [s.name for s in txn.staged_signals("r1", -1)] == ["c", "d"]
    assert signal_rows(sqlite_store, "r1") == [
        ("b", "kb", 1),
        ("c", None, 0),
        ("d", "kd", 0),
    ]
    with sqlite_store.write() as txn:
        txn.execution("r1")
        staged = txn.staged_signals("r1", -1, max_bytes=1)  # the byte cut: c only
        assert [s.name for s in staged] == ["c"]
        txn.mark_signals_delivered("r1", [s.signal_id for s in staged])
        txn.seal("r1", "COMPLETED", closed_at=NOW)
    # d was never read: the seal still marks it delivered (its key dedupes).
    assert signal_rows(sqlite_store, "r1") == [("b", "kb", 1), ("d", "kd", 1)]


def test_a_signal_staged_after_the_whole_read_is_delivered_and_cleaned(
    sqlite_store: SqliteStore,
) -> None:
    new_run(sqlite_store, "r1")
    with sqlite_store.write() as txn:
        txn.stage_signal("r1", "first", "1", None, NOW)
    with sqlite_store.write() as txn:
        txn.execution("r1")
        staged = txn.staged_signals("r1", -1)
        txn.mark_signals_delivered("r1", [s.signal_id for s in staged])
        assert txn.staged_signals("r1", -1) == []
        txn.stage_signal("r1", "late", "2", None, NOW)
        txn.stage_signal("r1", "late_keyed", "3", "k", NOW)
        txn.seal("r1", "COMPLETED", closed_at=NOW)
    assert signal_rows(sqlite_store, "r1") == [("late_keyed", "k", 1)]


def test_tasks_and_mutex_places_added_after_the_read_go_with_the_seal(
    sqlite_store: SqliteStore,
) -> None:
    new_run(sqlite_store, "r1")
    with sqlite_store.write() as txn:
        txn.execution("r1")
        first = txn.add_task(a_task("r1"))
        txn.add_claimed_task(a_task("r1"), NOW)
        txn.delete_task(first)
        assert txn.pending_task_count("r1") == 1
        assert len(txn.tasks_of("r1")) == 1
        txn.enqueue_mutex("key", "r1", NOW)
        txn.seal("r1", "CANCELLED", closed_at=NOW)
        assert txn.pending_task_count("r1") == 0
    assert sqlite_store.pending_tasks("r1") == []
    assert sqlite_store.mutexes("r1") == []


def test_a_child_started_after_the_parent_is_read_is_a_running_child(
    sqlite_store: SqliteStore,
) -> None:
    new_run(sqlite_store, "parent")
    with sqlite_store.write() as txn:
        txn.execution("parent")
        assert txn.running_children("parent") == []
        start_run(
            txn,
            NewExecution(
                exec_id="child",
                workflow_name="wf",
                workflow_id="child",
                input="null",
                parent_exec_id="parent",
            ),
            NOW,
        )
        assert [c.exec_id for c in txn.running_children("parent")] == ["child"]


def test_a_rolled_back_savepoint_leaves_no_row_it_changed_in_memory(
    sqlite_store: SqliteStore,
) -> None:
    new_run(sqlite_store, "r1")
    with sqlite_store.write_together() as txn:
        assert txn.execution("r1") is not None

        def failing_write() -> None:
            with sqlite_store.write() as inner:
                inner.update_execution("r1", panic_count=5)
                inner.add_timer("r1", "t1", NOW)
                assert inner.execution("r1").panic_count == 5  # type: ignore[union-attr]
                raise RuntimeError("the joined write fails")

        with pytest.raises(RuntimeError):
            failing_write()
        row = txn.execution("r1")
        assert row is not None
        assert row.panic_count == 0
        assert txn.due_timers("r1", NOW) == []


def test_a_change_outside_a_transaction_makes_the_next_one_read_the_row_afresh(
    sqlite_store: SqliteStore,
) -> None:
    new_run(sqlite_store, "r1")
    with sqlite_store.write() as txn:
        txn.execution("r1")
    # A change on the same connection (a test fixture) between commits.
    sqlite_store.connection.execute(
        "UPDATE harvest_executions SET panic_count = 9 WHERE exec_id = 'r1'"
    )
    with sqlite_store.write() as txn:
        row = txn.execution("r1")
        assert row is not None
        assert row.panic_count == 9


def row_reads(store: SqliteStore, body: Callable[[], object]) -> int:
    """How many times `body` reads a run's row (with its holdings) from the file."""
    seen: list[str] = []
    store.connection.set_trace_callback(seen.append)
    try:
        body()
    finally:
        store.connection.set_trace_callback(None)
    return sum(1 for sql in seen if sql.startswith("SELECT id, exec_id, workflow_name"))


def test_a_committed_row_serves_the_next_transaction_without_a_read(
    sqlite_store: SqliteStore,
) -> None:
    new_run(sqlite_store, "r1")
    with sqlite_store.write() as txn:
        txn.update_execution("r1", panic_count=3)
        txn.add_timer("r1", "t1", NOW + timedelta(seconds=5))

    kept: list[object] = []

    def next_transaction() -> None:
        with sqlite_store.write() as txn:
            kept.append(txn.execution("r1"))
            assert txn.due_timers("r1", NOW + timedelta(seconds=5)) != []

    assert row_reads(sqlite_store, next_transaction) == 0
    assert kept == [sqlite_store.execution("r1")]


def test_another_connections_commit_between_transactions_makes_the_row_read_afresh(
    sqlite_store: SqliteStore, tmp_path: Path
) -> None:
    new_run(sqlite_store, "r1")
    with sqlite_store.write() as txn:
        txn.execution("r1")
    other = sqlite3.connect(tmp_path / "cache.db", isolation_level=None)
    try:
        other.execute(
            "UPDATE harvest_executions SET panic_count = 4 WHERE exec_id = 'r1'"
        )
    finally:
        other.close()

    def next_transaction() -> None:
        with sqlite_store.write() as txn:
            assert txn.execution("r1").panic_count == 4  # type: ignore[union-attr]

    assert row_reads(sqlite_store, next_transaction) == 1


@pytest.mark.parametrize(
    "uri", ["file:run-cache?mode=memory&cache=shared", "file:/run-cache?vfs=memdb"]
)
def test_another_connections_commit_to_a_memory_database_is_seen_too(uri: str) -> None:
    store = SqliteStore.open_memory(uri)
    try:
        new_run(store, "r1")
        with store.write() as txn:
            txn.execution("r1")
        other = sqlite3.connect(uri, uri=True, isolation_level=None)
        try:
            other.execute(
                "UPDATE harvest_executions SET panic_count = 6 WHERE exec_id = 'r1'"
            )
        finally:
            other.close()
        with store.write() as txn:
            assert txn.execution("r1").panic_count == 6  # type: ignore[union-attr]
    finally:
        store.close()


def test_a_rolled_back_transaction_leaves_no_row_for_the_next_one(
    sqlite_store: SqliteStore,
) -> None:
    new_run(sqlite_store, "r1")

    def failing_transaction() -> None:
        with sqlite_store.write() as txn:
            txn.update_execution("r1", panic_count=5)
            raise RuntimeError("the transaction fails")

    with pytest.raises(RuntimeError):
        failing_transaction()
    with sqlite_store.write() as txn:
        assert txn.execution("r1").panic_count == 0  # type: ignore[union-attr]


def test_events_read_back_in_the_transaction_that_appended_them_equal_a_read_after_commit(
    sqlite_store: SqliteStore,
) -> None:
    new_run(sqlite_store, "r1")
    at = NOW + timedelta(microseconds=1)
    with sqlite_store.write() as txn:
        txn.execution("r1")
        assert txn.load_events("r1", 1) == []  # the row says seq 1 is the last
        txn.append_events(
            "r1",
            [HistoryEvent(seq=2, type="ActivityCompleted", at=at, attrs={"r": (1, 2)})],
        )
        txn.append_events(
            "r1", [HistoryEvent(seq=3, type="MarkerRecorded", at=at, attrs={})]
        )
        from_memory = txn.load_events("r1", 1), txn.load_events("r1", 2)
        whole = txn.load_events("r1", 0)  # reaches before this transaction: read
    assert from_memory == (
        sqlite_store.load_events("r1", 1),
        sqlite_store.load_events("r1", 2),
    )
    assert from_memory[0][0].attrs == {"r": [1, 2]}  # as stored, not as appended
    assert whole == sqlite_store.load_events("r1")


def test_a_run_read_in_the_transaction_that_inserted_it_equals_its_row_read_after_commit(
    sqlite_store: SqliteStore,
) -> None:
    new = NewExecution(
        exec_id="fresh",
        workflow_name="wf",
        workflow_id="key",
        input='{"x":[1,2]}',
        attempt=2,
        predecessor="old",
        deadline=NOW + timedelta(seconds=30),
        retry_policy='{"max_attempts":3}',
        memo='{"m":1}',
        search_attributes='{"s":"v"}',
        not_before=NOW + timedelta(microseconds=5),
    )
    with sqlite_store.write() as txn:
        start_run(txn, new, NOW, advice_at=50)
        in_txn = txn.execution("fresh"), txn.load_events("fresh")
    assert in_txn == (
        sqlite_store.execution("fresh"),
        sqlite_store.load_events("fresh"),
    )
