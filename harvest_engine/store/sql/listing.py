"""Listing runs on either store: a filter to a WHERE clause, pages newest first, counts.

One bad row never fails a page: damaged values read as `Stored.Unreadable`,
and a row whose history disagrees with it is kept and flagged
(`ExecutionSummary.damaged`, sql/verify.py). A column an older SQLite file
lacks is selected as NULL (`available`). Search attributes are matched by
each database's JSON functions (JSON1 or jsonb); the rest is one text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.states import ALL_STATES, ExecutionId
from harvest_engine.store.records import (
    ExecutionDetail,
    ExecutionPage,
    ExecutionSummary,
)
from harvest_engine.store.sql.columns import stored_json, stored_object
from harvest_engine.store.sql.verify import LAST_EVENT_COLUMNS, damage
from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Generator
    from datetime import datetime

    from harvest_engine.filters import ExecutionFilter, SearchValue
    from harvest_engine.store.sql.dialect import Dialect
    from harvest_engine.store.sql.executes import Executes

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
    "summary",
    "pause_reason",
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
    "details",
    "current_details",
    "reset_from",
    "reset_to",
    "forked_from",
)


def select_list(names: tuple[str, ...], available: Collection[str] | None) -> str:
    """The SELECT list of `names`, then what `damage` needs; a missing column reads as NULL."""
    if available is None:
        chosen = list(names)
    else:
        chosen = [n if n in available else f"NULL AS {n}" for n in names]
    return ", ".join([*chosen, *LAST_EVENT_COLUMNS])


def where_clause(
    flt: ExecutionFilter, dialect: Dialect, available: Collection[str] | None = None
) -> tuple[str, list[Any]]:
    """The WHERE text and its parameters for a filter (its cursor included)."""
    clauses: list[str] = []
    args: list[Any] = []
    mark = dialect.mark

    def has(column: str) -> bool:
        return available is None or column in available

    def compare(column: str, op: str, value: Any) -> None:
        # A file older than the column has no run that could match.
        clauses.append(f"{column} {op} {mark}" if has(column) else "0 = 1")
        args.extend([value] if has(column) else [])

    exact: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("workflow_name", flt.workflow_names),
        ("exec_id", flt.exec_ids),
        ("workflow_id", flt.workflow_ids),
        ("parent_exec_id", flt.parent_exec_ids),
    )
    for column, texts in exact:
        for text in texts:
            compare(column, "=", text)
    for prefix in flt.workflow_id_prefixes:
        # a prefix function, not LIKE: a prefix may hold % or _, and LIKE folds case.
        clauses.append(
            dialect.prefix.format(column="workflow_id", n=mark) + f" = {mark}"
        )
        args.extend([len(prefix), prefix])
    if flt.states:
        text, values = dialect.in_list(list(flt.states))
        clauses.append(f"state {text}")
        args.extend(values)
    # A run written before started_at existed has none: no time filter matches it.
    for column, op, when in (
        ("started_at", ">=", flt.started_from),
        ("started_at", "<", flt.started_until),
        ("closed_at", ">=", flt.closed_from),
        ("closed_at", "<", flt.closed_until),
    ):
        if when is not None:
            compare(column, op, micros(when))
    search = _SEARCH[dialect.name]
    for key, value in flt.search_attributes:
        if not has("search_attributes"):
            clauses.append("0 = 1")
            continue
        clause, values = search(key, value)
        clauses.append(clause)
        args.extend(values)
    if flt.paused_flag is not None:
        if has("pause_reason"):
            clauses.append(
                "(pause_reason IS NOT NULL AND state = 'RUNNING')"
                if flt.paused_flag
                else "(pause_reason IS NULL OR state <> 'RUNNING')"
            )
        elif flt.paused_flag:
            clauses.append("0 = 1")  # a file older than pausing has no paused run
    if flt.cursor is not None:
        clauses.append(f"id < {mark}")
        args.append(flt.cursor)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def _sqlite_search(key: str, value: SearchValue) -> tuple[str, list[Any]]:
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


def _postgres_search(key: str, value: SearchValue) -> tuple[str, list[Any]]:
    # A damaged attributes text reads as an empty object (harvest_json_object).
    attr = "(harvest_json_object(search_attributes) -> %s)"
    if value is None:
        return f"jsonb_typeof{attr} = 'null'", [key]
    if isinstance(value, bool):
        return f"{attr} = %s::jsonb", [key, "true" if value else "false"]
    if isinstance(value, str):
        return f"(jsonb_typeof{attr} = 'string' AND {attr} #>> '{{}}' = %s)", [
            key,
            key,
            value,
        ]
    # A number matches by value, so 1 matches 1.0 (guide §8), as on SQLite.
    return (
        f"(jsonb_typeof{attr} = 'number' AND ({attr} #>> '{{}}')::numeric = %s)",
        [key, key, value],
    )


_SEARCH: dict[str, Callable[[str, SearchValue], tuple[str, list[Any]]]] = {
    "sqlite": _sqlite_search,
    "postgres": _postgres_search,
}


def runs_table(
    flt: ExecutionFilter, dialect: Dialect, available: Collection[str] | None = None
) -> str:
    """The table a listing reads, with SQLite's hint to the paused runs' index when asked for them.

    Paused runs are few, but SQLite's planner prefers the state index (every
    RUNNING run) to the partial index of paused ones: 130 ms on a million runs
    instead of 0.04 ms, each time the inspector counts its PAUSED box.
    """
    wants_paused = flt.paused_flag and (
        available is None or "pause_reason" in available
    )
    if not wants_paused:
        return "harvest_executions"
    return "harvest_executions" + dialect.indexed_by.format(
        index="harvest_executions_paused"
    )


def list_executions(
    conn: Executes,
    dialect: Dialect,
    flt: ExecutionFilter,
    available: Collection[str] | None = None,
) -> ExecutionPage:
    """One page of runs, newest first, without payloads."""
    where, args = where_clause(flt, dialect, available)
    with dialect.tolerant(conn):
        rows = conn.execute(
            f"SELECT {select_list(SUMMARY_COLUMNS, available)} "
            f"FROM {runs_table(flt, dialect, available)}"
            f"{where} ORDER BY id DESC LIMIT {dialect.mark}",
            (*args, flt.page_size + 1),
        ).fetchall()
    page = [summary_from_row(row) for row in rows[: flt.page_size]]
    more = len(rows) > flt.page_size
    return ExecutionPage(
        executions=page, next=page[-1].cursor if more and page else None
    )


def visit_executions(
    conn: Executes,
    dialect: Dialect,
    flt: ExecutionFilter,
    available: Collection[str] | None = None,
) -> Generator[ExecutionDetail, None, None]:
    """The rows `list_executions` would return, with payloads, one at a time.

    The caller holds a read transaction around the iteration, so every row
    comes from one snapshot.
    """
    where, args = where_clause(flt, dialect, available)
    with dialect.tolerant(conn):
        cursor = conn.execute(
            f"SELECT {select_list(DETAIL_COLUMNS, available)} "
            f"FROM {runs_table(flt, dialect, available)}"
            f"{where} ORDER BY id DESC LIMIT {dialect.mark}",
            (*args, flt.page_size),
        )
        for row in cursor:
            yield detail_from_row(row)


def describe_sql(dialect: Dialect, available: Collection[str] | None = None) -> str:
    """The statement of one run's row as `detail_from_row` reads it."""
    return (
        f"SELECT {select_list(DETAIL_COLUMNS, available)} FROM harvest_executions "
        f"WHERE exec_id = {dialect.mark}"
    )


def counts_by_state(conn: Executes, dialect: Dialect) -> dict[str, int]:
    """How many runs are in each state; every known state is present, maybe with 0."""
    counts = dict.fromkeys(sorted(ALL_STATES), 0)
    with dialect.tolerant(conn):
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
        pause_reason=_text(row[11])
        if row[11] is not None and row[4] == "RUNNING"
        else None,
        input=stored_json(row[12]),
        output=stored_json(row[13]),
        error=stored_json(row[14]),
        parent_exec_id=_opt_id(row[15]),
        predecessor=_opt_id(row[16]),
        successor=_opt_id(row[17]),
        cancel_requested=_text(row[18]) if row[18] is not None else None,
        deadline=_time(row[19]),
        details=_opt_text(row[20]),
        current_details=_opt_text(row[21]),
        reset_from=_opt_id(row[22]),
        reset_to=_opt_id(row[23]),
        forked_from=_opt_id(row[24]),
    )


def _summary_fields(row: tuple[Any, ...]) -> dict[str, Any]:
    next_seq, last_seq, last_type = row[-3:]
    return {
        "damaged": damage(row[4], next_seq, last_seq, last_type, row[1:4]),
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
        "summary": _opt_text(row[10]),
        "paused": row[11] is not None and row[4] == "RUNNING",
    }


def _opt_text(value: Any) -> str | None:
    return None if value is None else _text(value)


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
