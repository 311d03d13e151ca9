"""Text where a side table holds numbers (ledger, mutexes, timers, logs) is DatabaseCorrupt, never a raw error.

SQLite keeps any value in any column. A ledger row with text in
`input_tokens` or `latency` made `harvest ledger` raise `ValueError: Unknown
format code 'f'` (and its totals read the text as 0); a mutex row with text
in `lock_seq` or `queued_at` made `SqliteReader.mutexes()` raise `TypeError`.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import hostile_files as hf
import pytest
from click.testing import CliRunner

from harvest_engine import DatabaseCorrupt, SqliteReader
from harvest_engine.cli import main

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="module")
def sound(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hf.prepare_sound(tmp_path_factory.mktemp("sound"))


def first_run(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("SELECT exec_id FROM harvest_executions").fetchone()[0])
    finally:
        conn.close()


LEDGER = (
    "INSERT INTO harvest_llm_ledger (exec_id, activity, attempt, model, "
    "input_tokens, output_tokens, latency, recorded_at) VALUES "
    "('{run}', 'ask', 1, 'model-x', {inp}, 5, {lat}, 0)"
)
MUTEX = (
    "INSERT INTO harvest_mutexes (key, exec_id, granted, lock_seq, queued_at) "
    "VALUES ('k', '{run}', 1, {seq}, {at})"
)
TIMER = "INSERT INTO harvest_timers (exec_id, timer_id, fire_at) VALUES ('{run}', 't9', 'soon')"
LOG = (
    "INSERT INTO harvest_workflow_logs (exec_id, seq, at, message, marker) "
    "VALUES ('{run}', 99, 'noon', 'hi', 0)"
)


def damaged(sound: Path, tmp_path: Path, sql: str) -> tuple[Path, str]:
    path = tmp_path / "hostile.db"
    path.write_bytes(sound.read_bytes())
    run = first_run(path)
    hf._sql(path, sql.format(run=run, inp="'lots'", lat="0.5", seq="1", at="0"))
    return path, run


@pytest.mark.parametrize(
    "sql",
    [
        LEDGER.replace("{inp}", "'lots'"),
        LEDGER.replace("{lat}", "'slow'"),
    ],
    ids=["text_input_tokens", "text_latency"],
)
def test_harvest_ledger_says_the_file_is_damaged_instead_of_a_traceback(
    sound: Path, tmp_path: Path, sql: str
) -> None:
    path, run = damaged(
        sound, tmp_path, sql.replace("{inp}", "7").replace("{lat}", "0.5")
    )
    for extra in ([], ["--json"]):
        got = CliRunner().invoke(main, ["ledger", str(path), run, *extra])
        assert got.exit_code == 6, got.output
        assert "is damaged" in got.output
        assert isinstance(got.exception, SystemExit)
    with SqliteReader.open(path) as reader:
        with pytest.raises(DatabaseCorrupt, match="ledger row"):
            reader.llm_ledger(run)
        with pytest.raises(DatabaseCorrupt, match="ledger row"):
            reader.llm_totals(run)  # SUM would have read the text as 0


@pytest.mark.parametrize(
    "sql",
    [MUTEX.replace("{seq}", "'x'"), MUTEX.replace("{at}", "'soon'")],
    ids=["text_lock_seq", "text_queued_at"],
)
def test_a_mutex_row_with_text_in_a_number_is_database_corrupt(
    sound: Path, tmp_path: Path, sql: str
) -> None:
    path, run = damaged(sound, tmp_path, sql)
    with (
        SqliteReader.open(path) as reader,
        pytest.raises(DatabaseCorrupt, match="mutex"),
    ):
        reader.mutexes(run)


@pytest.mark.parametrize(
    ("sql", "read"), [(TIMER, "timers"), (LOG, "workflow_logs")], ids=["timer", "log"]
)
def test_text_in_a_timer_or_log_time_is_database_corrupt(
    sound: Path, tmp_path: Path, sql: str, read: str
) -> None:
    path, run = damaged(sound, tmp_path, sql)
    with SqliteReader.open(path) as reader, pytest.raises(DatabaseCorrupt):
        getattr(reader, read)(run)
