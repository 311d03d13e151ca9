"""A serving process for client-mode GUI tests: `await rt.serve()` until "quit" on stdin.

python tests/gui/workers/server.py DB
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from harvest_engine import SqliteRuntime
from tests.gui.helpers import quick, reporter, waits_for_go


async def main() -> None:
    """Open the file as writer, announce, serve until stdin says quit (or closes)."""
    rt = SqliteRuntime.open(Path(sys.argv[1]))
    rt.register_workflow(waits_for_go)
    rt.register_workflow(quick)
    rt.register_workflow(reporter)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def read_stdin() -> None:
        for line in sys.stdin:
            if line.strip() == "quit":
                break
        loop.call_soon_threadsafe(stop.set)

    loop.run_in_executor(None, read_stdin)
    print("ready", flush=True)
    await rt.serve(stop, poll_interval="10ms")
    rt.close()


if __name__ == "__main__":
    asyncio.run(main())
