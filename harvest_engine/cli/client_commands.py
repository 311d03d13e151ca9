"""The `harvest` commands that talk to runs through a HarvestClient: start, signal, query, update, ...

Each queues one command for the process that serves FILE (`await
rt.serve()`) and waits up to `--timeout` for its reply; arguments are JSON
text. A command no serving process answered in time exits 8 and stays
queued: it is applied when a server runs; repeating it with the
`--command-id` its error printed applies it once. When no process serves
FILE at all (no recent heartbeat) it says so within about a second, and
`harvest withdraw FILE COMMAND_ID` removes a command that was not applied.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from typing import TYPE_CHECKING, Any

import click

from harvest_engine.cli.app import EXEC, FILE, JSON, Target, codec, main
from harvest_engine.cli.flow import queue_options, start_options
from harvest_engine.cli.output import (
    EXIT_FAILED,
    EXIT_NOT_FOUND,
    HarvestFailure,
    emit_json,
    emit_trace,
    failures,
    line,
)
from harvest_engine.client import HarvestClient
from harvest_engine.errors import CommandTimedOut, NotServed
from harvest_engine.states import ExecutionOutcome

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

EXIT_TIMED_OUT = 8
"""No serving process answered in time (`CommandTimedOut`); the command stays queued."""

TIMEOUT = click.option(
    "--timeout",
    default="10s",
    show_default=True,
    help="How long to wait for the serving process's reply (e.g. 500ms, 30s).",
)
COMMAND_ID = click.option(
    "--command-id",
    default=None,
    help="Retry a command that timed out (the id its error printed), or name a "
    "new one: one id is applied once.",
)


def _json_arg(text: str | None, what: str) -> Any:
    """A JSON argument (None when it was left out)."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(
            f"{what} is not JSON ({exc}); text is a JSON string in quotes: "
            f"use {shlex.quote(json.dumps(text))}",
            param_hint=what,
        ) from exc


def _run(
    file: Target, call: Callable[[HarvestClient], Coroutine[Any, Any, Any]]
) -> Any:
    """Open a client on `file` (or a Postgres URL), run one command, close.

    Errors are one line and their exit status.
    """
    with failures():
        try:
            opened = (
                HarvestClient.connect(file, codec=codec())
                if isinstance(file, str)
                else HarvestClient.open(file, codec=codec())
            )
            with opened as client:
                return asyncio.run(call(client))
        except NotServed as exc:
            held = getattr(exc, "command_id", "")
            raise HarvestFailure(
                f"no process serves {exc.path} ({exc.last_beat}): start one with "
                "`await rt.serve()`. The command stays queued and is applied when one "
                f"does; to wait for it again, repeat the command with --command-id "
                f"{held}; to drop it: harvest withdraw {exc.path} {held}",
                EXIT_TIMED_OUT,
            ) from exc
        except CommandTimedOut as exc:
            held = getattr(exc, "command_id", "")
            retry = f"; to retry it, repeat the command with --command-id {held}"
            raise HarvestFailure(exc.message + retry, EXIT_TIMED_OUT) from exc


@main.command("withdraw")
@FILE
@click.argument("command_id")
@JSON
def withdraw(file: Target, command_id: str, as_json: bool) -> None:
    """Remove queued command COMMAND_ID that no serving process applied yet.

    Refused (exit 1) once the command was applied, and (exit 3) when nothing
    is queued under that id.
    """

    async def call(client: HarvestClient) -> tuple[bool, bool | None, str]:
        removed = client.withdraw(command_id)
        applied = None if removed else client.command_applied(command_id)
        return removed, applied, client.path  # a URL's password hidden

    removed, applied, where = _run(file, call)
    if removed:
        if as_json:
            emit_json({"command_id": command_id, "withdrawn": True})
        else:
            line("withdrawn", command_id)
        return
    if applied:
        raise HarvestFailure(
            f"command {command_id} was applied already: it cannot be withdrawn "
            "(its effect happened; undo it with another command)",
            EXIT_FAILED,
        )
    raise HarvestFailure(
        f"no command {command_id} is queued in {where}", EXIT_NOT_FOUND
    )


@main.command("start")
@FILE
@click.argument("workflow")
@click.argument("input", required=False)
@click.option(
    "--id", "workflow_id", help="A business id (attaches to its RUNNING run)."
)
@queue_options
@TIMEOUT
@COMMAND_ID
@JSON
def start(
    file: Target,
    workflow: str,
    input: str | None,
    workflow_id: str | None,
    timeout: str,
    command_id: str | None,
    as_json: bool,
    **queueing: Any,
) -> None:
    """Start a run of WORKFLOW with INPUT (JSON); prints the new run's id."""
    value = _json_arg(input, "INPUT")

    async def call(client: HarvestClient) -> Any:
        options = start_options(workflow_id, **queueing)
        if options is not None:
            started = await client.start_workflow_with_options(
                workflow, value, options, timeout=timeout, command_id=command_id
            )
            return started.exec_id
        if workflow_id is None:
            return await client.start_workflow(
                workflow, value, timeout=timeout, command_id=command_id
            )
        return await client.start_workflow_with_id(
            workflow, workflow_id, value, timeout=timeout, command_id=command_id
        )

    exec_id = _run(file, call)
    if as_json:
        emit_json({"exec_id": str(exec_id)})
    else:
        line(exec_id)


@main.command("signal")
@FILE
@EXEC
@click.argument("name")
@click.argument("payload", required=False)
@click.option(
    "--key", help="An idempotency key: a repeat with the same key is dropped."
)
@TIMEOUT
@COMMAND_ID
@JSON
def signal(
    file: Target,
    exec_id: str,
    name: str,
    payload: str | None,
    key: str | None,
    timeout: str,
    command_id: str | None,
    as_json: bool,
) -> None:
    """Send signal NAME with PAYLOAD (JSON) to a RUNNING run."""
    value = _json_arg(payload, "PAYLOAD")

    async def call(client: HarvestClient) -> bool:
        if key is None:
            await client.send_signal(
                exec_id, name, value, timeout=timeout, command_id=command_id
            )
            return True
        return await client.send_signal_idempotent(
            exec_id, name, value, key, timeout=timeout, command_id=command_id
        )

    delivered = _run(file, call)
    if as_json:
        emit_json({"exec_id": exec_id, "delivered": delivered})
    else:
        line("signalled" if delivered else "already delivered (same key)", exec_id)


@main.command("query")
@FILE
@EXEC
@click.argument("name")
@click.argument("arg", required=False)
@TIMEOUT
@COMMAND_ID
@JSON
def query(
    file: Target,
    exec_id: str,
    name: str,
    arg: str | None,
    timeout: str,
    command_id: str | None,
    as_json: bool,
) -> None:
    """Ask query NAME(ARG) of a run (answered by the serving process); prints the answer as JSON."""
    value = _json_arg(arg, "ARG")
    result = _run(
        file,
        lambda c: c.query(exec_id, name, value, timeout=timeout, command_id=command_id),
    )
    emit_json({"result": result} if as_json else result)


@main.command("update")
@FILE
@EXEC
@click.argument("name")
@click.argument("arg", required=False)
@TIMEOUT
@COMMAND_ID
@JSON
def update(
    file: Target,
    exec_id: str,
    name: str,
    arg: str | None,
    timeout: str,
    command_id: str | None,
    as_json: bool,
) -> None:
    """Run update NAME(ARG) on a run; prints its result as JSON."""
    value = _json_arg(arg, "ARG")
    result = _run(
        file,
        lambda c: c.update(
            exec_id, name, value, timeout=timeout, command_id=command_id
        ),
    )
    emit_json({"result": result} if as_json else result)


@main.command("cancel")
@FILE
@EXEC
@click.argument("reason", required=False)
@TIMEOUT
@COMMAND_ID
@JSON
def cancel(
    file: Target,
    exec_id: str,
    reason: str | None,
    timeout: str,
    command_id: str | None,
    as_json: bool,
) -> None:
    """Request a cooperative cancel of a RUNNING run (its cleanup still runs)."""
    _run(
        file,
        lambda c: c.cancel(
            exec_id, reason or "", timeout=timeout, command_id=command_id
        ),
    )
    if as_json:
        emit_json({"exec_id": exec_id, "cancel_requested": True})
    else:
        line("cancel requested", exec_id)


@main.command("terminate")
@FILE
@EXEC
@click.argument("reason", required=False)
@TIMEOUT
@COMMAND_ID
@JSON
def terminate(
    file: Target,
    exec_id: str,
    reason: str | None,
    timeout: str,
    command_id: str | None,
    as_json: bool,
) -> None:
    """End a RUNNING run TERMINATED at once."""
    _run(
        file,
        lambda c: c.terminate(
            exec_id, reason or "", timeout=timeout, command_id=command_id
        ),
    )
    if as_json:
        emit_json({"exec_id": exec_id, "terminated": True})
    else:
        line("terminated", exec_id)


@main.command("result")
@FILE
@EXEC
@click.option(
    "--timeout", default=None, help="Give up after this long (default: wait)."
)
@JSON
def result(file: Target, exec_id: str, timeout: str | None, as_json: bool) -> None:
    """Wait for a run's end (following its successors); prints the output as JSON.

    A run that failed or was cancelled prints its ending and exits 1.
    """

    async def call(client: HarvestClient) -> tuple[ExecutionOutcome, str]:
        try:
            ended = await client.result(exec_id, timeout=timeout)
        except TimeoutError as exc:
            raise HarvestFailure(str(exc), EXIT_TIMED_OUT) from exc
        if isinstance(ended, ExecutionOutcome.Terminated):
            return ended, _ending_reason(client, exec_id)
        return ended, ""

    outcome, reason = _run(file, call)
    if isinstance(outcome, ExecutionOutcome.Completed):
        emit_json(
            {"state": "COMPLETED", "output": outcome.output}
            if as_json
            else outcome.output
        )
        return
    if isinstance(outcome, ExecutionOutcome.Failed):
        state, detail = "FAILED", outcome.error.message
        body: dict[str, Any] = {"state": state, "error": outcome.error.to_json()}
    else:
        state = getattr(outcome, "state", "RUNNING")
        detail, body = reason, {"state": state, "reason": reason}
    if as_json:
        emit_json(body)
        raise SystemExit(EXIT_FAILED)
    trace = getattr(getattr(outcome, "error", None), "stack_trace", None)
    if isinstance(trace, str):
        click.echo("traceback:", err=True)
        emit_trace(trace, err=True)
    raise HarvestFailure(
        f"run {exec_id} ended {state}" + (f": {detail}" if detail else ""), EXIT_FAILED
    )


MAX_SUCCESSORS = 10_000
"""`result` follows at most this many continue-as-new or retry successors for a reason."""


def _ending_reason(client: HarvestClient, exec_id: str) -> str:
    """The reason the last run of `exec_id`'s chain was terminated or cancelled with."""
    detail = client.describe(exec_id)
    for _ in range(MAX_SUCCESSORS):
        if detail.successor is None:
            break
        detail = client.describe(detail.successor)
    error = getattr(detail.error, "value", None)
    if isinstance(error, dict):
        return str(error.get("message") or "")
    return ""
