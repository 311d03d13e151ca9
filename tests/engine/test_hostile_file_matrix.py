"""Hostile files by entry point (reader, runtime, CLI): each cell ends in a typed error or correct service."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hostile_files as hf
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harvest_engine import (
    DatabaseCorrupt,
    HarvestClient,
    HarvestError,
    Runtime,
    SqliteReader,
    SqliteRuntime,
    StorageError,
)
from harvest_engine.append_only import with_guard_off
from harvest_engine.cli import main as cli_main

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[2]

# Files whose damage is in rows: they open, and every listing page serves.
ROW_DAMAGE = {
    "huge_timestamps",
    "text_timestamps",
    "deep_json",
    "non_utf8_text",
    "bad_json",
    "wrong_types",
    "seq_gap",
    "no_terminal_event",
    "unknown_state",
    "unknown_event_type",
    "dropped_attrs_column",
}
# Damage a listing flags on the row (ExecutionSummary.damaged).
FLAGGED = {"no_terminal_event", "unknown_state", "non_utf8_text", "wrong_types"}


@pytest.fixture(scope="module")
def sound(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hf.prepare_sound(tmp_path_factory.mktemp("sound"))


@pytest.fixture
def hostile(
    request: pytest.FixtureRequest, sound: Path, tmp_path: Path
) -> Iterator[Path]:
    variant: str = request.param
    path = hf.make(tmp_path, variant, sound)
    with contextlib.ExitStack() as stack:
        if variant == "third_party_lock":
            stack.enter_context(held_by_another_connection(path))
        yield path


@contextlib.contextmanager
def held_by_another_connection(path: Path) -> Iterator[None]:
    """Another program holds SQLite's write lock on the file (WAL: readers go on)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def snapshot_of(path: Path) -> tuple[bytes | None, list[str]]:
    data = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    return data, sorted(p.name for p in path.parent.iterdir())


def typed_or_served(call: Any, *args: Any) -> Any:
    """The call's result, or None when it raised a typed harvest error."""
    try:
        return call(*args)
    except HarvestError:
        return None


def read_everything(source: Any, variant: str) -> None:
    """Every read a GUI or an operator makes; only typed errors may come out."""
    page = typed_or_served(source.list_executions)
    if variant in ROW_DAMAGE:
        assert page is not None, "one bad row must never fail a page"
    typed_or_served(source.counts_by_state)
    typed_or_served(source.list_schedules)
    for run in [] if page is None else page.executions:
        for name in ("describe", "load_history", "activity_attempts"):
            typed_or_served(getattr(source, name), run.exec_id)
        if isinstance(source, Runtime):
            typed_or_served(source.outcome, run.exec_id)
        else:
            for name in ("pending_tasks", "timers", "workflow_logs", "llm_totals"):
                typed_or_served(getattr(source, name), run.exec_id)
        if run.damaged is not None:
            with pytest.raises(DatabaseCorrupt):
                source.describe(run.exec_id)
    if variant in FLAGGED:
        assert page is not None
        assert any(r.damaged for r in page.executions)


VARIANTS = sorted(hf.VARIANTS)


@pytest.mark.parametrize("hostile", VARIANTS, indirect=True)
def test_the_reader_serves_or_raises_a_typed_error_and_writes_nothing(
    hostile: Path, request: pytest.FixtureRequest
) -> None:
    variant = request.node.callspec.params["hostile"]
    before = snapshot_of(hostile)
    try:
        reader = SqliteReader.open(hostile)
    except HarvestError:
        assert variant not in ROW_DAMAGE
    else:
        with reader:
            read_everything(reader, variant)
    if variant != "hot_journal":
        assert snapshot_of(hostile) == before


@pytest.mark.parametrize("hostile", VARIANTS, indirect=True)
def test_the_runtime_opens_and_drives_or_refuses_before_writing(
    hostile: Path, request: pytest.FixtureRequest
) -> None:
    variant = request.node.callspec.params["hostile"]
    before = snapshot_of(hostile)
    try:
        rt = SqliteRuntime.open(hostile)
    except HarvestError:
        assert variant not in ROW_DAMAGE
        assert snapshot_of(hostile) == before  # no change, no stray lock file
        return
    with rt:
        read_everything(rt, variant)
        rt.register_workflow(hf.greet)
        rt.register_workflow(hf.wait_for_go)
        rt.register_activity(hf.shout)
        for _ in range(3):
            typed_or_served(asyncio.run, rt.poll_once())


@pytest.mark.parametrize("hostile", VARIANTS, indirect=True)
def test_a_client_serves_or_raises_a_typed_error_and_writes_nothing(
    hostile: Path, request: pytest.FixtureRequest
) -> None:
    variant = request.node.callspec.params["hostile"]
    before = snapshot_of(hostile)
    try:
        client = HarvestClient.open(hostile)
    except HarvestError:
        assert variant not in ROW_DAMAGE
    else:
        with client:
            page = typed_or_served(client.list_executions)
            if variant in ROW_DAMAGE:
                assert page is not None
            for run in [] if page is None else page.executions:
                for read in (client.describe, client.load_history, client.outcome):
                    typed_or_served(read, run.exec_id)
    if variant != "hot_journal":
        assert snapshot_of(hostile) == before


CLI_CALLS = [
    ("runs",),
    ("counts",),
    ("schedules",),
    ("show", "{run}"),
    ("history", "{run}"),
]


@pytest.mark.parametrize("hostile", VARIANTS, indirect=True)
def test_the_cli_prints_output_or_one_error_line_with_its_status(
    hostile: Path, request: pytest.FixtureRequest
) -> None:
    variant = request.node.callspec.params["hostile"]
    runner = CliRunner()
    listed = runner.invoke(cli_main, ["runs", str(hostile), "--json"])
    assert listed.exception is None or isinstance(listed.exception, SystemExit)
    runs = (
        [r["exec_id"] for r in json.loads(listed.stdout)["executions"]]
        if listed.exit_code == 0
        else []
    )
    if variant in ROW_DAMAGE:
        assert listed.exit_code == 0, listed.output
    for call in CLI_CALLS:
        for run in runs[:4] if "{run}" in call else [""]:
            args = [a.format(run=run) for a in call]
            done = runner.invoke(cli_main, [args[0], str(hostile), *args[1:]])
            assert done.exception is None or isinstance(done.exception, SystemExit), (
                args,
                done.exception,
            )
            assert "Traceback" not in done.output
            if done.exit_code != 0:
                assert done.exit_code in {1, 3, 4, 5, 6, 7}
                assert len(done.stderr.strip().splitlines()) == 1


def test_a_damaged_run_is_flagged_in_the_listing_and_refused_by_single_run_reads(
    sound: Path, tmp_path: Path
) -> None:
    path = hf.make(tmp_path, "no_terminal_event", sound)
    with SqliteReader.open(path) as reader:
        page = reader.list_executions()
        damaged = [r for r in page.executions if r.damaged]
        sound_rows = [r for r in page.executions if not r.damaged]
        assert damaged
        assert sound_rows
        assert all(r.state != "RUNNING" for r in damaged)
        assert "its history ends at seq" in (damaged[0].damaged or "")
        for read in (reader.describe, reader.load_history):
            with pytest.raises(DatabaseCorrupt, match="its history ends at seq"):
                read(damaged[0].exec_id)
        assert reader.describe(sound_rows[0].exec_id).state == "RUNNING"
    with SqliteRuntime.open(path) as rt:
        for read in (rt.describe, rt.load_history):
            with pytest.raises(DatabaseCorrupt):
                read(damaged[0].exec_id)
    listed = CliRunner().invoke(cli_main, ["runs", str(path)])
    assert listed.exit_code == 0
    assert "(damaged)" in listed.stdout
    shown = CliRunner().invoke(cli_main, ["show", str(path), str(damaged[0].exec_id)])
    assert shown.exit_code == 6
    assert "is damaged" in shown.stderr


def test_a_hot_journal_is_a_storage_error_for_a_reader_and_recovered_by_the_writer(
    sound: Path, tmp_path: Path
) -> None:
    path = hf.make(tmp_path, "hot_journal", sound)
    with pytest.raises(StorageError, match="hot journal"):
        SqliteReader.open(path)
    with SqliteRuntime.open(path) as rt:
        names = {r.workflow_name for r in rt.list_executions().executions}
    assert names == {"greet", "wait_for_go"}  # the half-written rename rolled back
    with SqliteReader.open(path) as reader:
        assert reader.counts_by_state()["COMPLETED"] > 0


def test_a_history_with_a_gap_is_refused_not_served(
    sound: Path, tmp_path: Path
) -> None:
    path = hf.make(tmp_path, "seq_gap", sound)
    with SqliteReader.open(path) as reader:
        run = reader.list_executions().executions[0]
        with pytest.raises(DatabaseCorrupt, match="jumps from seq 1 to 3"):
            reader.load_history(run.exec_id)


def test_an_unknown_state_is_refused_by_outcome(sound: Path, tmp_path: Path) -> None:
    path = hf.make(tmp_path, "unknown_state", sound)
    with SqliteRuntime.open(path) as rt:
        bad = next(r for r in rt.list_executions().executions if r.damaged)
        assert bad.state == "EXPLODED"
        with pytest.raises(DatabaseCorrupt, match="unknown state 'EXPLODED'"):
            rt.outcome(bad.exec_id)


UNREADABLE_SCRIPT = """
import os, sys
from click.testing import CliRunner
from harvest_engine import HarvestError, SqliteReader, SqliteRuntime
from harvest_engine.cli import main
os.setgid(65534)
os.setuid(65534)  # after the imports: the interpreter lives under /root
path = sys.argv[1]
for opener in (SqliteReader.open, SqliteRuntime.open):
    try:
        opener(path).close()
        print("served")
    except HarvestError as exc:
        print(type(exc).__name__)
done = CliRunner().invoke(main, ["runs", path])
print("cli", done.exit_code, type(done.exception).__name__)
"""


def test_a_file_without_read_permission_is_a_typed_error_for_another_user(
    sound: Path,
) -> None:
    # Tests run as root, which reads any file: the cells run as `nobody`.
    if os.geteuid() != 0:
        pytest.skip("needs root to run the check as another user")
    folder = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        folder.chmod(0o777)
        path = folder / "secret.db"
        shutil.copy(sound, path)
        path.chmod(0o000)
        done = subprocess.run(
            [sys.executable, "-c", UNREADABLE_SCRIPT, str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=folder,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split("\n")[:3] == [
            "StorageError",
            "StorageError",
            "cli 7 SystemExit",
        ]
        assert sorted(p.name for p in folder.iterdir()) == ["secret.db"]
    finally:
        shutil.rmtree(folder)


# -- any value in any column -------------------------------------------------------

COLUMN_VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True),
    st.text(max_size=30),
    st.binary(max_size=30),
    st.sampled_from(["{", "[[[[", '{"a": 1}', "RUNNING", "COMPLETED", "[" * 5000]),
)
EXECUTION_COLUMNS = [
    "workflow_name",
    "workflow_id",
    "state",
    "attempt",
    "input",
    "output",
    "error",
    "memo",
    "search_attributes",
    "started_at",
    "closed_at",
    "deadline",
    "next_seq",
    "cancel_reason",
]
EVENT_COLUMNS = ["seq", "type", "at", "attrs"]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    table_column=st.one_of(
        st.tuples(st.just("harvest_executions"), st.sampled_from(EXECUTION_COLUMNS)),
        st.tuples(st.just("harvest_events"), st.sampled_from(EVENT_COLUMNS)),
    ),
    value=COLUMN_VALUES,
)
def test_any_value_in_any_column_is_served_flagged_or_a_typed_error(
    sound: Path,
    tmp_path_factory: pytest.TempPathFactory,
    table_column: tuple[str, str],
    value: Any,
) -> None:
    table, column = table_column
    path = tmp_path_factory.mktemp("column") / "c.db"
    shutil.copy(sound, path)
    conn = sqlite3.connect(path, isolation_level=None)
    held = True
    with with_guard_off(conn):
        try:
            conn.execute(
                f"UPDATE {table} SET {column} = ? WHERE rowid IN "
                f"(SELECT rowid FROM {table} LIMIT 3)"
                if table == "harvest_executions"
                else f"UPDATE {table} SET {column} = ? WHERE seq = 2",
                (value,),
            )
        except sqlite3.IntegrityError:
            held = False  # NOT NULL or a unique key: the file cannot hold it
    conn.close()
    if not held:
        return
    with SqliteReader.open(path) as reader:
        read_everything(reader, "bad_json")  # a row's damage never fails a page
    with SqliteRuntime.open(path) as rt:
        read_everything(rt, "bad_json")
