"""Rebuild the committed fixture files: an early-v1 file and a file of damaged rows.

Run from the repository root: ``python tests/engine/schemas/make_fixtures.py``.
The files are committed so a reader change is tested against bytes an older
harvest wrote, not against whatever today's writer produces.
"""

from __future__ import annotations

import sqlite3
import sys
from datetime import timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[2]), str(HERE.parent)]

from seeding import T0, seed_run  # noqa: E402

from harvest_engine.append_only import with_guard_off  # noqa: E402
from harvest_engine.store.sqlite.store import SqliteStore  # noqa: E402

# Columns that harvest_executions gained after the first v1 files shipped
# (the guide's "before issue #2027"): a reader must read them as Null.
LATE_COLUMNS = ("memo", "search_attributes", "started_at", "closed_at")


def _compact(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("PRAGMA page_size = 512")  # small files in the repository
    conn.execute("VACUUM")
    conn.close()
    for suffix in ("-wal", "-shm", ".lock"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def early_v1(path: Path) -> None:
    """A v1 file whose executions table lacks the late columns."""
    path.unlink(missing_ok=True)
    store = SqliteStore.open(path)
    seed_run(store, "order", workflow_id="order-1", input={"id": 1})
    seed_run(store, "order", workflow_id="order-2", state="COMPLETED", output="shipped")
    store.close()
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX harvest_executions_closed")
    for column in LATE_COLUMNS:
        conn.execute(f"ALTER TABLE harvest_executions DROP COLUMN {column}")
    conn.commit()
    conn.close()
    _compact(path)


def damaged(path: Path) -> None:
    """A current file holding one good run and rows damaged in every way the reader tolerates."""
    path.unlink(missing_ok=True)
    store = SqliteStore.open(path)
    seed_run(
        store,
        "order",
        workflow_id="good",
        memo={"owner": "ops"},
        search_attributes={"tenant": "acme"},
    )
    bad = seed_run(
        store,
        "order",
        workflow_id="bad",
        state="FAILED",
        closed_at=T0 + timedelta(minutes=5),
    )
    conn = store.connection
    conn.execute(
        "UPDATE harvest_executions SET memo = CAST(x'fffefd' AS TEXT), "
        "search_attributes = '[\"not\", \"an object\"]', input = 'not json', "
        "output = x'3432', started_at = 'noon', attempt = 'two' WHERE exec_id = ?",
        (bad,),
    )
    with with_guard_off(store):
        conn.execute(
            "UPDATE harvest_events SET attrs = '{\"damaged\": true}' WHERE exec_id = ?",
            (bad,),
        )
    conn.execute(
        "INSERT INTO harvest_schedules (workflow_name, spec, input, next_fire_at, created_at, "
        "updated_at) VALUES ('broken', 'not a spec', 'null', 'soon', 0, 0)"
    )
    store.close()
    _compact(path)


if __name__ == "__main__":
    early_v1(HERE / "v1_early.db")
    damaged(HERE / "damaged_rows.db")
