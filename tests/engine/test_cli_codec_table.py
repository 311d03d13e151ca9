"""Every `harvest` command that opens FILE (or a DSN) takes --codec, and says CodecRequired (exit 9) without it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
import pytest
from click.testing import CliRunner

from harvest_engine import SqliteRuntime, WorkflowContext, workflow
from harvest_engine.cli import main
from tests.engine.codec_keys import AES

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

EXEC = "EXEC"  # replaced by the encoded file's run id

# What follows FILE for each command that opens it. A new command that opens
# FILE must be added here (the first test says so).
ARGS: dict[str, list[str]] = {
    "attempts": [EXEC],
    "cancel": [EXEC, "why"],
    "cancel-many": ["--all", "--reason", "why"],
    "counts": [],
    "describe": [EXEC],
    "events": [EXEC],
    "export": [EXEC],
    "fork": [EXEC, "--from-step", "1"],
    "history": [EXEC],
    "http": ["--port", "0"],
    "import": ["HISTORY"],
    "ledger": [EXEC],
    "list": [],
    "logs": [EXEC],
    "pause": [EXEC, "why"],
    "pause-many": ["--all"],
    "purge": ["--older-than", "1d"],
    "query": [EXEC, "peek"],
    "queues": [],
    "replay": [EXEC, "--module", __name__],
    "reset": [EXEC, "--reason", "why"],
    "reset-many": ["--all", "--reason", "why"],
    "result": [EXEC],
    "runs": [],
    "schedule backfill": [
        "kept",
        "--start",
        "2030-01-01T00:00:00+00:00",
        "--end",
        "2030-01-02T00:00:00+00:00",
    ],
    "schedule delete": ["kept"],
    "schedule pause": ["kept"],
    "schedule resume": ["kept"],
    "schedule trigger": ["kept"],
    "schedule upsert": ["kept", "--every", "1h"],
    "schedules": [],
    "show": [EXEC],
    "signal": [EXEC, "go", "1"],
    "signal-many": ["go", "1", "--all"],
    "start": ["kept", "{}"],
    "stream": [EXEC, "k"],
    "tail": [],
    "terminate": [EXEC, "why"],
    "terminate-many": ["--all", "--reason", "why"],
    "unpause": [EXEC],
    "unpause-many": ["--all"],
    "update": [EXEC, "bump", "1"],
    "withdraw": ["no-such-command"],
}


def file_commands(
    group: click.Group = main, prefix: str = ""
) -> Iterator[tuple[str, click.Command]]:
    """Every command under `group` (by its full name) that takes a FILE argument."""
    for name, command in sorted(group.commands.items()):
        full = f"{prefix}{name}"
        if isinstance(command, click.Group):
            yield from file_commands(command, f"{full} ")
        elif any(
            isinstance(p, click.Argument) and p.name == "file" for p in command.params
        ):
            yield full, command


@workflow
async def kept(ctx: WorkflowContext, kept: dict[str, str]) -> dict[str, str]:
    return kept


def test_every_file_command_takes_codec_and_is_in_the_table() -> None:
    found = dict(file_commands())
    assert sorted(found) == sorted(ARGS)
    for name, command in found.items():
        options = [o for p in command.params for o in p.opts]
        assert "--codec" in options, f"harvest {name} has no --codec"


@pytest.fixture(scope="module")
def encoded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """A file written with the AES codec, one run in it; (path, its run id, a history to import)."""
    folder = tmp_path_factory.mktemp("codec")
    path = folder / "secret.db"
    with SqliteRuntime.open(path, codec=AES) as rt:
        rt.register_workflow(kept)
        exec_id = str(rt.start_workflow("kept", {"secret": "s"}))
    plain, history = folder / "plain.db", folder / "history.json"
    with SqliteRuntime.open(plain) as rt:
        rt.register_workflow(kept)
        other = str(rt.start_workflow("kept", {"secret": "s"}))
        rt.terminate(other, "closed, so it can be imported")
    exported = CliRunner().invoke(
        main, ["export", str(plain), other, "-o", str(history)]
    )
    assert exported.exit_code == 0, exported.output
    return path, exec_id, history


@pytest.mark.parametrize("name", sorted(ARGS))
def test_without_its_codec_each_command_exits_9_and_names_codec(
    name: str,
    encoded: tuple[Path, str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HARVEST_CODEC", raising=False)
    path, exec_id, history = encoded
    args = [
        {EXEC: exec_id, "HISTORY": str(history)}.get(arg, arg) for arg in ARGS[name]
    ]
    got = CliRunner().invoke(main, [*name.split(), str(path), *args])
    assert got.exit_code == 9, got.output
    assert "--codec" in got.output
