"""A writer for the group-commit crash test: many runs driven in batched passes.

    batch_writer.py start  DB FOLDER N   start N runs of `three_steps` and drive them
    batch_writer.py resume DB FOLDER     reopen, drive every run to its end

Every activity body appends ``{"exec_id", "step", "pid"}`` to
``FOLDER/bodies.log``. In `start`, the second body of the second run prints
``blocked <exec_id>`` on stdout (after the decision that claimed it
committed, before its completion can) and waits for ``FOLDER/release``,
which the test never writes: the test kills the writer on that line.
`resume` prints one JSON object: each run's outcome output (or state).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from harvest_engine import (
    ActivityContext,
    ExecutionOutcome,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)

FOLDER = Path(".")
BLOCK_LIMIT_SECONDS = 60.0


@activity
async def bump(ctx: ActivityContext, value: dict[str, Any]) -> dict[str, Any]:
    info = ctx.info()
    with (FOLDER / "bodies.log").open("a") as log:
        log.write(
            json.dumps(
                {"exec_id": info.exec_id, "step": value["step"], "pid": os.getpid()}
            )
            + "\n"
        )
    if value["block"] and value["step"] == 2 and not (FOLDER / "release").exists():
        print(f"blocked {info.exec_id}", flush=True)
        for _ in range(int(BLOCK_LIMIT_SECONDS / 0.05)):
            if (FOLDER / "release").exists():
                break
            await asyncio.sleep(0.05)
    return {**value, "x": value["x"] + 1}


@workflow
async def three_steps(ctx: WorkflowContext, start: dict[str, Any]) -> int:
    value = {"x": start["x"], "block": start["block"], "step": 0}
    for step in (1, 2, 3):
        value = await ctx.execute_activity(bump, {**value, "step": step})
    return int(value["x"])


def _open(db: Path) -> SqliteRuntime:
    rt = SqliteRuntime.open(db)
    rt.register_workflow(three_steps)
    rt.register_activity(bump)
    return rt


async def _start(db: Path, runs: int) -> None:
    with _open(db) as rt:
        for i in range(runs):
            rt.start_workflow("three_steps", {"x": i * 10, "block": i == 1})
        await rt.run_until_idle()


async def _resume(db: Path) -> None:
    with _open(db) as rt:
        await rt.run_until_idle()
        report: dict[str, Any] = {}
        page = rt.list_executions()
        for row in page.executions:
            outcome = rt.outcome(row.exec_id)
            report[str(row.exec_id)] = (
                outcome.output
                if isinstance(outcome, ExecutionOutcome.Completed)
                else type(outcome).__name__
            )
        print(json.dumps(report), flush=True)


def main() -> None:
    """Parse the command line and run one session."""
    global FOLDER
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["start", "resume"])
    parser.add_argument("db", type=Path)
    parser.add_argument("folder", type=Path)
    parser.add_argument("runs", type=int, nargs="?", default=0)
    args = parser.parse_args()
    FOLDER = args.folder
    if args.command == "start":
        asyncio.run(_start(args.db, args.runs))
        sys.exit("the blocked body was never killed")
    asyncio.run(_resume(args.db))


if __name__ == "__main__":
    main()
