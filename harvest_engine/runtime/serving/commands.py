"""Applying client commands in the serving process: each exactly once, effect and reply together.

A client in another process queues a row (kind, JSON args: a `wire`
record). The serving loop applies pending rows in arrival order; each
command (`command_calls.run`, one case per record) runs the same
runtime call an in-process caller would make, inside one transaction that
also writes the reply row, so a kill -9 of either side never applies a
command twice or loses it. The call's own writes join
that transaction as savepoints: a command that raises rolls back its
changes and commits only the reply carrying its typed error.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from harvest_engine import wire
from harvest_engine.errors import HarvestError
from harvest_engine.interceptors import carrying
from harvest_engine.runtime.serving import command_calls
from harvest_engine.runtime.talking import held_starts

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.runtime.deciding.cycle import Decision
    from harvest_engine.runtime.engine import Engine
    from harvest_engine.store.rows import CommandRecord
    from harvest_engine.store.txn_protocol import WriteTxn

log = logging.getLogger("harvest_engine.serving")

# Commands applied per round, so a flood of commands still lets runs move.
APPLY_BATCH = 64

# Applied commands are kept this long (a late client can still read its
# reply), then purged by the serving loop (`purge_applied`, at most every
# PURGE_EVERY seconds, off a command's path); a purge of their run takes
# them too.
APPLIED_RETENTION = timedelta(days=1)
PURGE_BATCH = 256
PURGE_EVERY = 60.0
# A refused command (its reply an error) changed nothing: its client removes
# it once it read the reply, and the purge takes any left (its client died)
# after this long instead of a day.
REFUSED_RETENTION = timedelta(minutes=1)
# A serving process records a heartbeat this often (seconds), off the
# commands' path: the lock file's mtime on SQLite (no commit), a harvest_meta
# row on Postgres. A client whose command finds no beat
# younger than client/waits.py's SERVED_WITHIN raises NotServed instead of
# waiting out its timeout.
HEARTBEAT_EVERY = 1.0


def apply_pending(engine: Engine, *, decide: bool = False) -> int:
    """Apply up to APPLY_BATCH queued commands in arrival order; how many were taken.

    With `decide` (the serving loop), a signal's run is decided in the
    signal's own transaction (`apply_one`).
    """
    return apply_batch(engine, decide=decide)[0]


def apply_batch(engine: Engine, *, decide: bool = False) -> tuple[int, bool]:
    """`apply_pending`, and whether every command taken left the run loop nothing to do.

    True when each one's transaction also decided the run it made due and
    left that run parked having made nothing new (`rests`): the
    serving loop then has no pass to make for them. The serving loop
    (`decide`) first takes the rows clients' notices named, if every wake
    since its last look named one (Postgres): it claims each without
    reading the queue (`apply_named`); otherwise it reads the queue.
    """
    named = engine.waker.command_hints() if decide else None
    if named is not None:
        settled = True
        for row_id, run in named:
            settled = apply_named(engine, row_id, run) and settled
        return len(named), settled
    pending = engine.store.pending_commands(APPLY_BATCH)
    settled = True
    for command in pending:
        settled = apply_one(engine, command, decide=decide) and settled
    return len(pending), settled


def purge_applied(engine: Engine) -> int:
    """Delete up to PURGE_BATCH commands applied more than APPLIED_RETENTION ago; how many.

    Refused commands go after REFUSED_RETENTION.
    """
    now = engine.clock.now()
    with engine.store.write() as txn:
        return txn.purge_applied_commands(
            now - APPLIED_RETENTION, now - REFUSED_RETENTION, PURGE_BATCH
        )


def apply_one(engine: Engine, command: CommandRecord, *, decide: bool = False) -> bool:
    """Run one command and write its reply in the same transaction.

    A storage failure propagates and rolls everything back: the command
    stays queued and is applied by a later round. With `decide`, a signal
    that was staged, or a run the command started, is followed by that
    run's decision in a savepoint of the same transaction
    (`signal_decision`): one commit, and one wake of the client, carry both
    the reply and what the command made due, and the serving loop has no
    second transaction to run for it (where a signal that follows a start
    would wait behind it).

    Returns whether that decision left its run resting (`rests`): nothing
    for the serving loop; False otherwise.
    """
    read = _read(command)
    hold = signalled(read[0]) if decide else ()

    def claim(txn: WriteTxn) -> CommandRecord | None:
        return command if txn.claim_command(command.id, hold) else None

    return _apply(engine, claim, decide=decide, read=read)


def apply_named(engine: Engine, row_id: int, run: str) -> bool:
    """`apply_one` (deciding) of the row a client's notice named, claimed before it is read.

    The claim reads the row and locks `run` (the run the client said the
    command signals) in one round trip. A row another worker took, or
    applied, is skipped (False).
    """

    def claim(txn: WriteTxn) -> CommandRecord | None:
        return txn.claim_command_row(row_id, (run,) if run else ())

    return _apply(engine, claim, decide=True)


def _read(command: CommandRecord) -> tuple[wire.Command | None, Exception | None]:
    """The command's record, or why it cannot be read (its reply, once claimed)."""
    try:
        return wire.command(command.kind, command.args), None
    except Exception as exc:  # noqa: BLE001 - the command's reply, once claimed
        return None, exc


def _apply(
    engine: Engine,
    claim: Callable[[WriteTxn], CommandRecord | None],
    *,
    decide: bool,
    read: tuple[wire.Command | None, Exception | None] | None = None,
) -> bool:
    """Claim a command in a new transaction, run it, reply, decide what it unblocked."""
    unblocked: str | None = None
    decision: Decision | None = None
    try:
        with engine.store.write_together() as txn:
            command = claim(txn)
            if command is None:
                return False  # applied meanwhile, or another worker is applying it
            record, unread = read or _read(command)
            try:
                if record is None:
                    raise unread or ValueError(f"unreadable command {command.kind!r}")
                with carrying(wire.command_headers(command.args)):
                    value = command_calls.run(engine, record)
                reply = wire.ok_reply(record, value)
                touched = _touched(value, record)
                if decide:
                    unblocked = signalled_run(record, value, touched) or started_run(
                        engine, record, value, touched
                    )
            except engine.store.storage_errors:
                raise
            except Exception as exc:  # noqa: BLE001 - every other failure is the command's reply
                reply = wire.error_reply(exc)
                named = getattr(record, "exec_id", None)
                touched = _text(named) or _text(getattr(exc, "exec_id", None))
            txn.finish_command(command.id, reply, touched, engine.clock.now())
            if unblocked is not None:
                decision = signal_decision(engine, unblocked)
    except BaseException:
        if unblocked is not None:
            engine.cache.evict(unblocked)  # its decision did not commit
        raise
    return decision is not None and rests(decision)


def rests(decision: Decision) -> bool:
    """Whether a decision left its run parked with nothing new for the serving loop.

    It recorded nothing (a first decision that parks on a signal at once: no
    task, timer or child was made, no run was woken) and waits on no timer,
    mutex or other run. A decision that recorded something may have made
    work elsewhere (a child to start, a parent to wake): not resting. The
    serving loop, its wake dropped, still reads its next due time again
    before it sleeps (a new run's deadline counts).
    """
    return not (
        decision.state is not None
        or decision.progressed
        or decision.events
        or decision.claimed
        or decision.waiting_timer
        or decision.waiting_mutex is not None
        or decision.waiting_workflows
        or decision.awaits_external
        or decision.inputs_left
        or decision.stuck
    )


def signalled_run(record: wire.Command, value: Any, touched: str | None) -> str | None:
    """The run a signal command staged a signal on (its decision is due), or None.

    A duplicate (an idempotency key the run already holds) staged nothing.
    """
    match record:
        case wire.SendSignal() | wire.SendSignalIdempotent():
            return touched if value is not False else None
        case wire.SendSignalByWorkflowId():
            return touched if getattr(value, "delivered", False) else None
    return None


def started_run(
    engine: Engine, record: wire.Command, value: Any, touched: str | None
) -> str | None:
    """The run a start command created just now (its first decision is due), or None.

    Not a run it attached to (no decision is due there), nor a held start
    (debounce, batch: its run does not exist yet).
    """
    match record:
        case wire.StartWorkflow():
            fresh = True
        case wire.StartWorkflowWithReusePolicy() | wire.StartWorkflowWithOptions():
            fresh = bool(getattr(value, "started_fresh", False))
        case wire.SignalWithStartCommand():
            # Fresh or attached, the signal it staged makes a decision due.
            return touched if getattr(value, "signal_delivered", False) else None
        case _:
            return None
    if not fresh or held_starts.holds(engine, record.name):
        return None
    return touched


def signalled(record: wire.Command | None) -> tuple[str, ...]:
    """The run a signal command names, for its claim to lock and keep (`claim_command`'s hold).

    On a shared store the signal's check and the decision that follows it
    then read the row from the transaction's memory, and the lock travels
    with the claim: one round trip for the three instead of one each.
    """
    run = wire.signalled_run(record)
    return () if run is None else (run,)


def signal_decision(engine: Engine, exec_id: str) -> Decision | None:
    """Decide a signalled run in a savepoint of the command's transaction.

    The serving loop would decide it next, after a commit, a wake and a
    pass's reads; here it takes none of them. A failure of the decision
    stays its own (rolled back to its savepoint, left flagged for the loop);
    tasks it schedules stay PENDING for the loop's next pass to claim. A
    storage failure propagates: nothing of the transaction commits and the
    command is applied again later. Returns the decision (None when it failed).
    """
    try:
        return engine.decider.decide(exec_id, engine.clock.now())
    except engine.store.storage_errors:
        raise
    except HarvestError as exc:
        log.debug("decision of %s after its signal: %s", exec_id, exc)
        return None


def _touched(value: Any, record: wire.Command) -> str | None:
    """The run a command touched (for the purge): its result's run, or the one it named."""
    exec_id = getattr(value, "exec_id", None) if value is not None else None
    if exec_id is None and type(value).__name__ == "ExecutionId":
        exec_id = value
    return _text(exec_id) or _text(getattr(record, "exec_id", None))


def _text(value: Any) -> str | None:
    return str(value) if value is not None and str(value).strip() else None
