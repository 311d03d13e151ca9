"""The `harvest` commands that repair and steer runs: reset, fork, pause, unpause, and the bulk forms.

Each is one client command the serving process applies (it has today's
code), as `harvest cancel` is. A bulk command (cancel-many, terminate-many,
signal-many, reset-many, pause-many, unpause-many) takes the filter options
of `harvest runs` and prints how many runs it changed; with no filter
option it refuses unless `--all` says every run is meant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from harvest_engine.cli import filter_options
from harvest_engine.cli.app import EXEC, FILE, JSON, Target, main
from harvest_engine.cli.client_commands import COMMAND_ID, _json_arg, _run
from harvest_engine.cli.output import emit_json, line
from harvest_engine.filters import ExecutionFilter

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from harvest_engine.client import HarvestClient

TIMEOUT = click.option(
    "--timeout",
    default="10s",
    show_default=True,
    help="How long to wait for the serving process's reply (e.g. 500ms, 30s).",
)
BULK_TIMEOUT = click.option(
    "--timeout",
    default="60s",
    show_default=True,
    help="How long to wait for the serving process to work through every run.",
)
ALL = click.option(
    "--all", "every", is_flag=True, help="Act on every run when no filter is given."
)


@main.command("reset")
@FILE
@EXEC
@click.option(
    "--to-event",
    type=int,
    default=None,
    help="Keep the history up to this event (a decision boundary); default: just "
    "before the last failed activity, or the last decision.",
)
@click.option("--reason", required=True, help="Why (the old run ends with it).")
@TIMEOUT
@COMMAND_ID
@JSON
def reset(
    file: Target,
    exec_id: str,
    to_event: int | None,
    reason: str,
    timeout: str,
    command_id: str | None,
    as_json: bool,
) -> None:
    """Run EXEC_ID again from a decision boundary with the serving process's code; prints the new id.

    The new run keeps the workflow id and the history up to the point; the
    old run ends TERMINATED (if it was running) and links to the new one.
    """
    new = _run(
        file,
        lambda c: c.reset(
            exec_id,
            to_event=to_event,
            reason=reason,
            timeout=timeout,
            command_id=command_id,
        ),
    )
    if as_json:
        emit_json({"exec_id": exec_id, "reset_to": str(new)})
    else:
        line(str(new))


@main.command("fork")
@FILE
@EXEC
@click.option(
    "--from-step",
    type=int,
    required=True,
    help="The first activity step to run again (1-based); earlier results are kept.",
)
@click.option(
    "--new-workflow-id",
    default=None,
    help="The new run's workflow id (default: its own exec id).",
)
@TIMEOUT
@COMMAND_ID
@JSON
def fork(
    file: Target,
    exec_id: str,
    from_step: int,
    new_workflow_id: str | None,
    timeout: str,
    command_id: str | None,
    as_json: bool,
) -> None:
    """Start a new run from EXEC_ID's history up to step FROM_STEP (prints its id); EXEC_ID is untouched."""
    new = _run(
        file,
        lambda c: c.fork(
            exec_id,
            from_step=from_step,
            workflow_id=new_workflow_id,
            timeout=timeout,
            command_id=command_id,
        ),
    )
    if as_json:
        emit_json({"exec_id": exec_id, "forked_to": str(new)})
    else:
        line(str(new))


@main.command("pause")
@FILE
@EXEC
@click.argument("reason", required=False)
@TIMEOUT
@COMMAND_ID
@JSON
def pause(
    file: Target,
    exec_id: str,
    reason: str | None,
    timeout: str,
    command_id: str | None,
    as_json: bool,
) -> None:
    """Pause a RUNNING run: no decision, no new attempt until `harvest unpause`."""
    _run(
        file,
        lambda c: c.pause(
            exec_id, reason or "", timeout=timeout, command_id=command_id
        ),
    )
    if as_json:
        emit_json({"exec_id": exec_id, "paused": True})
    else:
        line("paused", exec_id)


@main.command("unpause")
@FILE
@EXEC
@TIMEOUT
@COMMAND_ID
@JSON
def unpause(
    file: Target, exec_id: str, timeout: str, command_id: str | None, as_json: bool
) -> None:
    """Let a paused run go on; what arrived meanwhile applies now."""
    _run(file, lambda c: c.unpause(exec_id, timeout=timeout, command_id=command_id))
    if as_json:
        emit_json({"exec_id": exec_id, "paused": False})
    else:
        line("unpaused", exec_id)


def _bulk(
    file: Target,
    given: dict[str, Any],
    call: Callable[[HarvestClient, ExecutionFilter], Coroutine[Any, Any, int]],
    what: str,
) -> None:
    """Build the filter, refuse an empty one without --all, run `call`, print the count."""
    every = given.pop("every")
    as_json = given.pop("as_json")
    if not every and all(given.get(n) in (None, ()) for n in filter_options.NAMES):
        raise click.UsageError(
            "no filter given: name the runs (--workflow, --state, ...) or pass --all"
        )
    flt = filter_options.build(
        ExecutionFilter(), **{n: given.get(n) for n in filter_options.NAMES}
    )
    count = _run(file, lambda c: call(c, flt))
    if as_json:
        emit_json({what: count})
    else:
        line(what, str(count))


@main.command("cancel-many")
@FILE
@filter_options.filter_options
@click.option("--reason", default="", help="Why (each run's body sees it).")
@ALL
@BULK_TIMEOUT
@COMMAND_ID
@JSON
def cancel_many(
    file: Target, reason: str, timeout: str, command_id: str | None, **given: Any
) -> None:
    """Request a cancel of every RUNNING run the filter matches."""
    _bulk(
        file,
        given,
        lambda c, f: c.cancel_many(f, reason, timeout=timeout, command_id=command_id),
        "cancel requested",
    )


@main.command("terminate-many")
@FILE
@filter_options.filter_options
@click.option("--reason", default="", help="Why (each run ends with it).")
@ALL
@BULK_TIMEOUT
@COMMAND_ID
@JSON
def terminate_many(
    file: Target, reason: str, timeout: str, command_id: str | None, **given: Any
) -> None:
    """End every RUNNING run the filter matches TERMINATED."""
    _bulk(
        file,
        given,
        lambda c, f: c.terminate_many(
            f, reason, timeout=timeout, command_id=command_id
        ),
        "terminated",
    )


@main.command("signal-many")
@FILE
@click.argument("name")
@click.argument("payload", required=False)
@filter_options.filter_options
@ALL
@BULK_TIMEOUT
@COMMAND_ID
@JSON
def signal_many(
    file: Target,
    name: str,
    payload: str | None,
    timeout: str,
    command_id: str | None,
    **given: Any,
) -> None:
    """Signal every RUNNING run the filter matches with NAME and JSON PAYLOAD, once."""
    value = _json_arg(payload, "PAYLOAD")
    _bulk(
        file,
        given,
        lambda c, f: c.signal_many(
            f, name, value, timeout=timeout, command_id=command_id
        ),
        "signalled",
    )


@main.command("reset-many")
@FILE
@filter_options.filter_options
@click.option("--reason", required=True, help="Why (each old run ends with it).")
@ALL
@BULK_TIMEOUT
@COMMAND_ID
@JSON
def reset_many(
    file: Target, reason: str, timeout: str, command_id: str | None, **given: Any
) -> None:
    """Reset every run the filter matches (not reset before) to its default point."""
    _bulk(
        file,
        given,
        lambda c, f: c.reset_many(
            f, reason=reason, timeout=timeout, command_id=command_id
        ),
        "reset",
    )


@main.command("pause-many")
@FILE
@filter_options.filter_options
@click.option("--reason", default="", help="Why.")
@ALL
@BULK_TIMEOUT
@COMMAND_ID
@JSON
def pause_many(
    file: Target, reason: str, timeout: str, command_id: str | None, **given: Any
) -> None:
    """Pause every RUNNING run the filter matches."""
    _bulk(
        file,
        given,
        lambda c, f: c.pause_many(f, reason, timeout=timeout, command_id=command_id),
        "paused",
    )


@main.command("unpause-many")
@FILE
@filter_options.filter_options
@ALL
@BULK_TIMEOUT
@COMMAND_ID
@JSON
def unpause_many(
    file: Target, timeout: str, command_id: str | None, **given: Any
) -> None:
    """Unpause every paused run the filter matches."""
    _bulk(
        file,
        given,
        lambda c, f: c.unpause_many(f, timeout=timeout, command_id=command_id),
        "unpaused",
    )
