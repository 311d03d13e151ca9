"""A writer process for read-only GUI tests: starts a run per "start" line on stdin.

python tests/gui/workers/writer.py DB
"""

from __future__ import annotations

import sys
from pathlib import Path

from harvest_engine import SqliteRuntime
from tests.gui.helpers import quick, waits_for_go


def main() -> None:
    """Open the file as writer, announce, then start one run per command."""
    rt = SqliteRuntime.open(Path(sys.argv[1]))
    rt.register_workflow(waits_for_go)
    rt.register_workflow(quick)
    print("ready", flush=True)
    for line in sys.stdin:
        command, _, arg = line.strip().partition(" ")
        if command == "start":
            exec_id = rt.start_workflow_with_id("waits_for_go", arg, None)
            print(exec_id, flush=True)
        elif command == "quit":
            break
    rt.close()


if __name__ == "__main__":
    main()
