"""The `harvest` command on a Postgres database: FILE may be a postgresql:// URL."""

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
    ActivityContext,
    ManualClock,
    PostgresRuntime,
    WorkflowContext,
    activity,
    workflow,
)

pytestmark = pytest.mark.slow  # each command is a fresh interpreter

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@activity
def shout(ctx: ActivityContext, text: str) -> str:
    return text.upper()


@workflow
async def one_shout(ctx: WorkflowContext, text: str) -> str:
    return await ctx.execute_activity(shout, text)


def harvest(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "harvest_engine", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )


def ok_json(*args: str) -> Any:
    done = harvest(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def test_the_read_commands_and_purge_open_a_postgres_url(pg_dsn: str) -> None:
    clock = ManualClock()
    with PostgresRuntime.connect(pg_dsn, clock=clock) as rt:
        rt.register_workflow(one_shout)
        rt.register_activity(shout)
        exec_id = str(rt.start_workflow("one_shout", "hi"))
        await rt.run_until_blocked(exec_id)
        history = [e.type for e in rt.load_history(exec_id)]

    (run,) = ok_json("runs", pg_dsn)["executions"]
    assert (run["exec_id"], run["state"]) == (exec_id, "COMPLETED")
    assert ok_json("show", pg_dsn, exec_id)["output"] == "HI"
    events = ok_json("history", pg_dsn, exec_id)["events"]
    assert [e["type"] for e in events] == history
    assert ok_json("counts", pg_dsn)["COMPLETED"] == 1
    assert ok_json("purge", pg_dsn, "--older-than", "1d") == {"removed": 0}
    replayed = harvest(
        "replay", pg_dsn, exec_id, "--module", "tests.engine.test_cli_postgres"
    )
    assert replayed.returncode == 0, replayed.stderr
    assert "ok: one_shout replayed" in replayed.stdout


def test_a_missing_database_is_one_line_naming_it_and_exit_5(pg_dsn: str) -> None:
    missing = pg_dsn.replace("/t", "/nosuchdb_t", 1)
    done = harvest("runs", missing)
    assert done.returncode == 5, done.stderr
    assert "nosuchdb_t" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


async def test_start_and_result_talk_to_a_serving_postgres_worker(pg_dsn: str) -> None:
    rt = PostgresRuntime.connect(pg_dsn, worker_id="server")
    rt.register_workflow(one_shout)
    rt.register_activity(shout)
    stop = asyncio.Event()
    serving = asyncio.create_task(rt.serve(stop))
    try:
        started = await asyncio.to_thread(
            harvest, "start", pg_dsn, "one_shout", '"hi"', "--timeout", "30s"
        )
        assert started.returncode == 0, started.stderr
        exec_id = started.stdout.strip()
        done = await asyncio.to_thread(
            harvest, "result", pg_dsn, exec_id, "--timeout", "30s"
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == "HI"
    finally:
        stop.set()
        await serving
        rt.close()
