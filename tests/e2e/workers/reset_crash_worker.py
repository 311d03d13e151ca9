"""A writer killed in the middle of `reset_many`: seeds failed runs, or resets them slowly.

    reset_crash_worker.py DB seed N   N runs of `bumpy` parked after a step, then "seeded"
    reset_crash_worker.py DB reset    reset_many over every RUNNING run, printing
                                      "copying" inside each reset's transaction and
                                      sleeping there, so a kill -9 lands mid-move

Prints "reset N" when reset_many returns.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from harvest_engine import (
    ActivityContext,
    ExecutionFilter,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.runtime.repairing import restarts


@activity
async def note(ctx: ActivityContext, n: int) -> int:
    return n


@workflow
async def bumpy(ctx: WorkflowContext, n: int) -> Any:
    await ctx.execute_activity(note, n)
    return await ctx.wait_for_signal("go")


def slow_copies() -> None:
    """Sleep inside each reset's transaction, after the old run's seal and before the copy."""
    copy = restarts._copy

    def slowly(*args: Any, **kwargs: Any) -> None:
        print("copying", flush=True)
        time.sleep(0.15)
        copy(*args, **kwargs)

    restarts._copy = slowly  # type: ignore[assignment]


def main(path: str, mode: str, count: int) -> None:
    """Seed or reset, as the module docstring says."""
    with SqliteRuntime.open(Path(path)) as rt:
        rt.register_workflow(bumpy)
        rt.register_activity(note)
        if mode == "seed":
            for n in range(count):
                rt.start_workflow("bumpy", n)
            asyncio.run(rt.run_until_idle())
            print("seeded", flush=True)
            return
        slow_copies()
        done = rt.reset_many(ExecutionFilter().state("RUNNING"), reason="crash test")
        print(f"reset {done}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0)
