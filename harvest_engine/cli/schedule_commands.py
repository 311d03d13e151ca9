"""`harvest schedule upsert|pause|resume|delete|trigger|backfill FILE WORKFLOW`: schedules through a client.

Each change is one command the serving process applies (`harvest
schedules FILE` lists them). `backfill --dry-run` prints the slots it
would start, read from the stored schedule, and sends nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

from harvest_engine.cli.app import FILE, JSON, Target, main, reading
from harvest_engine.cli.client_commands import COMMAND_ID, TIMEOUT, _json_arg, _run
from harvest_engine.cli.output import EXIT_NOT_FOUND, HarvestFailure, emit_json, line
from harvest_engine.errors import ScheduleNotFound
from harvest_engine.schedules import (
    Overlap,
    Schedule,
    WorkflowSchedule,
    schedule_workflow_id,
    slots_between,
)

if TYPE_CHECKING:
    from harvest_engine.client import HarvestClient

WORKFLOW = click.argument("workflow")


@main.group("schedule")
def schedule() -> None:
    """Change the schedules of a served FILE (list them with `harvest schedules`)."""


@schedule.command("upsert")
@FILE
@WORKFLOW
@click.option("--cron", help='A cron expression, e.g. "0 3 * * *".')
@click.option("--timezone", default="UTC", show_default=True, help="The cron's zone.")
@click.option("--every", help="A fixed period instead, e.g. 15m.")
@click.option("--input", "input_", help="Each run's input (JSON).")
@click.option("--max-active-runs", default=1, show_default=True, type=int)
@click.option(
    "--overlap",
    type=click.Choice([o.value for o in Overlap]),
    default=Overlap.SKIP.value,
    show_default=True,
)
@TIMEOUT
@COMMAND_ID
@JSON
def upsert(  # noqa: PLR0913 - one parameter per option
    file: Target,
    workflow: str,
    cron: str | None,
    timezone: str,
    every: str | None,
    input_: str | None,
    max_active_runs: int,
    overlap: str,
    timeout: str,
    command_id: str | None,
    as_json: bool,
) -> None:
    """Store WORKFLOW's schedule (`--cron` or `--every`); the same spec keeps its next slot."""
    if (cron is None) == (every is None):
        raise click.UsageError("give one of --cron EXPR or --every PERIOD")
    value = _json_arg(input_, "--input")
    try:
        spec = Schedule.cron(cron, timezone) if cron else Schedule.every(str(every))
        wanted = WorkflowSchedule(
            workflow,
            spec,
            input=value,
            max_active_runs=max_active_runs,
            overlap=overlap,
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc

    async def call(client: HarvestClient) -> Any:
        return await client.upsert_schedule(
            wanted, timeout=timeout, command_id=command_id
        )

    row = _run(file, call)
    nxt = row.next_fire_at.isoformat() if row.next_fire_at else None
    if as_json:
        emit_json(
            {"workflow_name": workflow, "next_fire_at": nxt, "paused": row.paused}
        )
    else:
        line("scheduled", workflow, f"next {nxt}", "(paused)" if row.paused else "")


def _flag_command(name: str, done: str, doc: str) -> None:
    """Pause / resume / delete: one call that answers whether the schedule was there."""

    @schedule.command(name, help=doc)
    @FILE
    @WORKFLOW
    @TIMEOUT
    @COMMAND_ID
    @JSON
    def command(
        file: Target,
        workflow: str,
        timeout: str,
        command_id: str | None,
        as_json: bool,
    ) -> None:
        async def call(client: HarvestClient) -> bool:
            method = getattr(client, f"{name}_schedule")
            return bool(await method(workflow, timeout=timeout, command_id=command_id))

        found = _run(file, call)
        if not found:
            raise HarvestFailure(f"no schedule for {workflow!r}", EXIT_NOT_FOUND)
        if as_json:
            emit_json({"workflow_name": workflow, done: True})
        else:
            line(done, workflow)

    del command


_flag_command("pause", "paused", "Stop WORKFLOW's schedule from firing (exit 3: none).")
_flag_command("resume", "resumed", "Fire WORKFLOW's schedule again from the next slot.")
_flag_command(
    "delete", "deleted", "Remove WORKFLOW's schedule (its runs keep running)."
)


@schedule.command("trigger")
@FILE
@WORKFLOW
@TIMEOUT
@COMMAND_ID
@JSON
def trigger(
    file: Target, workflow: str, timeout: str, command_id: str | None, as_json: bool
) -> None:
    """Start one run of WORKFLOW's schedule now; prints its id ("skipped": overlap)."""

    async def call(client: HarvestClient) -> Any:
        return await client.trigger_schedule(
            workflow, timeout=timeout, command_id=command_id
        )

    exec_id = _run(file, call)
    if as_json:
        emit_json({"exec_id": None if exec_id is None else str(exec_id)})
    else:
        line("skipped (overlap policy)" if exec_id is None else exec_id)


def _when(value: str, what: str) -> datetime:
    try:
        when = datetime.fromisoformat(value)
    except ValueError as exc:
        raise click.BadParameter(
            f"{value!r} is not an ISO time (2026-01-31T00:00+00:00)", param_hint=what
        ) from exc
    if when.tzinfo is None:
        raise click.BadParameter(
            f"{value!r} has no UTC offset (add +00:00)", param_hint=what
        )
    return when


@schedule.command("backfill")
@FILE
@WORKFLOW
@click.option("--start", required=True, help="The first time (ISO, with offset).")
@click.option("--end", required=True, help="The last time (ISO, with offset).")
@click.option("--dry-run", is_flag=True, help="Print the slots; start nothing.")
@TIMEOUT
@COMMAND_ID
@JSON
def backfill(  # noqa: PLR0913 - one parameter per option
    file: Target,
    workflow: str,
    start: str,
    end: str,
    dry_run: bool,
    timeout: str,
    command_id: str | None,
    as_json: bool,
) -> None:
    """Start a run of WORKFLOW for each slot from --start to --end (both included).

    A slot that already has a run is skipped. With --dry-run, print the
    slots (and their workflow ids) and send nothing.
    """
    first, last = _when(start, "--start"), _when(end, "--end")
    if last < first:
        raise click.BadParameter("--end is before --start", param_hint="--end")
    if dry_run:
        slots = _slots(file, workflow, first, last)
        rows = [(s.isoformat(), schedule_workflow_id(workflow, s)) for s in slots]
        if as_json:
            emit_json([{"slot": s, "workflow_id": w} for s, w in rows])
        else:
            for slot, workflow_id in rows:
                line(slot, workflow_id)
        return

    async def call(client: HarvestClient) -> Any:
        return await client.backfill_schedule(
            workflow, first, last, timeout=timeout, command_id=command_id
        )

    started = _run(file, call)
    if as_json:
        emit_json({"started": [str(e) for e in started]})
    else:
        for exec_id in started:
            line(exec_id)
        if not started:
            line("nothing started (every slot has its run, or overlap skipped them)")


def _slots(
    file: Target, workflow: str, first: datetime, last: datetime
) -> list[datetime]:
    with reading(file) as reader:
        rows = {r.workflow_name: r for r in reader.list_schedules()}
        row = rows.get(workflow)
        if row is None:
            raise ScheduleNotFound(workflow_name=workflow)
        if row.schedule is None:
            raise ValueError(f"schedule {workflow!r} cannot fire: {row.problem}")
        return slots_between(row.schedule, first, last)
