"""The `harvest` command's error lines say what to do next (issue 24 item 13)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harvest_engine import (
    Schedule,
    SqliteRuntime,
    UnknownWorkflow,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.errors import UnknownActivity

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def harvest(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(HERE)]))
    return subprocess.run(
        [sys.executable, "-m", "harvest_engine", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


@workflow
async def greet(ctx: WorkflowContext, name: str) -> str:
    await ctx.wait_for_signal("go")
    return f"hello {name}"


@activity
def shout(text: str) -> str:
    return text.upper()


@workflow
async def loud(ctx: WorkflowContext, name: str) -> str:
    return await ctx.execute_activity(shout, name)


@pytest.fixture
def parked(tmp_path: Path) -> dict[str, Any]:
    """A file with one greet run terminated with a reason and one completed quietly."""
    path = tmp_path / "f.db"
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(greet)
        ended = rt.start_workflow("greet", "ann")
        asyncio.run(rt.run_until_blocked(ended))
        rt.terminate(ended, "operator said so")
    return {"path": path, "ended": str(ended)}


def test_an_unquoted_text_input_is_shown_quoted(tmp_path: Path) -> None:
    done = harvest("start", tmp_path / "f.db", "greet", "bob")
    assert done.returncode == 2
    assert """use '"bob"'""" in done.stderr


def test_an_unregistered_workflow_names_what_is_registered() -> None:
    with SqliteRuntime.open_in_memory() as rt:
        rt.register_workflow(greet)
        rt.register_workflow(loud)
        with pytest.raises(UnknownWorkflow) as caught:
            rt.start_workflow("gret", "ann")
        assert "registered: 'greet', 'loud'" in str(caught.value)
        assert caught.value.registered == ("greet", "loud")  # type: ignore[attr-defined]


def test_an_unregistered_activity_names_what_is_registered() -> None:
    with SqliteRuntime.open_in_memory() as rt:
        rt.register_workflow(loud)
        run = rt.start_workflow("loud", "ann")
        with pytest.raises(UnknownActivity) as caught:
            asyncio.run(rt.run_until_blocked(run))
        assert "'shout' is not registered (none is registered" in str(caught.value)


@pytest.mark.parametrize(
    ("expression", "field"),
    [
        ("61 * * * *", "the minute field '61'"),
        ("0 25 * * *", "the hour field '25'"),
        ("0 0 32 * *", "the day-of-month field '32'"),
        ("0 0 * 13 *", "the month field '13'"),
        ("0 0 * * 9", "the day-of-week field '9'"),
    ],
)
def test_a_bad_cron_field_is_named(expression: str, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Schedule.cron(expression)


def test_logs_of_a_run_without_a_log_policy_says_so(parked: dict[str, Any]) -> None:
    done = harvest("logs", parked["path"], parked["ended"])
    assert done.returncode == 0
    assert done.stdout == ""
    assert "log policy" in done.stderr
    assert "set_workflow_log_policy" in done.stderr


def test_result_of_a_terminated_run_gives_its_reason(parked: dict[str, Any]) -> None:
    done = harvest("result", parked["path"], parked["ended"])
    assert done.returncode == 1
    assert "ended TERMINATED: operator said so" in done.stderr
    as_json = harvest("result", parked["path"], parked["ended"], "--json")
    assert json.loads(as_json.stdout) == {
        "state": "TERMINATED",
        "reason": "operator said so",
    }


def test_a_held_file_gives_shell_advice_not_python(parked: dict[str, Any]) -> None:
    with SqliteRuntime.open(parked["path"]):
        done = harvest("purge", parked["path"], "--older-than", "1d")
    assert done.returncode == 4
    assert "SqliteReader" not in done.stderr
    assert "harvest runs" in done.stderr
    assert "stop that process" in done.stderr
