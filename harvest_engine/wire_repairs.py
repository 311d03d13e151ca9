"""The client commands that repair and steer runs (reset, fork, pause, the bulk calls), and a filter as JSON.

Records as in wire.py (which lists them among every command kind); a bulk
command carries its `ExecutionFilter` as the JSON object `filter_json` makes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from harvest_engine.filters import ExecutionFilter
from harvest_engine.timestamps import from_text, to_text
from harvest_engine.wire_base import Command, ReturnsExecId

_TEXTS = (
    "workflow_names",
    "exec_ids",
    "workflow_ids",
    "workflow_id_prefixes",
    "states",
    "parent_exec_ids",
)
_TIMES = ("started_from", "started_until", "closed_from", "closed_until")


def filter_json(flt: ExecutionFilter) -> dict[str, Any]:
    """A filter as a JSON object (its page size and cursor left out: a bulk call pages itself)."""
    if not isinstance(flt, ExecutionFilter):
        raise TypeError(f"a bulk call takes an ExecutionFilter, got {flt!r}")
    data: dict[str, Any] = {name: list(getattr(flt, name)) for name in _TEXTS}
    for name in _TIMES:
        when = getattr(flt, name)
        data[name] = None if when is None else to_text(when)
    data["search_attributes"] = [list(pair) for pair in flt.search_attributes]
    data["paused"] = flt.paused_flag
    return data


def filter_from_json(data: Any) -> ExecutionFilter:
    """The filter `filter_json` wrote; TypeError / ValueError for a malformed one."""
    if not isinstance(data, dict):
        raise TypeError(f"a filter is a JSON object, got {data!r}")
    flt = ExecutionFilter()
    values: dict[str, Any] = {}
    for name in _TEXTS:
        texts = data.get(name) or []
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise TypeError(f"filter field {name} is a list of text, got {texts!r}")
        values[name] = tuple(texts)
    for name in _TIMES:
        when = data.get(name)
        values[name] = None if when is None else from_text(str(when))
    flt = replace(flt, **values)
    for key, value in data.get("search_attributes") or []:
        flt = flt.search_attribute(str(key), value)
    paused = data.get("paused")
    return flt if paused is None else flt.paused(bool(paused))


@dataclass(frozen=True)
class Reset(ReturnsExecId):
    """`reset`: the new run's id."""

    KIND = "reset"
    exec_id: str
    reason: str
    to_event: int | None = None


@dataclass(frozen=True)
class Fork(ReturnsExecId):
    """`fork`: the new run's id."""

    KIND = "fork"
    exec_id: str
    from_step: int
    workflow_id: str | None = None


@dataclass(frozen=True)
class Pause(Command):
    """`pause`."""

    KIND = "pause"
    exec_id: str
    reason: str = ""


@dataclass(frozen=True)
class Unpause(Command):
    """`unpause`."""

    KIND = "unpause"
    exec_id: str


@dataclass(frozen=True)
class CancelMany(Command):
    """`cancel_many`: how many runs."""

    KIND = "cancel_many"
    filter: dict[str, Any]
    reason: str = ""


@dataclass(frozen=True)
class TerminateMany(Command):
    """`terminate_many`: how many runs."""

    KIND = "terminate_many"
    filter: dict[str, Any]
    reason: str = ""


@dataclass(frozen=True)
class SignalMany(Command):
    """`signal_many`: how many runs."""

    KIND = "signal_many"
    filter: dict[str, Any]
    name: str
    payload: Any = None


@dataclass(frozen=True)
class ResetMany(Command):
    """`reset_many`: how many runs."""

    KIND = "reset_many"
    filter: dict[str, Any]
    reason: str = ""


@dataclass(frozen=True)
class PauseMany(Command):
    """`pause_many`: how many runs."""

    KIND = "pause_many"
    filter: dict[str, Any]
    reason: str = ""


@dataclass(frozen=True)
class UnpauseMany(Command):
    """`unpause_many`: how many runs."""

    KIND = "unpause_many"
    filter: dict[str, Any]


REPAIR_COMMANDS: tuple[type[Command], ...] = (
    Reset,
    Fork,
    Pause,
    Unpause,
    CancelMany,
    TerminateMany,
    SignalMany,
    ResetMany,
    PauseMany,
    UnpauseMany,
)
"""The records of this module (wire.COMMANDS lists them with the others)."""
