"""The `harvest export` and `harvest import` commands: one run's history from one store to another.

`export` reads through a read-only reader (beside a live writer) and writes
the document the desktop inspector exports; `import` opens FILE as a writer
(a SQLite file's lock; one of a Postgres database's workers) and writes the
run already closed, in one transaction, or nothing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from harvest_engine.cli.app import EXEC, FILE, JSON, Target, codec, main, reading
from harvest_engine.cli.output import emit_json, failures, line
from harvest_engine.errors import InvalidHistoryFile
from harvest_engine.runtime.operating.history_transfer import (
    export_document,
    import_run,
    parse_document,
)
from harvest_engine.runtime.postgres_runtime import PostgresRuntime
from harvest_engine.runtime.sqlite_runtime import SqliteRuntime


@main.command("export")
@FILE
@EXEC
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the history to this file (default: standard output).",
)
def export(file: Target, exec_id: str, out: Path | None) -> None:
    """Write one run's history as JSON that `harvest import` and `harvest replay --history` read."""
    with reading(file) as reader:
        detail = reader.describe(exec_id)
        events = reader.load_history(exec_id)
    text = export_document(detail, events)
    if out is None:
        click.echo(text)
        return
    with failures():
        part = out.with_name(out.name + ".part")
        part.write_text(text + "\n", encoding="utf-8")
        os.replace(part, out)
    line("exported", detail.exec_id, f"{len(events)} events", out)


@main.command("import")
@FILE
@click.argument("history_file", type=click.Path(dir_okay=False, allow_dash=True))
@JSON
def import_(file: Target, history_file: str, as_json: bool) -> None:
    """Add a closed run from a `harvest export` file (`-` for standard input) to FILE.

    The run keeps its id and is a read-only record there: it reads and
    replays but never runs again. A run with that id already in FILE, or a
    file that is not one closed run's history, is refused; nothing is written.
    """
    with failures():
        if history_file == "-":
            raw = sys.stdin.buffer.read()
        else:
            try:
                raw = Path(history_file).read_bytes()
            except OSError as exc:
                raise InvalidHistoryFile(
                    path=history_file, reason=exc.strerror or str(exc)
                ) from exc
        run = parse_document(raw, history_file)
        opened = (
            PostgresRuntime.connect(file, codec=codec())
            if isinstance(file, str)
            else SqliteRuntime.open(file, codec=codec())
        )
        where = _redacted(file) if isinstance(file, str) else str(file)
        with opened as rt:
            exec_id = import_run(rt.store, run, where)
    if as_json:
        emit_json(
            {"exec_id": str(exec_id), "state": run.state, "events": len(run.events)}
        )
        return
    line("imported", exec_id, run.state, f"{len(run.events)} events")


def _redacted(dsn: str) -> str:
    """The DSN without its password; imported here, as psycopg is an optional extra."""
    from harvest_engine.store.postgres.connection import redact  # noqa: PLC0415

    return redact(dsn)
