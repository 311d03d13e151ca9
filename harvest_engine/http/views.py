"""The JSON an HTTP response holds for the engine's records (runs, attempts, waits, schedules, ...).

A listed or described run is what `harvest runs --json` / `harvest show
--json` print (cli/render.py), so the command line and the API agree; every
other record converts field by field (`plain`).
"""

from __future__ import annotations

import dataclasses
import enum
from datetime import datetime
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from harvest_engine import payloads
from harvest_engine.cli.render import detail_json, summary_json
from harvest_engine.events import HistoryEvent
from harvest_engine.schedules import Schedule
from harvest_engine.states import ErrorInfo, ExecutionId
from harvest_engine.store.records import Stored
from harvest_engine.timestamps import to_text

if TYPE_CHECKING:
    from harvest_engine.store.records import ExecutionDetail, ExecutionPage

__all__ = ["detail", "json_response", "page", "plain"]

JSON = "application/json"


def json_response(
    value: Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """A JSON document (canonical encoding: sorted keys, compact)."""
    return Response(payloads.dumpb(value), status, headers, media_type=JSON)


def plain(value: Any) -> Any:
    """A record as JSON: dataclasses field by field, times as ISO-8601 text, ids as text.

    A payload read from the store (`Stored`) is its value, or
    ``{"unreadable": reason}`` for a damaged one.
    """
    if isinstance(value, Stored):
        if value.is_unreadable:
            return {"unreadable": getattr(value, "reason", "")}
        return plain(value.value)
    if isinstance(value, (ExecutionId, enum.Enum)):
        return str(value.value if isinstance(value, enum.Enum) else value)
    if isinstance(value, datetime):
        return to_text(value)
    if isinstance(value, (ErrorInfo, Schedule)):
        return value.to_json()
    if isinstance(value, HistoryEvent):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)
        }
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def page(found: ExecutionPage) -> dict[str, Any]:
    """A page of runs: ``{"executions": [...], "next": cursor or null}``."""
    return {
        "executions": [summary_json(r) for r in found.executions],
        "next": found.next,
    }


def detail(run: ExecutionDetail) -> dict[str, Any]:
    """A described run, payloads included (as `harvest show --json`)."""
    return detail_json(run)
