"""List SQL: ExecutionFilter to a WHERE clause, tolerant row conversion, pages and counts.

Shared by the store and the reader. A column that an older file lacks is
selected as NULL, and a damaged value
becomes a `Stored.Unreadable` field, so one bad row never fails a page.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from harvest_engine.states import ALL_STATES, ExecutionId
from harvest_engine.store.records import (
    ExecutionDetail,
    ExecutionPage,
    ExecutionSummary,
)
from harvest_engine.store.sql.columns import BadText, stored_json, stored_object
from harvest_engine.store.sqlite import verify
from harvest_engine.store.sqlite.readonly import snapshot
from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Collection, Generator, Iterator
    from datetime import datetime

    from harvest_engine.filters import ExecutionFilter, SearchValue

SUMMARY_COLUMNS = (
    "id",
    "exec_id",
    "workflow_name",
    "workflow_id",
    "state",
    "attempt",
    "started_at",
    "closed_at",
    "memo",
    "search_attributes",
)
DETAIL_COLUMNS = (
    *SUMMARY_COLUMNS,
    "input",
    "output",
    "error",
    "parent_exec_id",
    "predecessor",
    "successor",
    "cancel_reason",
    "deadline",
)


def select_list(names: tuple[str, ...], available: Collection[str] | None) -> str:
    """The SELECT list of `names`, then what `verify.damage` needs; a missing column reads as NULL."""
    if available is None:
        chosen = list(names)
    else:
        chosen = [n if n in available else f"NULL AS {n}" for n in names]
    return ", ".join([*chosen, *verify.LAST_EVENT_COLUMNS])


def decode_text(raw: bytes) -> str | BadText:
    """A text_factory that never raises: invalid UTF-8 comes back as BadText."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return BadText(raw)


@contextmanager
def tolerant_text(conn: sqlite3.Connection) -> Iterator[None]:
    """Read TEXT through `decode_text` inside the block (valid text reads as before)."""
    previous = conn.text_factory
    conn.text_factory = decode_text
    try:
        yield
    finally:
        conn.text_factory = previous


def where_clause(
    flt: ExecutionFilter, available: Collection[str] | None = None
) -> tuple[str, list[Any]]:
    """The WHERE text and its parameters for a filter (its cursor included)."""
    clauses: list[str] = []
    args: list[Any] = []

    def has(column: str) -> bool:
        return available is None or column in available

    exact: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("workflow_name", flt.workflow_names),
        ("exec_id", flt.exec_ids),
        ("workflow_id", flt.workflow_ids),
        ("parent_exec_id", flt.parent_exec_ids),
    )
    for column, texts in exact:
        for text in texts:
            # A file older than the column has no run that could match.
            clauses.append(f"{column} = ?" if has(column) else "0")
            args.extend([text] if has(column) else [])
    for prefix in flt.workflow_id_prefixes:
        # substr, not LIKE: a prefix may hold % or _, and LIKE folds ASCII case.
        clauses.append("substr(workflow_id, 1, ?) = ?")
        args.extend([len(prefix), prefix])
    if flt.states:
        clauses.append(f"state IN ({', '.join('?' * len(flt.states))})")
        args.extend(flt.states)
    # A run written before started_at existed has none: no time filter matches it.
    if flt.started_from is not None:
        clauses.append("started_at >= ?" if has("started_at") else "0")
        args.extend([micros(flt.started_from)] if has("started_at") else [])
    if flt.started_until is not None:
        clauses.append("started_at < ?" if has("started_at") else "0")
        args.extend([micros(flt.started_until)] if has("started_at") else [])
    if flt.closed_from is not None:
        clauses.append("closed_at >= ?" if has("closed_at") else "0")
        args.extend([micros(flt.closed_from)] if has("closed_at") else [])
    if flt.closed_until is not None:
        clauses.append("closed_at < ?" if has("closed_at") else "0")
        args.extend([micros(flt.closed_until)] if has("closed_at") else [])
    for key, value in flt.search_attributes:
        if not has("search_attributes"):
            clauses.append("0")
            continue
        clause, values = _search_clause(key, value)
        clauses.append(clause)
        args.extend(values)
    if flt.cursor is not None:
        clauses.append("id < ?")
        args.append(flt.cursor)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def _search_clause(key: str, value: SearchValue) -> tuple[str, list[Any]]:
    # Damaged attributes (not text, not JSON, not an object) read as an empty
    # object, so json_each never raises and the row simply does not match.
    source = (
        "(CASE WHEN typeof(search_attributes) = 'text' AND json_valid(search_attributes) "
        "AND json_type(search_attributes) = 'object' THEN search_attributes ELSE '{}' END)"
    )
    head = f"EXISTS (SELECT 1 FROM json_each({source}) AS sa WHERE sa.key = ? AND "
    if value is None:
        return head + "sa.type = 'null')", [key]
    if isinstance(value, bool):
        return head + "sa.type = ?)", [key, "true" if value else "false"]
    if isinstance(value, str):
        # JSON1 cuts text at an escaped NUL, so "a\u0000b" would equal "a":
        # attributes holding one (only a foreign writer stores them) never match text.
        return (
            head
            + "sa.type = 'text' AND sa.value = ? AND instr(search_attributes, ?) = 0)",
            [key, value, "\\u0000"],
        )
    # SQLite compares INTEGER and REAL by value, so 1 matches 1.0 (guide §8).
    return head + "sa.type IN ('integer', 'real') AND sa.value = ?)", [key, value]


def list_executions(
    conn: sqlite3.Connection,
    flt: ExecutionFilter,
    available: Collection[str] | None = None,
) -> ExecutionPage:
    """One page of runs, newest first, without payloads."""
    where, args = where_clause(flt, available)
    with tolerant_text(conn):
        rows = conn.execute(
            f"SELECT {select_list(SUMMARY_COLUMNS, available)} FROM harvest_executions"
            f"{where} ORDER BY id DESC LIMIT ?",
            (*args, flt.page_size + 1),
        ).fetchall()
    page = [summary_from_row(row) for row in rows[: flt.page_size]]
    more = len(rows) > flt.page_size
    return ExecutionPage(
        executions=page, next=page[-1].cursor if more and page else None
    )


def visit_executions(
    conn: sqlite3.Connection,
    flt: ExecutionFilter,
    available: Collection[str] | None = None,
) -> Generator[ExecutionDetail, None, None]:
    """The rows `list_executions` would return, with payloads, one at a time.

    The caller holds a read transaction around the iteration, so every row
    comes from one snapshot.
    """
    where, args = where_clause(flt, available)
    with tolerant_text(conn):
        cursor = conn.execute(
            f"SELECT {select_list(DETAIL_COLUMNS, available)} FROM harvest_executions"
            f"{where} ORDER BY id DESC LIMIT ?",
            (*args, flt.page_size),
        )
        for row in cursor:
            yield detail_from_row(row)


def describe(
    conn: sqlite3.Connection, exec_id: str, available: Collection[str] | None = None
) -> ExecutionDetail | None:
    """One run with payloads, tolerant of damage and of older files."""
    with tolerant_text(conn), snapshot(conn):
        row = conn.execute(
            f"SELECT {select_list(DETAIL_COLUMNS, available)} FROM harvest_executions "
            "WHERE exec_id = ?",
            (exec_id,),
        ).fetchone()
    return None if row is None else detail_from_row(row)


def counts_by_state(conn: sqlite3.Connection) -> dict[str, int]:
    """How many runs are in each state; every known state is present, maybe with 0."""
    counts = dict.fromkeys(sorted(ALL_STATES), 0)
    with tolerant_text(conn):
        rows = conn.execute(
            "SELECT state, COUNT(*) FROM harvest_executions GROUP BY state"
        ).fetchall()
    for state, count in rows:
        counts[_text(state)] = int(count)
    return counts


def summary_from_row(row: tuple[Any, ...]) -> ExecutionSummary:
    """An ExecutionSummary from a row selected with `select_list(SUMMARY_COLUMNS)`."""
    return ExecutionSummary(**_summary_fields(row))


def detail_from_row(row: tuple[Any, ...]) -> ExecutionDetail:
    """An ExecutionDetail from a row selected with `select_list(DETAIL_COLUMNS)`."""
    return ExecutionDetail(
        **_summary_fields(row),
        input=stored_json(row[10]),
        output=stored_json(row[11]),
        error=stored_json(row[12]),
        parent_exec_id=_opt_id(row[13]),
        predecessor=_opt_id(row[14]),
        successor=_opt_id(row[15]),
        cancel_requested=_text(row[16]) if row[16] is not None else None,
        deadline=_time(row[17]),
    )


def _summary_fields(row: tuple[Any, ...]) -> dict[str, Any]:
    next_seq, last_seq, last_type = row[-3:]
    return {
        "damaged": verify.damage(row[4], next_seq, last_seq, last_type, row[1:4]),
        "cursor": row[0],
        "exec_id": _opt_id(row[1]) or ExecutionId("<unreadable>"),
        "workflow_name": _text(row[2]),
        "workflow_id": _text(row[3]),
        "state": _text(row[4]),
        "attempt": row[5] if isinstance(row[5], int) else 1,
        "started_at": _time(row[6]),
        "closed_at": _time(row[7]),
        "memo": stored_json(row[8]),
        "search_attributes": stored_object(row[9]),
    }


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return "" if value is None else str(value)


def _opt_id(value: Any) -> ExecutionId | None:
    text = _text(value).strip()
    return ExecutionId(text) if text else None


def _time(value: Any) -> datetime | None:
    if not isinstance(value, int):
        return None
    try:
        return from_micros(value)
    except OverflowError:
        return None
