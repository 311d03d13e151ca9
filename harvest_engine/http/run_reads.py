"""The read routes of runs: list (the ExecutionFilter as query parameters), describe, history, ...

Each handler is one read of the target and its JSON view; an unknown run is
`ExecutionNotFound` (404) from the read itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import InvalidFilter
from harvest_engine.filters import ExecutionFilter
from harvest_engine.http import views
from harvest_engine.http.table import Endpoint, Param
from harvest_engine.timestamps import from_text

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from harvest_engine.http.table import Call

_TIMES: tuple[tuple[str, str], ...] = (
    ("started_after", "started at or after this ISO-8601 time"),
    ("started_before", "started before this ISO-8601 time"),
    ("closed_after", "ended at or after this ISO-8601 time"),
    ("closed_before", "ended before this ISO-8601 time"),
)
_TEXTS: tuple[tuple[str, str], ...] = (
    ("workflow_name", "runs of this workflow"),
    ("workflow_id", "runs with exactly this workflow id"),
    ("workflow_id_prefix", "runs whose workflow id starts with this"),
    ("exec_id", "the run with this id"),
    ("parent", "the children of this run"),
)

FILTER_PARAMS: tuple[Param, ...] = (
    *(Param(name, "string", what) for name, what in _TEXTS),
    Param("state", "string", "runs in this state (repeat for any of several)", True),
    *(Param(name, "string", what) for name, what in _TIMES),
    Param(
        "attr",
        "string",
        "search attribute KEY=VALUE, the value as JSON or else text (repeatable)",
        True,
    ),
    Param("paused", "boolean", "true: only paused runs; false: only runs not paused"),
)
"""The ExecutionFilter as query parameters: what the list and the bulk routes select by."""

LIST_PARAMS: tuple[Param, ...] = (
    *FILTER_PARAMS,
    Param("limit", "integer", "rows per page, 1-1000 (default 100)"),
    Param("cursor", "integer", "continue from a previous page's `next`"),
)


def _integer(call: Call, name: str) -> int | None:
    text = call.one(name)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise InvalidFilter(reason=f"{name} is an integer, got {text!r}") from None


def _time(text: str, name: str) -> datetime:
    try:
        return from_text(text)
    except ValueError:
        raise InvalidFilter(
            reason=f"{name} is an ISO-8601 time, got {text!r}"
        ) from None


def _attr(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise InvalidFilter(reason=f"attr is KEY=VALUE, got {text!r}")
    try:
        return key, payloads.loads(raw)
    except ValueError:
        return key, raw


def _flag(call: Call, name: str) -> bool | None:
    text = call.one(name)
    if text is None:
        return None
    if text not in ("true", "false"):
        raise InvalidFilter(reason=f"{name} is true or false, got {text!r}")
    return text == "true"


def run_filter(call: Call) -> ExecutionFilter:
    """The filter of the query parameters, paging aside (InvalidFilter for a bad one, 422)."""
    flt = ExecutionFilter()
    setters: dict[str, Callable[[str], ExecutionFilter]] = {
        "workflow_name": lambda v: flt.workflow_name(v),
        "workflow_id": lambda v: flt.workflow_id(v),
        "workflow_id_prefix": lambda v: flt.workflow_id_prefix(v),
        "exec_id": lambda v: flt.exec_id(v),
        "parent": lambda v: flt.parent(v),
    }
    for name, set_ in setters.items():
        value = call.one(name)
        if value is not None:
            flt = set_(value)
    times = {
        "started_after": ExecutionFilter.started_after,
        "started_before": ExecutionFilter.started_before,
        "closed_after": ExecutionFilter.closed_after,
        "closed_before": ExecutionFilter.closed_before,
    }
    for name, set_time in times.items():
        text = call.one(name)
        if text is not None:
            flt = set_time(flt, _time(text, name))
    if call.query.get("state"):
        flt = flt.state(*call.query["state"])
    for text in call.query.get("attr", []):
        flt = flt.search_attribute(*_attr(text))
    paused = _flag(call, "paused")
    return flt if paused is None else flt.paused(paused)


def execution_filter(call: Call) -> ExecutionFilter:
    """The listing's filter: `run_filter` with the page's limit and cursor."""
    flt = run_filter(call)
    limit = _integer(call, "limit")
    if limit is not None:
        flt = flt.limit(limit)
    return flt.before(_integer(call, "cursor"))


async def list_runs(call: Call) -> Any:
    """A page of runs, newest first; `next` is the cursor of the following page."""
    return views.page(call.target.reads.list_executions(execution_filter(call)))


async def describe(call: Call) -> Any:
    """One run with its input, output and error."""
    return views.detail(call.target.reads.describe(call.exec_id))


async def history(call: Call) -> Any:
    """The run's events, in order (what `harvest history --json` prints)."""
    return {"events": views.plain(call.target.reads.load_history(call.exec_id))}


async def attempts(call: Call) -> Any:
    """Every finished activity attempt, a failed one with its error."""
    reads = call.target.reads
    reads.describe(call.exec_id)  # 404 for an unknown run, as every per-run read
    return views.plain(reads.activity_attempts(call.exec_id))


async def ledger(call: Call) -> Any:
    """The run's LLM calls and their totals."""
    reads = call.target.reads
    return {
        "calls": views.plain(reads.llm_ledger(call.exec_id)),
        "totals": views.plain(reads.llm_totals(call.exec_id)),
    }


async def logs(call: Call) -> Any:
    """The run's stored `ctx.log` lines."""
    return views.plain(call.target.logs(call.exec_id))


async def where_waiting(call: Call) -> Any:
    """What a running run is blocked on now (needs the workflow code)."""
    waits = call.target.where_waiting(call.exec_id)
    return [{**views.plain(w), "describe": w.describe()} for w in waits]


async def stack(call: Call) -> Any:
    """Where each of a running run's coroutines is suspended (needs the workflow code)."""
    return views.plain(call.target.stack(call.exec_id))


_RUN = "/runs/{exec_id}"

ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        "GET", "/runs", "List runs, newest first", list_runs, "runs", params=LIST_PARAMS
    ),
    Endpoint("GET", _RUN, "Describe a run", describe, "runs"),
    Endpoint("GET", f"{_RUN}/history", "A run's history", history, "runs"),
    Endpoint("GET", f"{_RUN}/attempts", "A run's activity attempts", attempts, "runs"),
    Endpoint("GET", f"{_RUN}/ledger", "A run's LLM cost ledger", ledger, "runs"),
    Endpoint("GET", f"{_RUN}/logs", "A run's workflow log lines", logs, "runs"),
    Endpoint(
        "GET", f"{_RUN}/where-waiting", "What a run waits on", where_waiting, "runs"
    ),
    Endpoint("GET", f"{_RUN}/stack", "A run's suspended coroutines", stack, "runs"),
)
