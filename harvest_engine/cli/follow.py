"""`harvest tail`: follow another process's writes, one line per run that starts or changes state."""

from __future__ import annotations

import sys
import time

import click

from harvest_engine.cli.app import FILE, JSON, Target, main, reading
from harvest_engine.cli.output import emit_json, failures, line
from harvest_engine.cli.render import iso, when
from harvest_engine.durations import to_timedelta
from harvest_engine.filters import ExecutionFilter

MIN_TAIL_INTERVAL_S = 0.05
"""`tail` polls no faster than this: a zero interval would spin a core for nothing."""


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
@JSON
def tail(
    file: Target, interval: str, limit: int, max_seconds: float | None, as_json: bool
) -> None:
    """Follow another process's writes: print each run that starts or changes state.

    With `--json`, one JSON object per line (JSON Lines).
    """
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
                        if seen.get(key) == run.state:
                            continue
                        seen[key] = run.state
                        if as_json:
                            emit_json(
                                {
                                    "at": iso(run.closed_at or run.started_at),
                                    "state": run.state,
                                    "workflow_name": run.workflow_name,
                                    "exec_id": key,
                                }
                            )
                        else:
                            line(
                                when(run.closed_at or run.started_at),
                                f"{run.state:<16}",
                                run.workflow_name,
                                key,
                                sep=" ",
                            )
                    sys.stdout.flush()
                time.sleep(pause)
        except KeyboardInterrupt:
            return
