"""The schedule routes: list, upsert, delete, pause, resume, trigger, backfill.

A schedule is keyed by its workflow's name; a switch (pause, resume,
delete) of a name with no schedule is `ScheduleNotFound` (404), as trigger
and backfill raise it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.errors import ScheduleNotFound
from harvest_engine.http import views
from harvest_engine.http.table import Endpoint, Field
from harvest_engine.schedules import Schedule, WorkflowSchedule
from harvest_engine.timestamps import from_text

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.http.table import Call

_SPEC: dict[str, Any] = {
    "type": "object",
    "description": '{"cron": "0 3 * * *", "timezone": "UTC"} or {"every": "15m"}',
}


async def list_schedules(call: Call) -> Any:
    """Every stored schedule, by workflow name."""
    return views.plain(call.target.reads.list_schedules())


async def upsert(call: Call) -> Any:
    """Store the schedule of a workflow (the same spec keeps its slot and pause)."""
    body = dict(call.body)
    spec = Schedule.from_json(body.pop("schedule"))
    schedule = WorkflowSchedule(call.path["workflow_name"], spec, **body)
    return views.plain(await call.target.upsert_schedule(schedule))


async def _switch(call: Call, action: str) -> Any:
    name = call.path["workflow_name"]
    if not await call.target.schedule_switch(action, name):
        raise ScheduleNotFound(workflow_name=name)
    return {"workflow_name": name, action: True}


async def delete(call: Call) -> Any:
    """Remove a schedule (its runs keep running)."""
    return await _switch(call, "delete")


async def pause(call: Call) -> Any:
    """Stop a schedule's fires."""
    return await _switch(call, "pause")


async def resume(call: Call) -> Any:
    """Fire again from the next slot after now."""
    return await _switch(call, "resume")


async def trigger(call: Call) -> Any:
    """Start one run now; `exec_id` null when the overlap policy skips it."""
    found = await call.target.trigger_schedule(call.path["workflow_name"])
    return {"exec_id": None if found is None else str(found)}


def _when(call: Call, name: str) -> datetime:
    text = call.body[name]
    try:
        return from_text(text)
    except ValueError:
        raise ValueError(f"{name} is an ISO-8601 time, got {text!r}") from None


async def backfill(call: Call) -> Any:
    """Start a run for each slot from `start` to `end` (both included), oldest first."""
    found = await call.target.backfill_schedule(
        call.path["workflow_name"], _when(call, "start"), _when(call, "end")
    )
    return {"exec_ids": [str(e) for e in found]}


_ONE = "/schedules/{workflow_name}"
_TIME = {"type": "string", "format": "date-time"}

ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", "/schedules", "List schedules", list_schedules, "schedules"),
    Endpoint(
        "PUT",
        _ONE,
        "Store a workflow's schedule",
        upsert,
        "schedules",
        write=True,
        body=(
            Field("schedule", _SPEC, "when it fires", required=True),
            Field("input", {}, "the input of each run"),
            Field(
                "max_active_runs",
                {"type": "integer"},
                "RUNNING runs a skip schedule tolerates",
            ),
            Field(
                "overlap",
                {"type": "string", "enum": ["skip", "allow_all"]},
                "what a slot does while runs are active",
            ),
        ),
    ),
    Endpoint("DELETE", _ONE, "Delete a schedule", delete, "schedules", write=True),
    Endpoint(
        "POST", f"{_ONE}/pause", "Pause a schedule", pause, "schedules", write=True
    ),
    Endpoint(
        "POST", f"{_ONE}/resume", "Resume a schedule", resume, "schedules", write=True
    ),
    Endpoint(
        "POST",
        f"{_ONE}/trigger",
        "Fire a schedule now",
        trigger,
        "schedules",
        write=True,
    ),
    Endpoint(
        "POST",
        f"{_ONE}/backfill",
        "Start the runs of past slots",
        backfill,
        "schedules",
        write=True,
        body=(
            Field("start", _TIME, "the first slot (ISO-8601)", required=True),
            Field("end", _TIME, "the last slot (ISO-8601)", required=True),
        ),
    ),
)
