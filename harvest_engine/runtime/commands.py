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
from harvest_engine.runtime import queries, updates, wire
from harvest_engine.runtime import update_with_start as uws
from harvest_engine.runtime.signal_with_start import SignalWithStart
from harvest_engine.runtime.starts import StartOptions, WorkflowIdReusePolicy

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.runtime.runtime import SqliteRuntime
    from harvest_engine.store.rows import CommandRecord

# Commands applied per round, so a flood of commands still lets runs move.
APPLY_BATCH = 64

# Applied commands are kept this long (a late client can still read its
# reply), then purged by the serving loop (`purge_applied`, at most every
# PURGE_EVERY seconds, off a command's path); a purge of their run takes
# them too.
APPLIED_RETENTION = timedelta(days=1)
# A refused command (its reply an error) changed nothing: its client removes
# it once it read the reply, and the purge takes any left (its client died)
# after this long instead of a day.
REFUSED_RETENTION = timedelta(minutes=1)
PURGE_BATCH = 256
PURGE_EVERY = 60.0


# A serving process records a heartbeat this often (seconds), off the
# commands' path: the lock file's mtime on SQLite (no commit), a harvest_meta
# row on Postgres. A client whose command finds no beat
# younger than client/waits.py's SERVED_WITHIN raises NotServed instead of
# waiting out its timeout.
HEARTBEAT_EVERY = 1.0


def apply_pending(rt: SqliteRuntime) -> int:
    """Apply up to APPLY_BATCH queued commands in arrival order; how many were taken."""
    pending = rt.store.pending_commands(APPLY_BATCH)
    for command in pending:
        apply_one(rt, command)
    return len(pending)


def purge_applied(rt: SqliteRuntime) -> int:
    """Delete up to PURGE_BATCH commands applied more than APPLIED_RETENTION ago; how many.

    Refused commands go after REFUSED_RETENTION.
    """
    now = rt.clock.now()
    with rt.store.write() as txn:
        return txn.purge_applied_commands(
            now - APPLIED_RETENTION, now - REFUSED_RETENTION, PURGE_BATCH
        )


def apply_one(rt: SqliteRuntime, command: CommandRecord) -> None:
    """Run one command and write its reply in the same transaction.

    A storage failure propagates and rolls everything back: the command
    stays queued and is applied by a later round.
    """
    with rt.store.write_together() as txn:
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
            value = handler(rt, args)
            reply = wire.ok_reply(command.kind, value)
            touched = _touched(value, args)
        except rt.store.storage_errors:
            raise
        except Exception as exc:  # noqa: BLE001 - every other failure is the command's reply
            reply = wire.error_reply(exc)
            touched = _text(args.get("exec_id")) or _text(getattr(exc, "exec_id", None))
        txn.finish_command(command.id, reply, touched, rt.clock.now())


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


def _query(rt: SqliteRuntime, a: dict[str, Any]) -> Any:
    snapshot = queries.take_snapshot(rt, rt._require(a["exec_id"]))
    return queries.answer(snapshot, rt.clock, a["name"], a.get("arg"))


def _handlers() -> dict[str, Callable[[SqliteRuntime, dict[str, Any]], Any]]:
    # Built in a function, not as a module-level literal: mypy checks these
    # lambdas after `SqliteRuntime`, whose methods are bound from their
    # concern modules (runtime.py) and typed only once that class is checked.
    return {
        "start_workflow": lambda rt, a: rt.start_workflow(a["name"], a.get("input")),
        "start_workflow_with_id": lambda rt, a: rt.start_workflow_with_id(
            a["name"], a["workflow_id"], a.get("input")
        ),
        "start_workflow_with_reuse_policy": lambda rt, a: (
            rt.start_workflow_with_reuse_policy(
                a["name"], a["workflow_id"], a.get("input"), _policy(a)
            )
        ),
        "start_workflow_with_options": lambda rt, a: rt.start_workflow_with_options(
            a["name"],
            a.get("input"),
            StartOptions(
                workflow_id=a.get("workflow_id"),
                memo=a.get("memo"),
                search_attributes=a.get("search_attributes") or {},
                reuse_policy=_policy(a),
            ),
        ),
        "signal_with_start": lambda rt, a: rt.signal_with_start(
            SignalWithStart(
                workflow_name=a["workflow_name"],
                workflow_id=a["workflow_id"],
                input=a.get("input"),
                reuse_policy=_policy(a),
                signal_name=a["signal_name"],
                signal_payload=a.get("signal_payload"),
                idempotency_key=a.get("idempotency_key"),
            )
        ),
        "send_signal": lambda rt, a: rt.send_signal(
            a["exec_id"], a["name"], a.get("payload")
        ),
        "send_signal_idempotent": lambda rt, a: rt.send_signal_idempotent(
            a["exec_id"], a["name"], a.get("payload"), a.get("key")
        ),
        "send_signal_by_workflow_id": lambda rt, a: rt.send_signal_by_workflow_id(
            a["workflow_name"],
            a["workflow_id"],
            a["name"],
            a.get("payload"),
            a.get("key"),
        ),
        "cancel": lambda rt, a: rt.cancel(a["exec_id"], a.get("reason") or ""),
        "terminate": lambda rt, a: rt.terminate(a["exec_id"], a.get("reason") or ""),
        "query": _query,
        "update": lambda rt, a: updates.run_update(
            rt, rt._require(a["exec_id"]), a["name"], a.get("arg")
        ),
        "update_with_start": lambda rt, a: uws.update_with_start(
            rt,
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
