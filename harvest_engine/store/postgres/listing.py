"""List SQL of the Postgres store: ExecutionFilter to a WHERE clause, pages and counts.

The row converters are the SQLite store's (the same columns, followed by
what the damage check compares the row with: `select_list`); search
attributes are matched through jsonb, and a damaged attributes text reads as
an empty object (`harvest_json_object`), so one bad row never fails a page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.states import ALL_STATES
from harvest_engine.store.records import ExecutionDetail, ExecutionPage
from harvest_engine.store.sqlite.listing import (
    DETAIL_COLUMNS,
    SUMMARY_COLUMNS,
    detail_from_row,
    select_list,
    summary_from_row,
)
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from collections.abc import Iterator

    import psycopg

    from harvest_engine.filters import ExecutionFilter, SearchValue


def where_clause(flt: ExecutionFilter) -> tuple[str, list[Any]]:
    """The WHERE text and its parameters for a filter (its cursor included)."""
    clauses: list[str] = []
    args: list[Any] = []
    exact: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("workflow_name", flt.workflow_names),
        ("exec_id", flt.exec_ids),
        ("workflow_id", flt.workflow_ids),
        ("parent_exec_id", flt.parent_exec_ids),
    )
    for column, texts in exact:
        for text in texts:
            clauses.append(f"{column} = %s")
            args.append(text)
    for prefix in flt.workflow_id_prefixes:
        clauses.append("left(workflow_id, %s) = %s")
        args.extend([len(prefix), prefix])
    if flt.states:
        clauses.append("state = ANY(%s)")
        args.append(list(flt.states))
    if flt.started_from is not None:
        clauses.append("started_at >= %s")
        args.append(micros(flt.started_from))
    if flt.started_until is not None:
        clauses.append("started_at < %s")
        args.append(micros(flt.started_until))
    if flt.closed_from is not None:
        clauses.append("closed_at >= %s")
        args.append(micros(flt.closed_from))
    if flt.closed_until is not None:
        clauses.append("closed_at < %s")
        args.append(micros(flt.closed_until))
    for key, value in flt.search_attributes:
        clause, values = _search_clause(key, value)
        clauses.append(clause)
        args.extend(values)
    if flt.cursor is not None:
        clauses.append("id < %s")
        args.append(flt.cursor)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def _search_clause(key: str, value: SearchValue) -> tuple[str, list[Any]]:
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


def list_executions(
    conn: psycopg.Connection[tuple[Any, ...]], flt: ExecutionFilter
) -> ExecutionPage:
    """One page of runs, newest first, without payloads."""
    where, args = where_clause(flt)
    rows = conn.execute(
        f"SELECT {select_list(SUMMARY_COLUMNS, None)} FROM harvest_executions"
        f"{where} ORDER BY id DESC LIMIT %s",
        (*args, flt.page_size + 1),
    ).fetchall()
    page = [summary_from_row(row) for row in rows[: flt.page_size]]
    more = len(rows) > flt.page_size
    return ExecutionPage(
        executions=page, next=page[-1].cursor if more and page else None
    )


def visit_executions(
    conn: psycopg.Connection[tuple[Any, ...]], flt: ExecutionFilter
) -> Iterator[ExecutionDetail]:
    """The rows `list_executions` would return, with payloads (the caller holds the snapshot)."""
    where, args = where_clause(flt)
    rows = conn.execute(
        f"SELECT {select_list(DETAIL_COLUMNS, None)} FROM harvest_executions"
        f"{where} ORDER BY id DESC LIMIT %s",
        (*args, flt.page_size),
    ).fetchall()
    for row in rows:
        yield detail_from_row(row)


def counts_by_state(conn: psycopg.Connection[tuple[Any, ...]]) -> dict[str, int]:
    """How many runs are in each state; every known state is present, maybe with 0."""
    counts = dict.fromkeys(sorted(ALL_STATES), 0)
    for state, count in conn.execute(
        "SELECT state, COUNT(*) FROM harvest_executions GROUP BY state"
    ).fetchall():
        counts[str(state)] = int(count)
    return counts
