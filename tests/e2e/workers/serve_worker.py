"""A serving process: open the file, register the flows, serve until SIGTERM or SIGINT.

    serve_worker.py DB [--slow-apply SECONDS]

DB may be a ``postgresql://`` URL: the process then serves it as a
PostgresRuntime worker.

Prints ``serving`` once the file is open and ``stopped`` after a clean stop.
``--slow-apply`` sleeps after each applied client command, so a test can
kill -9 the process with commands half applied.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import serve_flows

from harvest_engine import PostgresRuntime, SqliteRuntime
from harvest_engine.runtime.serving import commands

if TYPE_CHECKING:
    from harvest_engine.runtime.engine import Engine


def slow_down(seconds: float) -> None:
    """Pause after each command commits (test-only: widens the window for a kill)."""
    apply_one = commands.apply_one

    def slowly(
        engine: Engine, command: commands.CommandRecord, *, decide: bool = False
    ) -> None:
        apply_one(engine, command, decide=decide)
        time.sleep(seconds)

    commands.apply_one = slowly  # type: ignore[assignment]


async def main(target: str) -> None:
    """Serve `target` (a file, or a Postgres URL) until a signal asks to stop."""
    with (
        PostgresRuntime.connect(target)
        if target.startswith("postgresql://")
        else SqliteRuntime.open(Path(target))
    ) as rt:
        serve_flows.register(rt)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        print("serving", flush=True)
        await rt.serve(stop)
    print("stopped", flush=True)


if __name__ == "__main__":
    if "--slow-apply" in sys.argv:
        slow_down(float(sys.argv[sys.argv.index("--slow-apply") + 1]))
    asyncio.run(main(sys.argv[1]))
