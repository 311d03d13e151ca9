"""The routes that repair and steer runs: reset, fork, pause, unpause, and the bulk forms by filter.

A bulk route (``POST /runs:cancel`` and the like) takes the list's
`ExecutionFilter` as query parameters and answers ``{"count": n}``, the runs
it changed. It needs at least one filter parameter: an empty filter matches
every run of the store, which an HTTP call should not do by a missing
parameter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.errors import InvalidFilter
from harvest_engine.http.run_reads import FILTER_PARAMS, run_filter
from harvest_engine.http.table import Endpoint, Field

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from harvest_engine.http.table import Call

_TEXT: dict[str, Any] = {"type": "string"}
_INT: dict[str, Any] = {"type": "integer"}
_RUN = "/runs/{exec_id}"


async def reset(call: Call) -> Any:
    """Start the run again from a decision boundary with today's code; the new run's id."""
    new = await call.target.reset(
        call.exec_id, call.body.get("to_event"), call.body["reason"]
    )
    return {"exec_id": str(new), "reset_from": call.exec_id}


async def fork(call: Call) -> Any:
    """A new run keeping the results of the steps before `from_step`; its id."""
    new = await call.target.fork(
        call.exec_id, call.body["from_step"], call.body.get("workflow_id")
    )
    return {"exec_id": str(new), "forked_from": call.exec_id}


async def pause(call: Call) -> Any:
    """Stop the run deciding and starting attempts until it is unpaused."""
    await call.target.pause(call.exec_id, call.body.get("reason", ""))
    return {"exec_id": call.exec_id, "paused": True}


async def unpause(call: Call) -> Any:
    """Let a paused run go on."""
    await call.target.unpause(call.exec_id)
    return {"exec_id": call.exec_id, "paused": False}


def _bulk(action: str) -> Callable[[Call], Awaitable[Any]]:
    async def bulk(call: Call) -> Any:
        if not call.query:
            raise InvalidFilter(
                reason=f"a bulk {action} names at least one filter parameter "
                "(state=RUNNING selects every running run)"
            )
        signal = (call.body.get("name", ""), call.body.get("payload"))
        count = await call.target.many(
            action, run_filter(call), call.body.get("reason", ""), signal
        )
        return {"count": count}

    bulk.__name__ = bulk.__qualname__ = f"{action}_many"
    bulk.__doc__ = (
        f"`{action}_many` over the runs the filter matches; how many it changed."
    )
    return bulk


_REASON = Field("reason", _TEXT, "why, kept with each run")
_BULK_BODIES: dict[str, tuple[Field, ...]] = {
    "cancel": (_REASON,),
    "terminate": (_REASON,),
    "signal": (
        Field("name", _TEXT, "the signal's name", required=True),
        Field("payload", {}, "the signal's payload"),
    ),
    "reset": (Field("reason", _TEXT, "why, kept with each run", required=True),),
    "pause": (_REASON,),
    "unpause": (),
}

ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        "POST",
        f"{_RUN}/reset",
        "Reset a run to a decision boundary",
        reset,
        "repair",
        write=True,
        body=(
            Field(
                "to_event",
                _INT,
                "the history event seq to reset to (default: before the last failed activity)",
            ),
            Field("reason", _TEXT, "why, kept with both runs", required=True),
        ),
        status=201,
    ),
    Endpoint(
        "POST",
        f"{_RUN}/fork",
        "Fork a run from an activity step",
        fork,
        "repair",
        write=True,
        body=(
            Field("from_step", _INT, "the first step to run again (1-based)", True),
            Field("workflow_id", _TEXT, "the new run's workflow id"),
        ),
        status=201,
    ),
    Endpoint(
        "POST",
        f"{_RUN}/pause",
        "Pause a run",
        pause,
        "repair",
        write=True,
        body=(Field("reason", _TEXT, "why, shown with the run"),),
    ),
    Endpoint("POST", f"{_RUN}/unpause", "Unpause a run", unpause, "repair", write=True),
    *(
        Endpoint(
            "POST",
            f"/runs:{action}",
            f"{action.capitalize()} every run the filter matches",
            _bulk(action),
            "repair",
            write=True,
            params=FILTER_PARAMS,
            body=body,
        )
        for action, body in _BULK_BODIES.items()
    ),
)
