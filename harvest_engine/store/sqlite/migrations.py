"""Forward schema migrations keyed by PRAGMA user_version; newer files are refused."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable

from harvest_engine.errors import (
    HarvestInternalError,
    NotAHarvestDatabase,
    SchemaTooNew,
)
from harvest_engine.store.sqlite.schema import (
    APPEND_ONLY_TRIGGERS,
    APPLICATION_MARK,
    SCHEMA_VERSION,
    V1,
    V2,
    V3,
    V4,
    V5,
    V6,
    V7,
    V8,
    V9,
    V10,
)

Step = Callable[[sqlite3.Connection], None]


def _to_v1(conn: sqlite3.Connection) -> None:
    for statement in _split(V1):
        conn.execute(statement)
    conn.execute(
        "INSERT INTO harvest_meta (key, value) VALUES ('application', ?)",
        (APPLICATION_MARK,),
    )


def _to_v2(conn: sqlite3.Connection) -> None:
    _complete_early_v1(conn)
    for statement in _split(V2):
        conn.execute(statement)


def _to_v3(conn: sqlite3.Connection) -> None:
    for statement in _split(V3):
        conn.execute(statement)


def _to_v4(conn: sqlite3.Connection) -> None:
    # The old attempt log is renamed aside (its index goes along), copied
    # into the clustered table with its ids, then dropped.
    conn.execute("DROP INDEX IF EXISTS harvest_tasks_ready")
    conn.execute(
        "ALTER TABLE harvest_activity_attempts RENAME TO harvest_activity_attempts_v3"
    )
    for statement in _split(V4):
        conn.execute(statement)
    conn.execute(
        "INSERT INTO harvest_activity_attempts (exec_id, id, activity_id, activity_name, "
        "attempt, started_at, ended_at, outcome, error) "
        "SELECT exec_id, id, activity_id, activity_name, attempt, started_at, ended_at, "
        "outcome, error FROM harvest_activity_attempts_v3"
    )
    conn.execute("DROP TABLE harvest_activity_attempts_v3")


def _to_v5(conn: sqlite3.Connection) -> None:
    # A column a file already has is left alone (a file rewritten back to an
    # older version by hand keeps them): every step is safe to run again.
    have = {row[1] for row in conn.execute("PRAGMA table_info(harvest_executions)")}
    for statement in _split(V5):
        added = re.match(r"ALTER TABLE harvest_executions ADD COLUMN (\w+)", statement)
        if added is None or added.group(1) not in have:
            conn.execute(statement)


def _to_v6(conn: sqlite3.Connection) -> None:
    for statement in _split(V6):
        conn.execute(statement)


def _to_v7(conn: sqlite3.Connection) -> None:
    for statement in _split(V7):
        conn.execute(statement)


def _to_v8(conn: sqlite3.Connection) -> None:
    for statement in _split(V8):
        conn.execute(statement)


def _to_v9(conn: sqlite3.Connection) -> None:
    # As _to_v5: a column a file already has is left alone.
    have = {row[1] for row in conn.execute("PRAGMA table_info(harvest_executions)")}
    for statement in _split(V9):
        added = re.match(r"ALTER TABLE harvest_executions ADD COLUMN (\w+)", statement)
        if added is None or added.group(1) not in have:
            conn.execute(statement)


def _to_v10(conn: sqlite3.Connection) -> None:
    for statement in _split(V10):
        conn.execute(statement)


# Columns (and their index) that the first v1 files lacked, the guide's "runs
# written before issue #2027": a runtime adds them, so it can write the file,
# and the old rows read them as NULL (no close time, so purge keeps them).
_EARLY_V1_COLUMNS = {
    "memo": "TEXT",
    "search_attributes": "TEXT",
    "started_at": "INTEGER",
    "closed_at": "INTEGER",
}


def _complete_early_v1(conn: sqlite3.Connection) -> None:
    have = {row[1] for row in conn.execute("PRAGMA table_info(harvest_executions)")}
    for column, kind in _EARLY_V1_COLUMNS.items():
        if column not in have:
            conn.execute(f"ALTER TABLE harvest_executions ADD COLUMN {column} {kind}")
    conn.execute(
        "CREATE INDEX IF NOT EXISTS harvest_executions_closed ON harvest_executions (closed_at) "
        "WHERE closed_at IS NOT NULL"
    )


# What v4 replaced of v1: a new file never has them (no pages freed at birth).
_REPLACED_BY_V4 = frozenset(
    {
        "harvest_tasks_ready",
        "harvest_activity_attempts",
        "harvest_activity_attempts_exec",
    }
)


def create_new(conn: sqlite3.Connection) -> None:
    """A new file's whole schema: v1 without what v4 replaced, then v2 to v6.

    The same schema the steps give a v1 file (a test compares them), made
    without creating and dropping v1's b-trees.
    """
    for statement in _split(V1):
        made = re.match(r"CREATE (?:TABLE|INDEX) (\w+)", statement)
        if made is None or made.group(1) not in _REPLACED_BY_V4:
            conn.execute(statement)
    conn.execute(
        "INSERT INTO harvest_meta (key, value) VALUES ('application', ?)",
        (APPLICATION_MARK,),
    )
    for script in (V2, V3, V4, V5, V6, V7, V8, V9, V10):
        for statement in _split(script):
            conn.execute(statement)


# STEPS[i] moves a file from version i to version i + 1.
STEPS: list[Step] = [
    _to_v1,
    _to_v2,
    _to_v3,
    _to_v4,
    _to_v5,
    _to_v6,
    _to_v7,
    _to_v8,
    _to_v9,
    _to_v10,
]


# Result codes that say nothing against the file's content.
_NOT_THE_FILES_FAULT = frozenset(
    {
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_NOMEM,
        sqlite3.SQLITE_PERM,
    }
)


def read_version(conn: sqlite3.Connection, path: str) -> int:
    """The file's schema version; raise NotAHarvestDatabase for foreign files."""
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = table_names(conn)
    except sqlite3.DatabaseError as exc:
        if (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF in _NOT_THE_FILES_FAULT:
            raise  # the file may be fine: a lock, a disk, a permission (faults.py)
        raise NotAHarvestDatabase(
            path=path, reason=f"not a readable SQLite file ({exc})"
        ) from exc
    if version < 0:
        raise NotAHarvestDatabase(
            path=path, reason=f"its schema version {version} is not one harvest writes"
        )
    if version == 0 and tables:
        raise NotAHarvestDatabase(
            path=path, reason="it holds tables but no harvest schema version"
        )
    if version > 0 and "harvest_meta" not in tables:
        raise NotAHarvestDatabase(path=path, reason="it has no harvest_meta table")
    return version


# The tables every file of version 1 or later holds (later steps add none yet).
V1_TABLES = frozenset(re.findall(r"^CREATE TABLE (\w+)", V1, flags=re.MULTILINE))


def check_harvest_file(conn: sqlite3.Connection, path: str, version: int) -> None:
    """Refuse a file of a known version that is not harvest's or lacks its tables.

    Runs before the writer's first pragma, so a damaged or foreign file is
    refused untouched instead of failing half-way through the open.
    """
    if version == 0 or version > SCHEMA_VERSION:
        return
    check_application_mark(conn, path)
    missing = sorted(V1_TABLES - table_names(conn))
    if missing:
        raise NotAHarvestDatabase(
            path=path,
            reason=f"it lacks the tables {', '.join(missing)} of schema version {version}",
        )


def table_names(conn: sqlite3.Connection) -> set[str]:
    """The names of the file's tables."""
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    return {row[0] for row in rows}


def check_application_mark(conn: sqlite3.Connection, path: str) -> None:
    """Refuse a file whose harvest_meta does not name harvest (writer and reader alike)."""
    try:
        mark = conn.execute(
            "SELECT value FROM harvest_meta WHERE key = 'application'"
        ).fetchone()
    except sqlite3.DatabaseError as exc:
        raise NotAHarvestDatabase(
            path=path, reason=f"unreadable harvest_meta ({exc})"
        ) from exc
    if mark is None or mark[0] != APPLICATION_MARK:
        raise NotAHarvestDatabase(
            path=path, reason="harvest_meta does not name harvest"
        )


def check_supported(version: int, path: str) -> None:
    """Refuse a file newer than this code understands, before touching it."""
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(path=path, found=version, supported=SCHEMA_VERSION)


def migrate(conn: sqlite3.Connection, path: str) -> int:
    """Bring the file to SCHEMA_VERSION; each step commits with its version bump.

    Returns the version found before migrating.
    """
    if len(STEPS) != SCHEMA_VERSION:
        raise HarvestInternalError(
            f"{len(STEPS)} migration steps for schema {SCHEMA_VERSION}"
        )
    found = read_version(conn, path)
    check_supported(found, path)
    # A new file is made at the current version in one step; an older one
    # takes each step after its version.
    plan = (
        [(SCHEMA_VERSION, create_new)]
        if found == 0
        else [(version + 1, STEPS[version]) for version in range(found, SCHEMA_VERSION)]
    )
    for version, step in plan:
        conn.execute("BEGIN IMMEDIATE")
        try:
            step(conn)
            conn.execute(f"PRAGMA user_version = {version}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    install_guard(conn)
    return found


def install_guard(conn: sqlite3.Connection) -> None:
    """Create the append-only triggers (idempotent; an older file gains them)."""
    for statement in _split(APPEND_ONLY_TRIGGERS):
        conn.execute(statement)


def _split(script: str) -> list[str]:
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    return statements
