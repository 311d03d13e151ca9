"""A writer process for the crash tests: start or resume a crash_flows run on a file.

    crash_writer.py start  DB FOLDER WORKFLOW [--park]
    crash_writer.py resume DB FOLDER EXEC_ID [--signal NAME JSON]

`start` writes the new run's id to ``FOLDER/exec_id`` before driving it.
Both print one JSON document: the exec id, the final RunState's class name
and its output. With ``--park`` the process, once the run blocks, writes
``FOLDER/parked`` and waits to be killed (bounded).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import crash_flows

from harvest_engine import RunState, SqliteRuntime


def _report(exec_id: Any, state: RunState) -> str:
    output = state.output if isinstance(state, RunState.Completed) else None
    return json.dumps(
        {
            "exec_id": str(exec_id),
            "state": type(state).__name__.rpartition(".")[2].lstrip("_"),
            "output": output,
        }
    )


async def _start(db: Path, folder: Path, name: str, park: bool) -> None:
    with SqliteRuntime.open(db) as rt:
        crash_flows.register(rt)
        exec_id = rt.start_workflow(name, {"dir": str(folder)})
        crash_flows.announce(folder / "exec_id", str(exec_id))
        state = await crash_flows.drive(rt, exec_id)
        print(_report(exec_id, state), flush=True)
        if park:
            crash_flows.announce(folder / "parked", "parked")
            await asyncio.sleep(crash_flows.BLOCK_LIMIT_SECONDS)


async def _resume(db: Path, exec_id: str, signal: list[str] | None) -> None:
    with SqliteRuntime.open(db) as rt:
        crash_flows.register(rt)
        if signal is not None:
            rt.send_signal(exec_id, signal[0], json.loads(signal[1]))
        state = await crash_flows.drive(rt, exec_id)
        print(_report(exec_id, state), flush=True)


def main() -> None:
    """Parse the command line and run one session."""
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start")
    start.add_argument("db", type=Path)
    start.add_argument("folder", type=Path)
    start.add_argument("workflow")
    start.add_argument("--park", action="store_true")
    resume = sub.add_parser("resume")
    resume.add_argument("db", type=Path)
    resume.add_argument("folder", type=Path)
    resume.add_argument("exec_id")
    resume.add_argument("--signal", nargs=2, metavar=("NAME", "JSON"))
    args = parser.parse_args()
    if args.command == "start":
        asyncio.run(_start(args.db, args.folder, args.workflow, args.park))
    else:
        asyncio.run(_resume(args.db, args.exec_id, args.signal))


if __name__ == "__main__":
    main()
