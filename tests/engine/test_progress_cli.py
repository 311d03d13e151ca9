"""`harvest events`, `harvest stream [--follow] [--offset]`, and summaries in `harvest show` / `runs --wide`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

from click.testing import CliRunner, Result

from harvest_engine import HarvestClient, SqliteRuntime, StartOptions
from harvest_engine.cli import main
from tests.engine.progress_child import chatter
from tests.engine.test_cli import ROOT
from tests.engine.test_progress_durable import _kill, _serve

if TYPE_CHECKING:
    from pathlib import Path

PYTHON_HARVEST = (sys.executable, "-m", "harvest_engine")


async def _written(path: Path) -> str:
    """A chatter run that wrote 0..3 and set its event, still running."""
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(chatter)
        exec_id = rt.start_workflow_with_options(
            "chatter", 2, StartOptions(summary="chatty run", details="writes numbers")
        ).exec_id
        await rt.run_until_blocked(exec_id)
        for _ in range(2):
            rt.send_signal(exec_id, "more", "go")
            await rt.run_until_blocked(exec_id)
    return str(exec_id)


def harvest(*args: str | Path) -> Result:
    """The `harvest` command in this process (the subprocess form is test_cli's)."""
    return CliRunner().invoke(main, [str(a) for a in args])


def test_events_stream_show_and_runs_print_a_runs_progress(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    exec_id = asyncio.run(_written(path))
    done = harvest("events", path, exec_id)
    assert done.exit_code == 0, done.output
    assert done.output.split() == ["ready", "true"]
    done = harvest("stream", path, exec_id, "out", "--offset", "2", "--json")
    assert [json.loads(x) for x in done.output.splitlines()] == [
        {"offset": 2, "value": 2},
        {"offset": 3, "value": 3},
    ]
    assert harvest("stream", path, exec_id, "out").output.split() == [
        "0",
        "0",
        "1",
        "1",
        "2",
        "2",
        "3",
        "3",
    ]
    shown = json.loads(harvest("show", path, exec_id, "--json").output)
    assert (shown["summary"], shown["details"]) == ("chatty run", "writes numbers")
    assert "chatty run" in harvest("runs", path, "--wide").output
    assert harvest("stream", path, exec_id, "out", "--offset", "-1").exit_code != 0


def test_stream_follow_prints_values_as_the_serving_process_writes_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "f.db"
    SqliteRuntime.open(path).close()
    server = _serve(path)
    follower: subprocess.Popen[str] | None = None
    try:
        with HarvestClient.open(path) as client:
            exec_id = asyncio.run(client.start_workflow("chatter", 1))
            env = dict(os.environ, PYTHONPATH=str(ROOT))
            follower = subprocess.Popen(
                [*PYTHON_HARVEST, "stream", str(path), str(exec_id), "out", "--follow"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            assert follower.stdout is not None
            asyncio.run(client.send_signal(exec_id, "more", "go"))
            assert follower.stdout.readline().split() == ["0", "0"]
            asyncio.run(client.send_signal(exec_id, "more", "go"))
            assert follower.stdout.readline().split() == ["1", "1"]
            asyncio.run(client.send_signal(exec_id, "more", "end"))
            out, err = follower.communicate(timeout=30)
            assert follower.returncode == 0, err
            assert out == ""
    finally:
        if follower is not None and follower.poll() is None:
            follower.kill()
            follower.communicate(timeout=30)
        _kill(server)
