"""SqliteReader: mode=ro without the lock, refusals, older and damaged files, every read."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from seeding import T0, seed_run

from harvest_engine import (
    ExecutionFilter,
    ExecutionNotFound,
    InvalidFilter,
    NotAHarvestDatabase,
    SchemaTooNew,
    SqliteReader,
    Stored,
)
from harvest_engine.store.rows import LedgerEntry
from harvest_engine.store.sqlite.store import SqliteStore

SCHEMAS = Path(__file__).resolve().parent / "schemas"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fixture_copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copyfile(SCHEMAS / name, target)
    return target


@pytest.fixture
def populated(db_path: Path) -> tuple[Path, str]:
    """A closed file with one run that has a bit of everything; the run's id."""
    store = SqliteStore.open(db_path)
    exec_id = seed_run(store, input={"id": 1}, memo={"owner": "ops"})
    at = datetime(2030, 1, 1, 0, 1, tzinfo=UTC)
    with store.write() as txn:
        txn.stage_signal(exec_id, "approve", "true", None, at)
        txn.add_timer(exec_id, "t1", at + timedelta(hours=1))
        txn.add_ledger([LedgerEntry(exec_id, "summarise", 1, "m", 10, 3, 0.5, at)])
        txn.append_log_lines(
            exec_id, [(1, at, "one"), (2, at, "two"), (3, at, "three")], 2
        )
    store.close()
    return db_path, exec_id


def test_opening_and_reading_leave_the_file_byte_identical(
    populated: tuple[Path, str],
) -> None:
    path, exec_id = populated
    before = digest(path)
    with SqliteReader.open(path) as reader:
        reader.list_executions(ExecutionFilter())
        reader.visit_executions(ExecutionFilter(), lambda _: None)
        reader.describe(exec_id)
        reader.load_history(exec_id)
        reader.activity_attempts(exec_id)
        reader.pending_tasks(exec_id)
        reader.timers(exec_id)
        reader.staged_signals(exec_id)
        reader.llm_ledger(exec_id)
        reader.workflow_logs(exec_id)
        reader.counts_by_state()
        reader.list_schedules()
        reader.data_version()
    assert digest(path) == before


def test_the_reader_takes_no_lock_and_reads_beside_a_writer(db_path: Path) -> None:
    store = SqliteStore.open(db_path)
    try:
        seed_run(store)
        with SqliteReader.open(db_path) as reader:
            assert len(reader.list_executions().executions) == 1
            before = reader.data_version()
            seed_run(store)
            assert reader.data_version() != before
            assert len(reader.list_executions().executions) == 2
    finally:
        store.close()
    # The reader never touched the lock: the writer can reopen at once, even
    # with a reader open.
    with SqliteReader.open(db_path):
        SqliteStore.open(db_path).close()


def test_the_reader_cannot_write(populated: tuple[Path, str]) -> None:
    path, _ = populated
    with SqliteReader.open(path) as reader, pytest.raises(sqlite3.OperationalError):
        reader._conn.execute("DELETE FROM harvest_executions")


def test_every_read_reports_what_the_writer_stored(populated: tuple[Path, str]) -> None:
    path, exec_id = populated
    with SqliteReader.open(path) as reader:
        detail = reader.describe(exec_id)
        assert detail.input == Stored.Value({"id": 1})
        assert detail.memo == Stored.Value({"owner": "ops"})
        assert [e.type for e in reader.load_history(exec_id)] == ["WorkflowStarted"]
        assert [s.name for s in reader.staged_signals(exec_id)] == ["approve"]
        assert [t.timer_id for t in reader.timers(exec_id)] == ["t1"]
        (row,) = reader.llm_ledger(exec_id)
        assert (row.model, row.input_tokens, row.output_tokens) == ("m", 10, 3)
        totals = reader.llm_totals(exec_id)
        assert (totals.calls, totals.input_tokens, totals.latency) == (1, 10, 0.5)
        assert [line.message for line in reader.workflow_logs(exec_id)][:2] == [
            "one",
            "two",
        ]
        assert reader.count_workflow_logs(exec_id) == 2
        assert reader.workflow_log_truncated(exec_id) is True
        assert reader.counts_by_state()["RUNNING"] == 1


def test_a_visit_returns_the_next_cursor_like_a_page(db_path: Path) -> None:
    store = SqliteStore.open(db_path)
    for _ in range(3):
        seed_run(store)
    store.close()
    with SqliteReader.open(db_path) as reader:
        seen: list[str] = []
        cursor = reader.visit_executions(
            ExecutionFilter().limit(2), lambda d: seen.append(str(d.exec_id))
        )
        assert cursor == reader.list_executions(ExecutionFilter().limit(2)).next
        assert cursor is not None
        rest = reader.visit_executions(
            ExecutionFilter().limit(2).before(cursor),
            lambda d: seen.append(str(d.exec_id)),
        )
        assert rest is None
        assert len(set(seen)) == 3


def test_an_unknown_id_is_execution_not_found_on_every_read(
    populated: tuple[Path, str],
) -> None:
    path, _ = populated
    with SqliteReader.open(path) as reader:
        for read in (
            reader.describe,
            reader.load_history,
            reader.pending_tasks,
            reader.timers,
            reader.staged_signals,
            reader.llm_ledger,
            reader.workflow_logs,
            reader.count_workflow_logs,
            reader.workflow_log_truncated,
        ):
            with pytest.raises(ExecutionNotFound):
                read("no-such-run")


def test_a_list_with_a_wrong_filter_type_is_invalid_filter(
    populated: tuple[Path, str],
) -> None:
    with SqliteReader.open(populated[0]) as reader, pytest.raises(InvalidFilter):
        reader.list_executions({"state": "RUNNING"})  # type: ignore[arg-type]


def test_a_missing_file_is_refused_and_not_created(tmp_path: Path) -> None:
    path = tmp_path / "nothing.db"
    with pytest.raises(NotAHarvestDatabase, match="no such file"):
        SqliteReader.open(path)
    assert not path.exists()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"just some text, not a database at all" * 100, "not a readable SQLite file"),
        (b"", "no harvest schema"),
    ],
)
def test_a_foreign_file_is_refused_and_left_alone(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    path = tmp_path / "foreign.db"
    path.write_bytes(content)
    with pytest.raises(NotAHarvestDatabase, match=reason):
        SqliteReader.open(path)
    assert path.read_bytes() == content


def test_another_programs_sqlite_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.commit()
    conn.close()
    before = digest(path)
    with pytest.raises(NotAHarvestDatabase, match="no harvest schema version"):
        SqliteReader.open(path)
    assert digest(path) == before


def test_a_newer_file_is_refused_and_left_alone(populated: tuple[Path, str]) -> None:
    path, _ = populated
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = digest(path)
    with pytest.raises(SchemaTooNew, match="schema version 99"):
        SqliteReader.open(path)
    assert digest(path) == before


def test_an_early_file_reads_its_missing_columns_as_null(tmp_path: Path) -> None:
    path = fixture_copy("v1_early.db", tmp_path)
    before = digest(path)
    with SqliteReader.open(path) as reader:
        page = reader.list_executions()
        assert sorted(r.workflow_id for r in page.executions) == ["order-1", "order-2"]
        for run in page.executions:
            assert run.memo == Stored.Null()
            assert run.search_attributes == Stored.Null()
            assert run.started_at is None
            assert run.closed_at is None
        done = next(r for r in page.executions if r.workflow_id == "order-2")
        assert reader.describe(done.exec_id).output == Stored.Value("shipped")
        # A run with no started_at matches no time filter and no attribute filter.
        assert (
            reader.list_executions(ExecutionFilter().started_after(T0)).executions == []
        )
        flt = ExecutionFilter().search_attribute("tenant", "acme")
        assert reader.list_executions(flt).executions == []
        assert (
            len(reader.list_executions(ExecutionFilter().state("COMPLETED")).executions)
            == 1
        )
        seen: list[str] = []
        reader.visit_executions(None, lambda d: seen.append(d.workflow_id))
        assert sorted(seen) == ["order-1", "order-2"]
    assert digest(path) == before


def test_damaged_rows_read_as_unreadable_fields(tmp_path: Path) -> None:
    path = fixture_copy("damaged_rows.db", tmp_path)
    with SqliteReader.open(path) as reader:
        runs = {r.workflow_id: r for r in reader.list_executions().executions}
        assert runs["good"].memo == Stored.Value({"owner": "ops"})
        bad = runs["bad"]
        assert bad.memo.is_unreadable
        assert bad.search_attributes.is_unreadable
        assert bad.started_at is None
        assert bad.attempt == 1
        detail = reader.describe(bad.exec_id)
        assert detail.input.is_unreadable
        assert detail.output.is_unreadable
        assert [
            r.workflow_id
            for r in reader.list_executions(
                ExecutionFilter().state("FAILED")
            ).executions
        ] == ["bad"]
        (broken,) = reader.list_schedules()
        assert broken.workflow_name == "broken"
        assert broken.schedule is None
        assert broken.problem is not None
