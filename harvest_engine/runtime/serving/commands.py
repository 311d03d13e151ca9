"""Applying client commands in the serving process: each exactly once, effect and reply together.

A client in another process queues a row (kind, JSON args). The serving
loop applies pending rows in arrival order; each command runs the same
runtime call an in-process caller would make, inside one transaction that
also writes the reply row, so a kill -9 of either side never applies a
command twice or loses it. The call's own writes join
that transaction as savepoints: a command that raises rolls back its
changes and commits only the reply carrying its typed error.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.runtime import wire
from harvest_engine.runtime.operating import operate
from harvest_engine.runtime.talking import queries, talk, updates
from harvest_engine.runtime.talking import update_with_start as uws
from harvest_engine.runtime.talking.signal_with_start import SignalWithStart
from harvest_engine.runtime.talking.starts import StartOptions, WorkflowIdReusePolicy

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.runtime.engine import Engine
    from harvest_engine.store.rows import CommandRecord

# Commands applied per round, so a flood of commands still lets runs move.
APPLY_BATCH = 64

# Applied commands are kept this long (a late client can still read its
# reply), then purged by the serving loop (`purge_applied`, at most every
# PURGE_EVERY seconds, off a command's path); a purge of their run takes
# them too.
APPLIED_RETENTION = timedelta(days=1)
PURGE_BATCH = 256
PURGE_EVERY = 60.0


def apply_pending(engine: Engine) -> int:
    """Apply up to APPLY_BATCH queued commands in arrival order; how many were taken."""
    pending = engine.store.pending_commands(APPLY_BATCH)
    for command in pending:
        apply_one(engine, command)
    return len(pending)


def purge_applied(engine: Engine) -> int:
    """Delete up to PURGE_BATCH commands applied more than APPLIED_RETENTION ago; how many."""
    cutoff = engine.clock.now() - APPLIED_RETENTION
    with engine.store.write() as txn:
        return txn.purge_applied_commands(cutoff, PURGE_BATCH)


def apply_one(engine: Engine, command: CommandRecord) -> None:
    """Run one command and write its reply in the same transaction.

    A storage failure propagates and rolls everything back: the command
    stays queued and is applied by a later round.
    """
    with engine.store.write_together() as txn:
        if not txn.claim_command(command.id):
            return  # applied meanwhile, or another serving worker is applying it
        args: dict[str, Any] = {}
        try:
            loaded = payloads.loads(command.args)
            if not isinstance(loaded, dict):
                raise TypeError(f"command arguments are a JSON object, got {loaded!r}")
            args = loaded
            handler = HANDLERS.get(command.kind)
            if handler is None:
                raise ValueError(f"unknown client command {command.kind!r}")
            value = handler(engine, args)
            reply = wire.ok_reply(command.kind, value)
            touched = _touched(value, args)
        except engine.store.storage_errors:
            raise
        except Exception as exc:  # noqa: BLE001 - every other failure is the command's reply
            reply = wire.error_reply(exc)
            touched = _text(args.get("exec_id")) or _text(getattr(exc, "exec_id", None))
        txn.finish_command(command.id, reply, touched, engine.clock.now())


def _touched(value: Any, args: dict[str, Any]) -> str | None:
    """The run a command touched (for the purge): its result's run, or the one it named."""
    exec_id = getattr(value, "exec_id", None) if value is not None else None
    if exec_id is None and type(value).__name__ == "ExecutionId":
        exec_id = value
    return _text(exec_id) or _text(args.get("exec_id"))


def _text(value: Any) -> str | None:
    return str(value) if value is not None and str(value).strip() else None


def _policy(args: dict[str, Any]) -> WorkflowIdReusePolicy:
    return WorkflowIdReusePolicy.coerce(args.get("reuse_policy", "ALLOW_DUPLICATE"))


def _query(engine: Engine, a: dict[str, Any]) -> Any:
    snapshot = queries.take_snapshot(engine, engine.require(a["exec_id"]))
    return queries.answer(snapshot, engine.clock, a["name"], a.get("arg"))


def _handlers() -> dict[str, Callable[[Engine, dict[str, Any]], Any]]:
    return {
        "start_workflow": lambda engine, a: talk.start_workflow(
            engine, a["name"], a.get("input")
        ),
        "start_workflow_with_id": lambda engine, a: talk.start_workflow_with_id(
            engine, a["name"], a["workflow_id"], a.get("input")
        ),
        "start_workflow_with_reuse_policy": lambda engine, a: (
            talk.start_workflow_with_reuse_policy(
                engine, a["name"], a["workflow_id"], a.get("input"), _policy(a)
            )
        ),
        "start_workflow_with_options": lambda engine, a: (
            talk.start_workflow_with_options(
                engine,
                a["name"],
                a.get("input"),
                StartOptions(
                    workflow_id=a.get("workflow_id"),
                    memo=a.get("memo"),
                    search_attributes=a.get("search_attributes") or {},
                    reuse_policy=_policy(a),
                ),
            )
        ),
        "signal_with_start": lambda engine, a: talk.signal_with_start(
            engine,
            SignalWithStart(
                workflow_name=a["workflow_name"],
                workflow_id=a["workflow_id"],
                input=a.get("input"),
                reuse_policy=_policy(a),
                signal_name=a["signal_name"],
                signal_payload=a.get("signal_payload"),
                idempotency_key=a.get("idempotency_key"),
            ),
        ),
        "send_signal": lambda engine, a: talk.send_signal(
            engine, a["exec_id"], a["name"], a.get("payload")
        ),
        "send_signal_idempotent": lambda engine, a: talk.send_signal_idempotent(
            engine, a["exec_id"], a["name"], a.get("payload"), a.get("key")
        ),
        "send_signal_by_workflow_id": lambda engine, a: talk.send_signal_by_workflow_id(
            engine,
            a["workflow_name"],
            a["workflow_id"],
            a["name"],
            a.get("payload"),
            a.get("key"),
        ),
        "cancel": lambda engine, a: operate.cancel(
            engine, a["exec_id"], a.get("reason") or ""
        ),
        "terminate": lambda engine, a: operate.terminate(
            engine, a["exec_id"], a.get("reason") or ""
        ),
        "query": _query,
        "update": lambda engine, a: updates.run_update(
            engine, engine.require(a["exec_id"]), a["name"], a.get("arg")
        ),
        "update_with_start": lambda engine, a: uws.update_with_start(
            engine,
            uws.UpdateWithStart(
                workflow_name=a["workflow_name"],
                workflow_id=a["workflow_id"],
                input=a.get("input"),
                update_name=a["update_name"],
                update_arg=a.get("update_arg"),
                reuse_policy=_policy(a),
            ),
        ),
    }


HANDLERS = _handlers()
