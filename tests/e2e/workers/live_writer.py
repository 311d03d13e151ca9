"""A writer that commits on command, for readers in another process to watch.

    live_writer.py DB

Reads commands on stdin, one per line, and answers each on stdout:
``start`` starts a run that waits for a signal (answers its exec id),
``finish ID`` signals it and drives it to completion (answers its state),
``quit`` closes the runtime. ``ready`` is printed once the file is open.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from harvest_engine import RunState, SqliteRuntime, WorkflowContext, workflow


@workflow
async def approval(ctx: WorkflowContext, _: Any) -> Any:
    """Wait for the go-ahead."""
    return await ctx.wait_for_signal("approve")


def answer(text: str) -> None:
    """One line to the test."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def main() -> None:
    """Open, announce, serve commands."""
    rt = SqliteRuntime.open(Path(sys.argv[1]))
    rt.register_workflow(approval)
    answer("ready")
    for line in sys.stdin:
        command, _, arg = line.strip().partition(" ")
        if command == "start":
            exec_id = rt.start_workflow("approval", None)
            asyncio.run(rt.run_until_blocked(exec_id))
            answer(str(exec_id))
        elif command == "finish":
            rt.send_signal(arg, "approve", "yes")
            state = asyncio.run(rt.run_until_blocked(arg))
            answer(
                "completed" if isinstance(state, RunState.Completed) else repr(state)
            )
        elif command == "quit":
            break
    rt.close()
    answer("closed")


if __name__ == "__main__":
    main()
