"""The values both stores write into a run's row and its attempt log, in column order.

The statements that write them stay each store's own (its hot write path);
what a NewExecution, an AttemptRecord or an update's fields become as
stored values is written once here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.errors import HarvestInternalError
from harvest_engine.timestamps import micros, opt_micros

if TYPE_CHECKING:
    from harvest_engine.store.rows import AttemptRecord, NewExecution
    from harvest_engine.store.sql.dialect import Dialect

TIME_COLUMNS = frozenset({"started_at", "closed_at", "deadline", "not_before"})
"""Columns of the run's row that hold a time (microseconds)."""

EXECUTION_FIELDS = frozenset(
    {
        "state",
        "attempt",
        "output",
        "error",
        "memo",
        "search_attributes",
        "successor",
        "closed_at",
        "deadline",
        "cancel_reason",
        "cancel_seq",
        "not_before",
        "needs_decision",
        "panic_count",
        "workflow_id",
        "pause_reason",
        "reset_from",
        "reset_to",
        "forked_from",
    }
)
"""Columns of the run's row an update may set."""


class Assignments:
    """`col = ?, ...` of an update of a run's row, in one dialect, by the tuple of names.

    A handful of column sets recur, so each text is built once and kept.
    """

    def __init__(self, dialect: Dialect) -> None:
        self._mark = dialect.mark
        self._texts: dict[tuple[str, ...], str] = {}

    def __call__(self, fields: dict[str, Any]) -> tuple[str, list[Any]]:
        """The SET text and the stored values of `fields`."""
        names = tuple(fields)
        sql = self._texts.get(names)
        if sql is None:
            unknown = set(fields) - EXECUTION_FIELDS
            if unknown:
                raise HarvestInternalError(
                    f"update_execution got unknown columns {sorted(unknown)}"
                )
            mark = self._mark
            sql = self._texts[names] = ", ".join(f"{k} = {mark}" for k in names)
        values = [opt_micros(v) if k in TIME_COLUMNS else v for k, v in fields.items()]
        return sql, values


def expedite_local_sql(dialect: Dialect) -> str:
    """Make a run's pending local activity tasks ready by now (build once, at import)."""
    return dialect.render(
        f"UPDATE harvest_tasks SET ready_at = {dialect.least}(ready_at, ?) "
        "WHERE exec_id = ? AND local = 1 AND status = 'PENDING'"
    )


def new_run_values(new: NewExecution, started_at: int) -> tuple[Any, ...]:
    """A new run's row from exec_id to not_before (the insert's order on both stores)."""
    return (
        new.exec_id,
        new.workflow_name,
        new.workflow_id,
        new.attempt,
        new.input,
        new.memo,
        new.search_attributes,
        new.parent_exec_id,
        new.parent_close_policy,
        new.predecessor,
        started_at,
        opt_micros(new.deadline),
        new.retry_policy,
        opt_micros(new.not_before),
    )


def attempt_values(attempt: AttemptRecord) -> tuple[Any, ...]:
    """An attempt log row from exec_id to error."""
    return (
        attempt.exec_id,
        attempt.activity_id,
        attempt.activity_name,
        attempt.attempt,
        micros(attempt.started_at),
        micros(attempt.ended_at),
        attempt.outcome,
        attempt.error,
    )
