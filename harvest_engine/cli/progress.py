"""`harvest events` and `harvest stream`: a run's progress, read from the file or followed live."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any

import click

from harvest_engine import payloads
from harvest_engine.cli.app import EXEC, FILE, JSON, Target, codec, main, reading
from harvest_engine.cli.output import emit_json, failures, line
from harvest_engine.client import HarvestClient

if TYPE_CHECKING:
    from harvest_engine.store.postgres.reader import PostgresReader
    from harvest_engine.store.sqlite.reader import SqliteReader


@main.command("events")
@FILE
@EXEC
@JSON
def events(file: Target, exec_id: str, as_json: bool) -> None:
    """Every event the run set (`ctx.set_event`), one KEY  VALUE line each (VALUE as JSON)."""
    with reading(file) as reader:
        found = reader.events(exec_id)
    if as_json:
        emit_json(found)
        return
    for key, value in found.items():
        line(key, payloads.dumps(value))


@main.command("stream")
@FILE
@EXEC
@click.argument("key")
@click.option(
    "--offset", type=int, default=0, show_default=True, help="Start at this offset."
)
@click.option(
    "--follow",
    is_flag=True,
    help="Wait for new values until the stream closes or the run ends "
    "(a serving process wakes the reader at each commit).",
)
@JSON
def stream(
    file: Target, exec_id: str, key: str, offset: int, follow: bool, as_json: bool
) -> None:
    """Print stream KEY of a run: one OFFSET  VALUE line per value (VALUE as JSON).

    Without --follow, the values stored now. With --json, JSON Lines of
    {"offset", "value"}. To resume, pass the last offset seen + 1.
    """
    with failures():
        if offset < 0:
            raise ValueError(f"--offset is a whole number >= 0, got {offset}")
    if follow:
        _follow(file, exec_id, key, offset, as_json)
        return
    with reading(file) as reader:
        for position, value in _stored(reader, exec_id, key, offset):
            _print(position, value, as_json)


def _stored(
    reader: SqliteReader | PostgresReader, exec_id: str, key: str, offset: int
) -> list[tuple[int, Any]]:
    out: list[tuple[int, Any]] = []
    while True:
        items = reader.stream_items(exec_id, key, offset)
        for item in items:
            if item.closed:
                return out
            out.append((item.position, item.value))
            offset = item.position + 1
        if not items:
            return out


def _follow(file: Target, exec_id: str, key: str, offset: int, as_json: bool) -> None:
    async def read(client: HarvestClient) -> None:
        async for position, value in client.read_stream(exec_id, key, offset=offset):
            _print(position, value, as_json)

    with failures():
        opened = (
            HarvestClient.connect(file, codec=codec())
            if isinstance(file, str)
            else HarvestClient.open(file, codec=codec())
        )
        with opened as client:
            try:
                asyncio.run(read(client))
            except KeyboardInterrupt:
                return


def _print(position: int, value: Any, as_json: bool) -> None:
    if as_json:
        emit_json({"offset": position, "value": value})
    else:
        line(position, payloads.dumps(value))
    sys.stdout.flush()
