"""How the `harvest` commands turn read records into table cells and JSON objects."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.timestamps import to_text

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.store.records import ExecutionDetail, ExecutionSummary, Stored


def when(value: datetime | None) -> str:
    """A time for a table cell: ``YYYY-MM-DD HH:MM:SS``, or ``-``."""
    return "-" if value is None else to_text(value).replace("T", " ")[:19]


def state_cell(run: ExecutionSummary) -> str:
    """A listed run's state for a table: a damaged or paused run says so."""
    if run.damaged is not None:
        return f"{run.state} (damaged)"
    return f"{run.state} (paused)" if run.paused else run.state


def iso(value: datetime | None) -> str | None:
    """A time for JSON: ISO-8601 text, or null."""
    return None if value is None else to_text(value)


def stored(value: Stored) -> Any:
    """A listed payload for JSON: its value, or ``{"unreadable": reason}``."""
    if value.is_unreadable:
        return {"unreadable": getattr(value, "reason", "")}
    return value.value


def short(value: Any, width: int = 40) -> str:
    """A value as one cell of at most `width` characters."""
    text = payloads.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= width else text[: width - 1] + "…"


def summary_json(run: ExecutionSummary) -> dict[str, Any]:
    """A listed run as a JSON object."""
    return {
        "exec_id": str(run.exec_id),
        "workflow_name": run.workflow_name,
        "workflow_id": run.workflow_id,
        "state": run.state,
        "attempt": run.attempt,
        "started_at": iso(run.started_at),
        "closed_at": iso(run.closed_at),
        "memo": stored(run.memo),
        "search_attributes": stored(run.search_attributes),
        "damaged": run.damaged,
        "summary": run.summary,
        "paused": run.paused,
    }


def detail_json(run: ExecutionDetail) -> dict[str, Any]:
    """A described run as a JSON object, payloads included."""
    data = summary_json(run)
    data.update(
        input=stored(run.input),
        output=stored(run.output),
        error=stored(run.error),
        parent_exec_id=None if run.parent_exec_id is None else str(run.parent_exec_id),
        predecessor=None if run.predecessor is None else str(run.predecessor),
        successor=None if run.successor is None else str(run.successor),
        cancel_requested=run.cancel_requested,
        deadline=iso(run.deadline),
        details=run.details,
        current_details=run.current_details,
        pause_reason=run.pause_reason,
        reset_from=None if run.reset_from is None else str(run.reset_from),
        reset_to=None if run.reset_to is None else str(run.reset_to),
        forked_from=None if run.forked_from is None else str(run.forked_from),
    )
    return data
