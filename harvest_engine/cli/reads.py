"""The `harvest` read commands: runs, show, attempts, history, counts, schedules, logs, ledger."""

from __future__ import annotations

from typing import Any

import click

from harvest_engine.cli.app import EXEC, FILE, JSON, Target, main, reading
from harvest_engine.cli.filter_options import build as filter_options_build
from harvest_engine.cli.filter_options import filter_options
from harvest_engine.cli.output import (
    emit_json,
    emit_json_text,
    emit_table,
    emit_trace,
    escape,
    line,
)
from harvest_engine.cli.render import (
    detail_json,
    iso,
    short,
    state_cell,
    stored,
    summary_json,
    when,
)
from harvest_engine.events import history_to_json
from harvest_engine.filters import ExecutionFilter
from harvest_engine.timestamps import to_text


@main.command("runs")
@FILE
@filter_options
@click.option(
    "--limit", type=int, default=50, show_default=True, help="Rows per page (1-1000)."
)
@click.option("--cursor", type=int, help="Continue from a previous page's `next`.")
@click.option("--wide", is_flag=True, help="Add each run's summary (StartOptions).")
@JSON
def runs(
    file: Target,
    limit: int,
    cursor: int | None,
    wide: bool,
    as_json: bool,
    **given: Any,
) -> None:
    """List runs, newest first (--wide: with their summaries; a paused run reads "RUNNING (paused)")."""
    with reading(file) as reader:
        flt = filter_options_build(
            ExecutionFilter().limit(limit).before(cursor), **given
        )
        page = reader.list_executions(flt)
    if as_json:
        emit_json(
            {
                "executions": [summary_json(r) for r in page.executions],
                "next": page.next,
            }
        )
        return
    rows = [
        (
            r.exec_id,
            r.workflow_name,
            r.workflow_id,
            state_cell(r),
            when(r.started_at),
            when(r.closed_at),
            *([short(r.summary or "-", 40)] if wide else []),
        )
        for r in page.executions
    ]
    headers = ("EXEC ID", "WORKFLOW", "WORKFLOW ID", "STATE", "STARTED", "CLOSED")
    emit_table((*headers, *(("SUMMARY",) if wide else ())), rows)
    if page.next is not None:
        line(f"more: --cursor {page.next}")


@main.command("show")
@FILE
@EXEC
@JSON
def show(file: Target, exec_id: str, as_json: bool) -> None:
    """Describe one run, with its input, output and error."""
    with reading(file) as reader:
        run = reader.describe(exec_id)
        pending = reader.pending_tasks(exec_id)
        timers = reader.timers(exec_id)
        signals = reader.staged_signals(exec_id)
        attempts = reader.activity_attempts(exec_id)
    data = detail_json(run)
    data["pending_tasks"] = [
        {
            "activity": t.name,
            "status": t.status,
            "attempt": t.attempt,
            "ready_at": to_text(t.ready_at),
        }
        for t in pending
    ]
    data["timers"] = [
        {"timer_id": t.timer_id, "fire_at": to_text(t.fire_at)} for t in timers
    ]
    data["staged_signals"] = [s.name for s in signals]
    # Every attempt, a LOST one (its process died mid-body) beside its re-run.
    data["attempts"] = [
        {
            "activity": a.name,
            "attempt": a.attempt,
            "outcome": a.outcome,
            "started_at": to_text(a.started_at),
            "ended_at": None if a.ended_at is None else to_text(a.ended_at),
            "error": None if a.error is None else a.error.to_json(),
        }
        for a in attempts
    ]
    if as_json:
        emit_json(data)
        return
    error = data["error"]
    trace = error.pop("stack_trace", None) if isinstance(error, dict) else None
    for a in data["attempts"]:
        if (
            a["error"] is not None
        ):  # the run's traceback below, the attempts' in `attempts`
            a["error"].pop("stack_trace", None)
    for key, value in data.items():
        shown = (
            value
            if isinstance(value, str)
            else ("-" if value is None else short(value, 70))
        )
        line(f"{key + ':':<18}{shown}", sep="")
    if isinstance(trace, str):
        line("traceback:")
        emit_trace(trace)


@main.command("attempts")
@FILE
@EXEC
@JSON
def attempts(file: Target, exec_id: str, as_json: bool) -> None:
    """Every activity attempt of a run, each failed one with its error and traceback."""
    with reading(file) as reader:
        reader.describe(exec_id)  # ExecutionNotFound for an unknown run
        found = reader.activity_attempts(exec_id)
    data = [
        {
            "activity": a.name,
            "activity_id": a.activity_id,
            "attempt": a.attempt,
            "outcome": a.outcome,
            "started_at": to_text(a.started_at),
            "ended_at": None if a.ended_at is None else to_text(a.ended_at),
            "error": None if a.error is None else a.error.to_json(),
        }
        for a in found
    ]
    if as_json:
        emit_json(data)
        return
    rows = [
        (
            a.name,
            a.attempt,
            a.outcome,
            when(a.started_at),
            "-" if a.error is None else short(f"{a.error.type}: {a.error.message}", 60),
        )
        for a in found
    ]
    emit_table(("ACTIVITY", "ATTEMPT", "OUTCOME", "STARTED", "ERROR"), rows)
    for a in found:
        if a.error is not None and a.error.stack_trace:
            line(f"{a.name} attempt {a.attempt}:")
            emit_trace(a.error.stack_trace)


@main.command("history")
@FILE
@EXEC
@JSON
def history(file: Target, exec_id: str, as_json: bool) -> None:
    """Print a run's history; `--json` writes what `harvest replay --history` reads."""
    with reading(file) as reader:
        events = reader.load_history(exec_id)
    if as_json:
        emit_json_text(history_to_json(events))
        return
    rows = [(e.seq, when(e.at), e.type, short(e.summary(), 60)) for e in events]
    emit_table(("SEQ", "AT", "TYPE", "DETAIL"), rows)


@main.command("counts")
@FILE
@JSON
def counts(file: Target, as_json: bool) -> None:
    """How many runs are in each state; PAUSED counts the paused ones among RUNNING."""
    with reading(file) as reader:
        by_state = reader.counts_by_state()
        flt = ExecutionFilter().paused().limit(1000)
        paused = 0
        while True:  # few runs are paused: paging them costs little
            page = reader.list_executions(flt)
            paused += len(page.executions)
            if page.next is None:
                break
            flt = flt.before(page.next)
        by_state["PAUSED"] = paused
    if as_json:
        emit_json(by_state)
        return
    emit_table(("STATE", "RUNS"), sorted(by_state.items()))


@main.command("schedules")
@FILE
@JSON
def schedules(file: Target, as_json: bool) -> None:
    """List the stored schedules."""
    with reading(file) as reader:
        rows = reader.list_schedules()
    if as_json:
        emit_json(
            [
                {
                    "workflow_name": r.workflow_name,
                    "schedule": None if r.schedule is None else r.schedule.to_json(),
                    "input": stored(r.input),
                    "overlap": r.overlap,
                    "max_active_runs": r.max_active_runs,
                    "paused": r.paused,
                    "next_fire_at": iso(r.next_fire_at),
                    "last_fired_at": iso(r.last_fired_at),
                    "problem": r.problem,
                }
                for r in rows
            ]
        )
        return
    table_rows = [
        (
            r.workflow_name,
            r.problem or ("-" if r.schedule is None else r.schedule.describe()),
            "paused" if r.paused else "active",
            when(r.next_fire_at),
            when(r.last_fired_at),
            f"{r.overlap}/{r.max_active_runs}",
        )
        for r in rows
    ]
    emit_table(
        ("WORKFLOW", "SCHEDULE", "STATUS", "NEXT", "LAST", "OVERLAP"), table_rows
    )


@main.command("logs")
@FILE
@EXEC
@JSON
def logs(file: Target, exec_id: str, as_json: bool) -> None:
    """Print a run's workflow log lines (`ctx.log`)."""
    with reading(file) as reader:
        lines = reader.workflow_logs(exec_id)
    if as_json:
        emit_json(
            [
                {
                    "seq": ln.seq,
                    "at": to_text(ln.at),
                    "message": ln.message,
                    "marker": ln.marker,
                }
                for ln in lines
            ]
        )
        return
    if not lines:
        click.echo(
            f"harvest: run {escape(exec_id)} has no stored log lines: ctx.log lines "
            "are stored only when the runtime running it has a log policy, "
            "rt.set_workflow_log_policy(WorkflowLogPolicy()) (none is the default)",
            err=True,
        )
    for entry in lines:
        line(when(entry.at), f"[{entry.message}]" if entry.marker else entry.message)


@main.command("ledger")
@FILE
@EXEC
@JSON
def ledger(file: Target, exec_id: str, as_json: bool) -> None:
    """Print a run's LLM cost ledger and its totals."""
    with reading(file) as reader:
        rows = reader.llm_ledger(exec_id)
        totals = reader.llm_totals(exec_id)
    if as_json:
        emit_json(
            {
                "calls": [
                    {
                        "activity": r.activity,
                        "attempt": r.attempt,
                        "model": r.model,
                        "input_tokens": r.input_tokens,
                        "output_tokens": r.output_tokens,
                        "latency": r.latency,
                        "recorded_at": to_text(r.recorded_at),
                    }
                    for r in rows
                ],
                "totals": {
                    "calls": totals.calls,
                    "input_tokens": totals.input_tokens,
                    "output_tokens": totals.output_tokens,
                    "latency": totals.latency,
                },
            }
        )
        return
    body: list[tuple[Any, ...]] = [
        (
            r.activity,
            r.attempt,
            r.model,
            r.input_tokens,
            r.output_tokens,
            "-" if r.latency is None else f"{r.latency:.3f}s",
        )
        for r in rows
    ]
    body.append(
        (
            "TOTAL",
            "",
            f"{totals.calls} calls",
            totals.input_tokens,
            totals.output_tokens,
            f"{totals.latency:.3f}s",
        )
    )
    emit_table(("ACTIVITY", "ATTEMPT", "MODEL", "IN", "OUT", "LATENCY"), body)


main.add_command(runs, "list")
main.add_command(show, "describe")
