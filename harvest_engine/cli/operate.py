"""The `harvest` commands that act rather than read: purge (as the writer) and replay."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harvest_engine.authoring import WorkflowInfo
from harvest_engine.cli.app import (
    CODEC,
    FILE,
    JSON,
    WORKFLOW_ID,
    Target,
    codec,
    main,
    run_target,
    target,
)
from harvest_engine.cli.output import (
    EXIT_NOT_FOUND,
    HarvestFailure,
    emit_json,
    failures,
    line,
)
from harvest_engine.durations import format_duration, to_timedelta
from harvest_engine.events import HistoryEvent, history_from_json
from harvest_engine.runtime.postgres_runtime import PostgresRuntime
from harvest_engine.runtime.sqlite_runtime import SqliteRuntime
from harvest_engine.store.postgres.reader import PostgresReader
from harvest_engine.store.sqlite.reader import SqliteReader
from harvest_engine.workflow.replay import WorkflowReplayer

if TYPE_CHECKING:
    from collections.abc import Sequence


@main.command("purge")
@FILE
@click.option(
    "--older-than",
    required=True,
    help="Remove terminal runs closed longer ago (e.g. 30d).",
)
@JSON
def purge(file: Target, older_than: str, as_json: bool) -> None:
    """Remove old terminal runs and all their rows (opens the file as the writer)."""
    with failures():
        window = to_timedelta(older_than, what="--older-than")
        if isinstance(file, str):
            # A Postgres database: one more worker beside the serving ones. Like
            # a file, a database without a harvest schema is refused, not made.
            PostgresReader.connect(file, codec=codec()).close()
            with PostgresRuntime.connect(file, codec=codec()) as peer:
                removed = peer.purge_terminal(window)
        else:
            if not file.exists() and not file.is_symlink():
                raise HarvestFailure(f"{file}: no such file", EXIT_NOT_FOUND)
            # The writer would put a fresh schema into an empty or zero-byte file;
            # purge is for an existing harvest file, so refuse what a reader refuses.
            SqliteReader.open(file, codec=codec()).close()
            with SqliteRuntime.open(file, codec=codec()) as rt:
                removed = rt.purge_terminal(window)
    if as_json:
        emit_json({"removed": removed})
    else:
        line(f"removed {removed} run(s) closed more than {format_duration(window)} ago")


@main.command("replay")
@click.argument("file", required=False, callback=target)
@CODEC
@click.argument("exec_id", required=False)
@click.option(
    WORKFLOW_ID,
    "workflow_id",
    default=None,
    metavar="ID",
    help="The run by its workflow id instead of EXEC_ID (RUNNING, else the newest).",
)
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
@JSON
def replay(
    file: Target | None,
    history_file: Path | None,
    modules: tuple[str, ...],
    as_json: bool,
    exec_id: str | None = None,
    workflow_id: str | None = None,
) -> None:
    """Replay a stored history against today's workflow code."""
    if workflow_id is not None and file is not None and history_file is None:
        exec_id = run_target(file, None, workflow_id)
    with failures():
        events = _history_for_replay(file, exec_id, history_file)
        workflows = _workflows_in(modules)
        result = WorkflowReplayer(workflows).replay(events)
    if as_json:
        emit_json(
            {
                "ok": True,
                "workflow_name": result.workflow_name,
                "events": result.events,
                "closed": result.closed,
            }
        )
        return
    state = "closed" if result.closed else "still open"
    line(f"ok: {result.workflow_name} replayed {result.events} events ({state})")


def _history_for_replay(
    file: Target | None, exec_id: str | None, history_file: Path | None
) -> list[HistoryEvent]:
    if history_file is not None:
        if file is not None:
            raise HarvestFailure("give either FILE EXEC_ID or --history, not both")
        return history_from_json(history_file.read_bytes())
    if file is None or exec_id is None:
        raise HarvestFailure("give FILE EXEC_ID, or --history HISTORY.json")
    reader = (
        PostgresReader.connect(file, codec=codec())
        if isinstance(file, str)
        else SqliteReader.open(file, codec=codec())
    )
    with reader:
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
