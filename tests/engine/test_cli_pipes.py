"""A `harvest` command whose reader closed the pipe (`harvest tail FILE | head -1`) ends quietly."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import cli_flows
import pytest

from harvest_engine import (
    Schedule,
    SqliteRuntime,
    WorkflowLogPolicy,
    WorkflowSchedule,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A file with 300 completed runs (more output than a pipe holds), logs and a schedule."""
    folder = tmp_path_factory.mktemp("pipes")
    path = folder / "ops.db"
    rt = SqliteRuntime.open(path)
    rt.register_workflow(cli_flows.report)
    rt.register_activity_with_ledger(cli_flows.summarise, cli_flows.summarise_with_cost)
    rt.set_workflow_log_policy(WorkflowLogPolicy())
    first = rt.start_workflow_with_id("report", "weekly", "hello " * 2000)
    for i in range(300):
        rt.start_workflow("report", f"text {i}")
    asyncio.run(rt.run_until_idle())
    rt.upsert_schedule(
        WorkflowSchedule("report", Schedule.cron("0 3 * * *"), input="nightly")
    )
    rt.close()
    return {"path": path, "run": str(first), "folder": folder}


COMMANDS: list[tuple[str, ...]] = [
    ("runs", "{path}", "--limit", "1000"),
    ("runs", "{path}", "--limit", "1000", "--json"),
    ("show", "{path}", "{run}"),
    ("history", "{path}", "{run}", "--json"),
    ("counts", "{path}"),
    ("schedules", "{path}"),
    ("logs", "{path}", "{run}"),
    ("ledger", "{path}", "{run}"),
    ("tail", "{path}", "--limit", "300", "--max-seconds", "1"),
    ("tail", "{path}", "--limit", "300", "--max-seconds", "1", "--json"),
    ("export", "{path}", "{run}"),
    ("replay", "{path}", "{run}", "--module", "cli_flows"),
    ("--help",),
    ("runs", "--help"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:1] + c[3:]))
def test_a_command_whose_stdout_was_closed_ends_quietly(
    workspace: dict[str, Any], command: tuple[str, ...]
) -> None:
    """Like `yes | head -1`: no "Broken pipe" line, and not a storage failure's exit 7."""
    args = [part.format(**workspace) for part in command]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE)])
    proc = subprocess.Popen(
        [sys.executable, "-m", "harvest_engine", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=workspace["folder"],
    )
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before the first line
    _, err = proc.communicate(timeout=60)
    assert err.decode() == ""
    assert proc.returncode in (0, -signal.SIGPIPE)
