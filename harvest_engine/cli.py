"""The `harvest` command line: operator reads of a database file through SqliteReader."""

from __future__ import annotations

import importlib
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harvest_engine import __version__, payloads
from harvest_engine.authoring import WorkflowInfo
from harvest_engine.durations import format_duration, to_timedelta
from harvest_engine.errors import HarvestError
from harvest_engine.events import HistoryEvent, history_from_json, history_to_json
from harvest_engine.filters import ExecutionFilter
from harvest_engine.runtime.runtime import SqliteRuntime
from harvest_engine.store.reader import SqliteReader
from harvest_engine.timestamps import from_text, to_text
from harvest_engine.workflow.replay import WorkflowReplayer

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from datetime import datetime

    from harvest_engine.store.records import ExecutionDetail, ExecutionSummary, Stored

FILE = click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
EXEC = click.argument("exec_id")
JSON = click.option(
    "--json", "as_json", is_flag=True, help="Print JSON instead of a table."
)


class HarvestFailure(click.ClickException):
    """An engine error shown as one line, exit status 1."""

    def show(self, file: Any = None) -> None:
        """Print ``harvest: <message>`` to stderr."""
        click.echo(f"harvest: {self.format_message()}", err=True)


MIN_TAIL_INTERVAL_S = 0.05
"""`tail` polls no faster than this: a zero interval would spin a core for nothing."""


@contextmanager
def failures() -> Iterator[None]:
    """Turn engine and value errors into a one-line message and exit status 1."""
    try:
        yield
    except (HarvestError, ValueError) as exc:
        raise HarvestFailure(str(exc)) from exc


@contextmanager
def reading(path: Path) -> Iterator[SqliteReader]:
    """A reader on `path`, with errors as one-line failures."""
    with failures(), SqliteReader.open(path) as reader:
        yield reader


# -- rendering -------------------------------------------------------------------


def _when(value: datetime | None) -> str:
    return "-" if value is None else to_text(value).replace("T", " ")[:19]


def _stored(value: Stored) -> Any:
    if value.is_unreadable:
        return {"unreadable": getattr(value, "reason", "")}
    return value.value


def _short(value: Any, width: int = 40) -> str:
    text = payloads.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= width else text[: width - 1] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns padded to their widest cell, for a person to read."""
    cells = [[str(c) for c in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in cells
    ]
    return "\n".join(lines)


def summary_json(run: ExecutionSummary) -> dict[str, Any]:
    """A listed run as a JSON object."""
    return {
        "exec_id": str(run.exec_id),
        "workflow_name": run.workflow_name,
        "workflow_id": run.workflow_id,
        "state": run.state,
        "attempt": run.attempt,
        "started_at": None if run.started_at is None else to_text(run.started_at),
        "closed_at": None if run.closed_at is None else to_text(run.closed_at),
        "memo": _stored(run.memo),
        "search_attributes": _stored(run.search_attributes),
    }


def detail_json(run: ExecutionDetail) -> dict[str, Any]:
    """A described run as a JSON object, payloads included."""
    data = summary_json(run)
    data.update(
        input=_stored(run.input),
        output=_stored(run.output),
        error=_stored(run.error),
        parent_exec_id=None if run.parent_exec_id is None else str(run.parent_exec_id),
        predecessor=None if run.predecessor is None else str(run.predecessor),
        successor=None if run.successor is None else str(run.successor),
        cancel_requested=run.cancel_requested,
        deadline=None if run.deadline is None else to_text(run.deadline),
    )
    return data


def emit_json(value: Any) -> None:
    """Print one JSON document."""
    click.echo(payloads.dumps(value))


# -- the command group -------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, message="harvest %(version)s")
def main() -> None:
    """Inspect and operate a harvest database file.

    Reads go through a read-only connection that takes no lock, so they work
    beside a live writer. Only `purge` opens the file as the writer.
    """


def _attr(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise click.BadParameter(f"{text!r}: use KEY=VALUE", param_hint="--attr")
    try:
        value = payloads.loads(raw)
    except ValueError:
        value = raw
    return key, value


def _time_option(text: str | None, what: str) -> datetime | None:
    if text is None:
        return None
    try:
        return from_text(text)
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not an ISO-8601 time", param_hint=what
        ) from None


@main.command("runs")
@FILE
@click.option("--workflow", "workflow_name", help="Only runs of this workflow.")
@click.option(
    "--state", "states", multiple=True, help="Only runs in this state (repeatable)."
)
@click.option("--workflow-id", help="Only runs with exactly this workflow id.")
@click.option("--id-prefix", help="Only runs whose workflow id starts with this.")
@click.option("--after", help="Started at or after this ISO-8601 time.")
@click.option("--before", help="Started before this ISO-8601 time.")
@click.option(
    "--attr", "attrs", multiple=True, help="Search attribute KEY=VALUE (repeatable)."
)
@click.option(
    "--limit", type=int, default=50, show_default=True, help="Rows per page (1-1000)."
)
@click.option("--cursor", type=int, help="Continue from a previous page's `next`.")
@JSON
def runs(
    file: Path,
    workflow_name: str | None,
    states: tuple[str, ...],
    workflow_id: str | None,
    id_prefix: str | None,
    after: str | None,
    before: str | None,
    attrs: tuple[str, ...],
    limit: int,
    cursor: int | None,
    as_json: bool,
) -> None:
    """List runs, newest first."""
    with reading(file) as reader:
        flt = ExecutionFilter().limit(limit).before(cursor)
        if workflow_name is not None:
            flt = flt.workflow_name(workflow_name)
        if states:
            flt = flt.state(*(s.upper() for s in states))
        if workflow_id is not None:
            flt = flt.workflow_id(workflow_id)
        if id_prefix is not None:
            flt = flt.workflow_id_prefix(id_prefix)
        started_from = _time_option(after, "--after")
        if started_from is not None:
            flt = flt.started_after(started_from)
        started_until = _time_option(before, "--before")
        if started_until is not None:
            flt = flt.started_before(started_until)
        for text in attrs:
            flt = flt.search_attribute(*_attr(text))
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
            r.state,
            _when(r.started_at),
            _when(r.closed_at),
        )
        for r in page.executions
    ]
    click.echo(
        table(
            ("EXEC ID", "WORKFLOW", "WORKFLOW ID", "STATE", "STARTED", "CLOSED"), rows
        )
    )
    if page.next is not None:
        click.echo(f"more: --cursor {page.next}")


@main.command("show")
@FILE
@EXEC
@JSON
def show(file: Path, exec_id: str, as_json: bool) -> None:
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
        }
        for a in attempts
    ]
    if as_json:
        emit_json(data)
        return
    for key, value in data.items():
        shown = (
            value
            if isinstance(value, str)
            else ("-" if value is None else _short(value, 70))
        )
        click.echo(f"{key + ':':<18}{shown}")


@main.command("history")
@FILE
@EXEC
@JSON
def history(file: Path, exec_id: str, as_json: bool) -> None:
    """Print a run's history; `--json` writes what `harvest replay --history` reads."""
    with reading(file) as reader:
        events = reader.load_history(exec_id)
    if as_json:
        click.echo(history_to_json(events))
        return
    rows = [(e.seq, _when(e.at), e.type, _short(e.summary(), 60)) for e in events]
    click.echo(table(("SEQ", "AT", "TYPE", "DETAIL"), rows))


@main.command("counts")
@FILE
@JSON
def counts(file: Path, as_json: bool) -> None:
    """How many runs are in each state."""
    with reading(file) as reader:
        by_state = reader.counts_by_state()
    if as_json:
        emit_json(by_state)
        return
    click.echo(table(("STATE", "RUNS"), sorted(by_state.items())))


@main.command("schedules")
@FILE
@JSON
def schedules(file: Path, as_json: bool) -> None:
    """List the stored schedules."""
    with reading(file) as reader:
        rows = reader.list_schedules()
    if as_json:
        emit_json(
            [
                {
                    "workflow_name": r.workflow_name,
                    "schedule": None if r.schedule is None else r.schedule.to_json(),
                    "input": _stored(r.input),
                    "overlap": r.overlap,
                    "max_active_runs": r.max_active_runs,
                    "paused": r.paused,
                    "next_fire_at": None
                    if r.next_fire_at is None
                    else to_text(r.next_fire_at),
                    "last_fired_at": None
                    if r.last_fired_at is None
                    else to_text(r.last_fired_at),
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
            _when(r.next_fire_at),
            _when(r.last_fired_at),
            f"{r.overlap}/{r.max_active_runs}",
        )
        for r in rows
    ]
    click.echo(
        table(("WORKFLOW", "SCHEDULE", "STATUS", "NEXT", "LAST", "OVERLAP"), table_rows)
    )


@main.command("logs")
@FILE
@EXEC
@JSON
def logs(file: Path, exec_id: str, as_json: bool) -> None:
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
    for line in lines:
        click.echo(
            f"{_when(line.at)}  {'[' + line.message + ']' if line.marker else line.message}"
        )


@main.command("ledger")
@FILE
@EXEC
@JSON
def ledger(file: Path, exec_id: str, as_json: bool) -> None:
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
    click.echo(table(("ACTIVITY", "ATTEMPT", "MODEL", "IN", "OUT", "LATENCY"), body))


@main.command("tail")
@FILE
@click.option(
    "--interval", default="1s", show_default=True, help="How often to look for commits."
)
@click.option(
    "--limit", type=int, default=20, show_default=True, help="Newest runs to watch."
)
@click.option(
    "--max-seconds", type=float, help="Stop after this long (default: until Ctrl-C)."
)
def tail(file: Path, interval: str, limit: int, max_seconds: float | None) -> None:
    """Follow another process's writes: print each run that starts or changes state."""
    with failures():
        pause = to_timedelta(interval, what="--interval").total_seconds()
        if pause < MIN_TAIL_INTERVAL_S:
            raise ValueError(
                f"--interval must be at least {MIN_TAIL_INTERVAL_S * 1000:.0f}ms"
            )
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    with reading(file) as reader:
        seen: dict[str, str] = {}
        version: int | None = None
        flt = ExecutionFilter().limit(limit)
        try:
            while deadline is None or time.monotonic() < deadline:
                current = reader.data_version()
                if current != version:
                    version = current
                    for run in reversed(reader.list_executions(flt).executions):
                        key = str(run.exec_id)
                        if seen.get(key) != run.state:
                            seen[key] = run.state
                            click.echo(
                                f"{_when(run.closed_at or run.started_at)}  {run.state:<16} "
                                f"{run.workflow_name}  {key}",
                                nl=True,
                            )
                    sys.stdout.flush()
                time.sleep(pause)
        except KeyboardInterrupt:
            return


@main.command("purge")
@FILE
@click.option(
    "--older-than",
    required=True,
    help="Remove terminal runs closed longer ago (e.g. 30d).",
)
@JSON
def purge(file: Path, older_than: str, as_json: bool) -> None:
    """Remove old terminal runs and all their rows (opens the file as the writer)."""
    with failures():
        window = to_timedelta(older_than, what="--older-than")
        if not file.is_file():
            raise HarvestFailure(f"{file}: no such file")
        # The writer would put a fresh schema into an empty or zero-byte file;
        # purge is for an existing harvest file, so refuse what a reader refuses.
        SqliteReader.open(file).close()
        with SqliteRuntime.open(file) as rt:
            removed = rt.purge_terminal(window)
    if as_json:
        emit_json({"removed": removed})
    else:
        click.echo(
            f"removed {removed} run(s) closed more than {format_duration(window)} ago"
        )


@main.command("replay")
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.argument("exec_id", required=False)
@click.option(
    "--history",
    "history_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A history exported with `harvest history --json` (instead of FILE EXEC_ID).",
)
@click.option(
    "--module",
    "modules",
    multiple=True,
    required=True,
    help="Import this module to find the @workflow functions (repeatable).",
)
def replay(
    file: Path | None,
    exec_id: str | None,
    history_file: Path | None,
    modules: tuple[str, ...],
) -> None:
    """Replay a stored history against today's workflow code."""
    with failures():
        events = _history_for_replay(file, exec_id, history_file)
        workflows = _workflows_in(modules)
        result = WorkflowReplayer(workflows).replay(events)
    state = "closed" if result.closed else "still open"
    click.echo(f"ok: {result.workflow_name} replayed {result.events} events ({state})")


def _history_for_replay(
    file: Path | None, exec_id: str | None, history_file: Path | None
) -> list[HistoryEvent]:
    if history_file is not None:
        if file is not None:
            raise HarvestFailure("give either FILE EXEC_ID or --history, not both")
        return history_from_json(history_file.read_bytes())
    if file is None or exec_id is None:
        raise HarvestFailure("give FILE EXEC_ID, or --history HISTORY.json")
    with SqliteReader.open(file) as reader:
        return reader.load_history(exec_id)


def _workflows_in(modules: Sequence[str]) -> list[WorkflowInfo]:
    # A console script's sys.path starts at its own folder: let `--module`
    # name a module of the folder the operator runs it from.
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    found: list[WorkflowInfo] = []
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise HarvestFailure(f"cannot import --module {name}: {exc}") from exc
        found += [
            obj.info
            for obj in vars(module).values()
            if isinstance(getattr(obj, "info", None), WorkflowInfo)
        ]
    if not found:
        raise HarvestFailure(f"no @workflow functions in {', '.join(modules)}")
    return found


main.add_command(runs, "list")
main.add_command(show, "describe")
