"""The append-only guard of harvest_events: on every open, and lifted only by with_guard_off."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import pytest
from seeding import seed_run

from harvest_engine.append_only import with_guard_off
from harvest_engine.store.sqlite.schema import TRIGGER_NAMES
from harvest_engine.store.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from pathlib import Path


def triggers(conn: sqlite3.Connection) -> set[str]:
    return {
        r[0]
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    }


def test_an_event_cannot_be_updated_or_overwritten_but_can_be_deleted(
    db_path: Path,
) -> None:
    store = SqliteStore.open(db_path)
    exec_id = seed_run(store)
    conn = store.connection
    with pytest.raises(sqlite3.IntegrityError, match="UPDATE refused"):
        conn.execute(
            "UPDATE harvest_events SET attrs = '{}' WHERE exec_id = ?", (exec_id,)
        )
    with pytest.raises(sqlite3.IntegrityError, match="overwrite refused"):
        conn.execute(
            "INSERT OR REPLACE INTO harvest_events (exec_id, seq, type, at, attrs) "
            "VALUES (?, 1, 'Forged', 0, '{}')",
            (exec_id,),
        )
    conn.execute("DELETE FROM harvest_events WHERE exec_id = ?", (exec_id,))
    store.close()


def test_an_older_file_without_the_guard_gains_it_on_open(db_path: Path) -> None:
    SqliteStore.open(db_path).close()
    raw = sqlite3.connect(db_path)
    for name in TRIGGER_NAMES:
        raw.execute(f"DROP TRIGGER {name}")
    raw.commit()
    raw.close()
    store = SqliteStore.open(db_path)
    assert triggers(store.connection) >= set(TRIGGER_NAMES)
    store.close()


def test_with_guard_off_lifts_the_guard_for_its_block_only(db_path: Path) -> None:
    store = SqliteStore.open(db_path)
    exec_id = seed_run(store)
    with with_guard_off(store) as conn:
        assert not triggers(conn) & set(TRIGGER_NAMES)
        conn.execute(
            "UPDATE harvest_events SET type = 'Damaged' WHERE exec_id = ?", (exec_id,)
        )
    assert triggers(store.connection) >= set(TRIGGER_NAMES)
    row = store.connection.execute(
        "SELECT type FROM harvest_events WHERE exec_id = ?", (exec_id,)
    ).fetchone()
    assert row == ("Damaged",)
    store.close()


def test_the_guard_comes_back_when_the_block_raises(db_path: Path) -> None:
    store = SqliteStore.open(db_path)
    with pytest.raises(RuntimeError), with_guard_off(store.connection):
        raise RuntimeError("fixture failed")
    assert triggers(store.connection) >= set(TRIGGER_NAMES)
    store.close()
