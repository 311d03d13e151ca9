"""Try to open a database once; report whether its writer lock was free.

    lock_probe.py DB

Prints one JSON document. Exits 0 when the open succeeded (the runtime is
closed again at once) and LOCKED_EXIT when it raised DatabaseLocked.
"""

from __future__ import annotations

import json
import sys
import time

from harvest_engine import DatabaseLocked, SqliteRuntime

LOCKED_EXIT = 3


def main() -> None:
    """One open attempt."""
    started = time.monotonic()
    try:
        SqliteRuntime.open(sys.argv[1]).close()
    except DatabaseLocked as exc:
        print(
            json.dumps({"locked": True, "error": str(exc), "lock_path": exc.lock_path})
        )
        sys.exit(LOCKED_EXIT)
    print(json.dumps({"locked": False, "seconds": time.monotonic() - started}))


if __name__ == "__main__":
    main()
