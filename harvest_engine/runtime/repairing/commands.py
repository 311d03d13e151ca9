"""The repair commands a client queues (wire_repairs.py), applied as an in-process caller makes them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import wire_repairs as w
from harvest_engine.runtime.repairing import bulk, pausing, restarts

if TYPE_CHECKING:
    from harvest_engine.runtime.engine import Engine
    from harvest_engine.wire_base import Command


def run(engine: Engine, record: Command) -> Any:  # noqa: PLR0911 - one return per kind
    """The runtime call a repair command record asks for."""
    match record:
        case w.Reset():
            return restarts.reset(
                engine, record.exec_id, record.to_event, record.reason
            )
        case w.Fork():
            return restarts.fork(
                engine, record.exec_id, record.from_step, record.workflow_id
            )
        case w.Pause():
            return pausing.pause(engine, record.exec_id, record.reason)
        case w.Unpause():
            return pausing.unpause(engine, record.exec_id)
        case w.CancelMany():
            flt = w.filter_from_json(record.filter)
            return bulk.cancel_many(engine, flt, record.reason)
        case w.TerminateMany():
            flt = w.filter_from_json(record.filter)
            return bulk.terminate_many(engine, flt, record.reason)
        case w.SignalMany():
            flt = w.filter_from_json(record.filter)
            return bulk.signal_many(engine, flt, record.name, record.payload)
        case w.ResetMany():
            return bulk.reset_many(
                engine, w.filter_from_json(record.filter), record.reason
            )
        case w.PauseMany():
            return bulk.pause_many(
                engine, w.filter_from_json(record.filter), record.reason
            )
        case w.UnpauseMany():
            return bulk.unpause_many(engine, w.filter_from_json(record.filter))
    raise ValueError(f"unknown repair command {record.KIND!r}")
