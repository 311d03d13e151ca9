"""Run det_flows.choreography once on a fresh file and write its history.

    det_run.py DB OUT BALLAST

Writes OUT as JSON: the outcome and every event's `to_json()`. The run's
exec id is pinned (ctx.random and ctx.uuid4 are seeded by it, and a fresh
id is random by design), and the clock is a ManualClock, so nothing in the
history may depend on the process: not the hash seed, not object addresses
(BALLAST objects are allocated first to move them), not thread timing.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from unittest import mock

import det_flows

from harvest_engine import ExecutionId, ManualClock, RunState, SqliteRuntime

PINNED_EXEC_ID = "00000000-0000-4000-8000-00000000d371"


async def run(db: Path) -> dict[str, object]:
    """One run from start to end; the outcome and the history."""
    clock = ManualClock()
    pinned = classmethod(lambda cls: cls(PINNED_EXEC_ID))
    with SqliteRuntime.open(db, clock=clock) as rt:
        det_flows.register(rt)
        with mock.patch.object(ExecutionId, "new", pinned):
            exec_id = rt.start_workflow("choreography", {"order": "ORD-7"})
        state = await det_flows.drive(rt, clock, exec_id)
        assert isinstance(state, RunState.Completed), state
        return {
            "output": state.output,
            "events": [event.to_json() for event in rt.load_history(exec_id)],
        }


def main() -> None:
    """Allocate the ballast, run, write the report."""
    db, out, ballast = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    kept = [object() for _ in range(ballast)]
    report = asyncio.run(run(db))
    # Shows the test that the interpreters really differed in hash seed.
    report["hash_probe"] = hash("harvest")
    out.write_text(json.dumps(report, indent=1, sort_keys=True))
    del kept


if __name__ == "__main__":
    main()
