"""The crash demo's worker process: start the demo run on a file and drive it until killed.

Usage: ``python -m harvest_gui.demo.crash_worker DB MARKS SECONDS``
"""

from __future__ import annotations

import asyncio
import sys

from harvest_engine import SqliteRuntime, StartOptions, WorkflowIdReusePolicy
from harvest_gui.demo.crash_workflows import DEMO_WORKFLOW_ID, register


async def drive(rt: SqliteRuntime) -> None:
    """Poll until the run is done (the GUI kills this process long before)."""
    while True:
        progressed = await rt.poll_once()
        if not progressed:
            await asyncio.sleep(0.05)


def main(argv: list[str]) -> int:
    """Open the file as its writer, start the demo order, drive it."""
    db, marks, seconds = argv[0], argv[1], float(argv[2])
    rt = SqliteRuntime.open(db)
    register(rt)
    outcome = rt.start_workflow_with_options(
        "crash_demo_order",
        {"id": "ORD-7", "marks": marks, "seconds": seconds},
        StartOptions(
            workflow_id=DEMO_WORKFLOW_ID,
            reuse_policy=WorkflowIdReusePolicy.ALLOW_DUPLICATE,
        ),
    )
    print(f"started {outcome.exec_id}", flush=True)
    try:
        asyncio.run(drive(rt))
    finally:
        rt.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
